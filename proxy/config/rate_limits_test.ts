/**
 * #30.1: `rate_limits` and a pool's `rate_limit`: each problem named with
 * its key path and line, the accepted form defaulted.
 */
import assert from "node:assert/strict";
import { config, POOL_API_HEAD, problems } from "./_test_util.ts";

/** A valid configuration; `limit` is the one `rate_limits` entry (line 12), `pool` the pool's `rate_limit` (line 8). */
function withLimit(limit: string, pool = "per-client"): string {
  return [
    ...POOL_API_HEAD, // 1-7
    `    rate_limit: ${pool}`, // 8
    "    backends:", // 9
    "      - id: a", // 10
    "rate_limits:", // 11
    `  - ${limit}`, // 12
    "",
  ].join("\n").replace("      - id: a", "      - {id: a, address: 127.0.0.1:8081}");
}

const GOOD = "{name: per-client, requests_per_second: 10, burst: 20, key: client}";

Deno.test("#30.1: rate_limits: a valid limit, defaults applied", () => {
  const parsed = config(withLimit(GOOD));
  assert.deepEqual(parsed.rate_limits, [{
    name: "per-client",
    requests_per_second: 10,
    burst: 20,
    key: "client",
    response_headers: false,
    max_keys: 100_000,
  }]);
  assert.equal(parsed.upstream.api.rate_limit, "per-client");
  const header = config(
    withLimit("{name: per-client, requests_per_second: 0.5, burst: 1, key: header:X-Api-Key}"),
  );
  assert.equal(header.rate_limits[0].key, "header:x-api-key");
});

Deno.test("#30.1: rate_limits: a pool naming an unknown limit is refused with its key and line", () => {
  const found = problems(withLimit(GOOD, "per-token"));
  assert.deepEqual(found.map((p) => [p.path, p.line]), [["upstream.api.rate_limit", 8]]);
  assert.match(
    found[0].message,
    /names no entry of rate_limits \("per-token"; known: per-client\)/,
  );
});

/** [what, the limit, the problem's path, a message part]. */
const REFUSED: Array<[string, string, string, RegExp]> = [
  [
    "a zero rate",
    "{name: per-client, requests_per_second: 0, burst: 1, key: client}",
    "rate_limits[0].requests_per_second",
    /must be a number > 0/,
  ],
  [
    "a fractional burst",
    "{name: per-client, requests_per_second: 1, burst: 1.5, key: client}",
    "rate_limits[0].burst",
    /must be an integer from 1/,
  ],
  [
    "an unknown key",
    "{name: per-client, requests_per_second: 1, burst: 1, key: cookie}",
    "rate_limits[0].key",
    /must be client, bearer, route or header:<name>/,
  ],
  [
    "a header key without a valid name",
    "{name: per-client, requests_per_second: 1, burst: 1, key: 'header:x y'}",
    "rate_limits[0].key",
    /./,
  ],
  [
    "a name that is not a token",
    "{name: 'per client', requests_per_second: 1, burst: 1, key: client}",
    "rate_limits[0].name",
    /letters, digits/,
  ],
  [
    "a zero key cap",
    "{name: per-client, requests_per_second: 1, burst: 1, key: client, max_keys: 0}",
    "rate_limits[0].max_keys",
    /must be an integer from 1/,
  ],
  [
    "an unknown field",
    "{name: per-client, requests_per_second: 1, burst: 1, key: client, window: 5}",
    "rate_limits[0].window",
    /unknown key/,
  ],
];

for (const [what, limit, path, message] of REFUSED) {
  Deno.test(`#30.1: rate_limits refuse ${what}, named with its key and line`, () => {
    const found = problems(withLimit(limit)).filter((p) => p.path !== "upstream.api.rate_limit");
    assert.equal(found.length, 1, JSON.stringify(found));
    assert.equal(found[0].path, path);
    assert.equal(found[0].line, 12);
    assert.match(found[0].message, message);
  });
}

Deno.test("#30.1: rate_limits: a duplicate name is refused with its key and line", () => {
  const text = withLimit(GOOD) + `  - ${GOOD}\n`;
  const found = problems(text);
  assert.deepEqual(found.map((p) => [p.path, p.line]), [["rate_limits[1].name", 13]]);
  assert.match(found[0].message, /duplicate rate limit name "per-client"/);
});
