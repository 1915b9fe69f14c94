/**
 * #30.2, #30.3: a pool's `retries`, `max_pending`, a backend's
 * `max_inflight` and the load-aware balancers: each problem named with its
 * key path and line, the accepted form defaulted.
 */
import assert from "node:assert/strict";
import { config, POOL_API_HEAD, problems } from "./_test_util.ts";

/** A valid configuration with `pool` lines (from line 8) and the backend `backend` (the last line). */
function withPool(pool: string[], backend = "{id: a, address: 127.0.0.1:8081}"): string {
  return [
    ...POOL_API_HEAD, // 1-7
    ...pool, // 8…
    "    backends:",
    `      - ${backend}`,
    "",
  ].join("\n");
}

Deno.test("#30.2: retries: defaults as documented; absent, the pool keeps the default rule", () => {
  const parsed = config(withPool(["    retries: {}"]));
  assert.deepEqual(parsed.upstream.api.retries, {
    attempts: 1,
    retry_on: ["connect", "refused", "reset", "timeout"],
    budget_percent: 20,
    min_retries_per_second: 3,
    backoff_base_ms: 25,
    backoff_max_ms: 250,
  });
  assert.equal(parsed.upstream.api.max_pending, 0);
  const none = config(withPool([]));
  assert.equal(none.upstream.api.retries, undefined);
  assert.equal(none.upstream.api.backends[0].max_inflight, undefined);
});

Deno.test("#30.2: retries: a full policy, statuses as numbers", () => {
  const parsed = config(withPool([
    "    request_timeout_ms: 2000",
    "    retries:",
    "      attempts: 3",
    "      per_try_timeout_ms: 500",
    "      retry_on: [connect, refused, 503, 429]",
    "      budget_percent: 10.5",
    "      min_retries_per_second: 0",
    "      backoff_base_ms: 10",
    "      backoff_max_ms: 100",
    "    max_pending: 50",
  ], "{id: a, address: 127.0.0.1:8081, max_inflight: 200}"));
  const u = parsed.upstream.api;
  assert.deepEqual(u.retries?.retry_on, ["connect", "refused", 503, 429]);
  assert.equal(u.retries?.per_try_timeout_ms, 500);
  assert.equal(u.retries?.budget_percent, 10.5);
  assert.equal(u.max_pending, 50);
  assert.equal(u.backends[0].max_inflight, 200);
});

/** [what, pool lines from 8, backend, the problem's path, its line, a message part]. */
const REFUSED: Array<[string, string[], string | undefined, string, number, RegExp]> = [
  [
    "an unknown retry_on reason",
    ["    retries:", "      retry_on: [connect, 5xx]"],
    undefined,
    "upstream.api.retries.retry_on[1]",
    9,
    /must be connect, refused, reset, timeout or a backend status from 400 to 599/,
  ],
  [
    "a status outside 400-599",
    ["    retries:", "      retry_on: [200]"],
    undefined,
    "upstream.api.retries.retry_on[0]",
    9,
    /must be a status from 400 to 599/,
  ],
  [
    "a repeated reason",
    ["    retries:", "      retry_on: [503, connect, 503]"],
    undefined,
    "upstream.api.retries.retry_on[2]",
    9,
    /repeats 503/,
  ],
  [
    "an empty retry_on",
    ["    retries:", "      retry_on: []"],
    undefined,
    "upstream.api.retries.retry_on",
    9,
    /at least one reason/,
  ],
  [
    "too many attempts",
    ["    retries:", "      attempts: 11"],
    undefined,
    "upstream.api.retries.attempts",
    9,
    /from 0 to 10/,
  ],
  [
    "a budget over 100 %",
    ["    retries:", "      budget_percent: 150"],
    undefined,
    "upstream.api.retries.budget_percent",
    9,
    /from 0 to 100/,
  ],
  [
    "a backoff cap below its base",
    ["    retries:", "      backoff_base_ms: 100", "      backoff_max_ms: 50"],
    undefined,
    "upstream.api.retries.backoff_max_ms",
    10,
    /at least backoff_base_ms \(100\)/,
  ],
  [
    "a per-try timeout past the request's",
    ["    request_timeout_ms: 1000", "    retries:", "      per_try_timeout_ms: 1500"],
    undefined,
    "upstream.api.retries.per_try_timeout_ms",
    10,
    /must not exceed request_timeout_ms \(1000\)/,
  ],
  [
    "an unknown key",
    ["    retries:", "      attempt: 2"],
    undefined,
    "upstream.api.retries.attempt",
    9,
    /attempts/,
  ],
  [
    "max_pending with no max_inflight anywhere",
    ["    max_pending: 10"],
    undefined,
    "upstream.api.max_pending",
    8,
    /no backend of the pool sets max_inflight/,
  ],
  [
    "a zero max_inflight",
    [],
    "{id: a, address: 127.0.0.1:8081, max_inflight: 0}",
    "upstream.api.backends[0].max_inflight",
    9,
    /from 1 to 1000000/,
  ],
  [
    "an unknown balancer",
    ["    load_balancing: {type: least-connections}"],
    undefined,
    "upstream.api.load_balancing.type",
    8,
    /must be one of random, round-robin, consistent-hash, least-request, latency/,
  ],
  [
    "a hash key on least-request",
    ["    load_balancing: {type: least-request, key: path}"],
    undefined,
    "upstream.api.load_balancing.key",
    8,
    /only used with type consistent-hash/,
  ],
];

for (const [what, pool, backend, path, line, message] of REFUSED) {
  Deno.test(`#30.2: retries and limits: ${what} is refused with its key path and line`, () => {
    const found = problems(withPool(pool, backend));
    const problem = found.find((p) => p.path === path);
    assert.ok(problem, `${path} in ${JSON.stringify(found)}`);
    assert.equal(problem.line, line, JSON.stringify(problem));
    assert.match(problem.message, message);
  });
}

Deno.test("#30.3: load_balancing least-request and latency are accepted, per pool and globally", () => {
  const parsed = config(
    withPool(["    load_balancing: {type: latency}"]) + "load_balancing: {type: least-request}\n",
  );
  assert.deepEqual(parsed.upstream.api.load_balancing, { type: "latency" });
  assert.deepEqual(parsed.load_balancing, { type: "least-request" });
});
