import assert from "node:assert/strict";
import type { RetriesConfig } from "../config/types.ts";
import { UpstreamError } from "../upstream/transport.ts";
import { RetryBudget } from "./budget.ts";
import { RetryCounters } from "./counters.ts";
import { retryReason } from "./plan.ts";
import { RetryPolicy } from "./policy.ts";

const BASE: RetriesConfig = {
  attempts: 1,
  retry_on: ["connect", "refused", "reset", "timeout"],
  budget_percent: 100,
  min_retries_per_second: 1000,
  backoff_base_ms: 0,
  backoff_max_ms: 0,
};

/** A policy on a clock the test moves; `budget`/`counters` exposed. */
function policyWith(config: Partial<RetriesConfig>, requestTimeoutMs = 1000) {
  const clock = { now: 0 };
  const budget = new RetryBudget();
  const counters = new RetryCounters();
  const policy = new RetryPolicy({ ...BASE, ...config }, requestTimeoutMs, budget, counters, {
    now: () => clock.now,
    random: () => 0.5,
  });
  return { policy, budget, counters, clock };
}

Deno.test("#30.2: retry reasons: connect, refused (a refused stream), reset (reset or protocol), timeout, statuses", () => {
  assert.equal(retryReason("connect", new UpstreamError("connect", "ECONNREFUSED")), "connect");
  const refused = new UpstreamError("connect", "refused", { refusedStream: true });
  assert.equal(retryReason("connect", refused), "refused");
  assert.equal(retryReason("reset", undefined), "reset");
  assert.equal(retryReason("protocol", undefined), "reset");
  assert.equal(retryReason("timeout", undefined), "timeout");
  assert.equal(retryReason("answered_5xx", 503), "503");
  for (const o of ["invalid_response", "client_gone", "local", "internal", "shutdown"] as const) {
    assert.equal(retryReason(o, undefined), null, o);
  }
});

Deno.test("#30.2: a status is retried only when retry_on names it, and only for an idempotent method", () => {
  const { policy, counters } = policyWith({ retry_on: [503] });
  for (const method of ["GET", "HEAD", "OPTIONS", "PUT", "DELETE"]) {
    assert.equal(policy.start(2, method, true).retry(0, "answered_5xx", 503), 0, method);
  }
  for (const method of ["POST", "PATCH"]) {
    assert.equal(policy.start(2, method, true).retry(0, "answered_5xx", 503), -1, method);
  }
  assert.equal(policy.start(2, "GET", true).retry(0, "answered_5xx", 502), -1, "502 not named");
  assert.equal(
    policy.start(2, "GET", true).retry(0, "connect", undefined),
    -1,
    "connect not named",
  );
  assert.deepEqual(counters.snapshot(["503"]), [["503", 5]]);
});

Deno.test("#30.2: a non-idempotent request is sent again only when the backend provably did not process it", () => {
  const { policy } = policyWith({ retry_on: ["connect", "refused", "reset", "timeout", 503] });
  const post = () => policy.start(2, "POST", true);
  assert.equal(post().retry(0, "connect", undefined), 0);
  assert.equal(
    post().retry(0, "connect", new UpstreamError("connect", "x", { refusedStream: true })),
    0,
  );
  assert.equal(post().retry(0, "reset", undefined), -1);
  assert.equal(post().retry(0, "protocol", undefined), -1);
  assert.equal(post().retry(0, "timeout", undefined), -1);
  assert.equal(post().retry(0, "answered_5xx", 503), -1);
  assert.equal(post().retry(0, "invalid_response", undefined), -1);
  assert.equal(policy.start(2, "GET", true).retry(0, "reset", undefined), 0);
});

Deno.test("#30.2: attempts bounds the retries; a streamed body is never sent again", () => {
  const { policy } = policyWith({ attempts: 3 });
  const plan = policy.start(2, "GET", true);
  assert.deepEqual([0, 1, 2, 3].map((n) => plan.retry(n, "connect", undefined)), [0, 0, 0, -1]);
  assert.deepEqual([0, 1, 2, 3, 4].map((n) => plan.target(n)), [0, 1, 0, 1, 0]);
  const streamed = policy.start(2, "GET", false);
  assert.equal(streamed.retry(0, "connect", undefined), -1);
  assert.equal(streamed.statuses, null);
  assert.equal(policyWith({ attempts: 0 }).policy.start(2, "GET", true).retry(0, "connect", 0), -1);
});

Deno.test("#30.2: per_try_timeout_ms bounds each attempt within the request's deadline; a timeout is retried only with time left", () => {
  const { policy, clock } = policyWith({ per_try_timeout_ms: 300 }, 1000);
  const plan = policy.start(1, "GET", true);
  assert.equal(plan.attemptTimeoutMs(), 300);
  clock.now = 300;
  assert.equal(plan.retry(0, "timeout", undefined), 0, "a per-try timeout, 700 ms left");
  clock.now = 850;
  assert.equal(plan.attemptTimeoutMs(), 150, "the last attempt gets what is left");
  clock.now = 1000;
  assert.equal(plan.retry(1, "timeout", undefined), -1, "the deadline itself");
  // Without per_try_timeout_ms the attempt has the whole deadline, and its timeout is the end.
  const whole = policyWith({ attempts: 3 }, 1000);
  const p = whole.policy.start(1, "GET", true);
  assert.equal(p.attemptTimeoutMs(), 1000);
  whole.clock.now = 1000;
  assert.equal(p.retry(0, "timeout", undefined), -1);
  // A streamed body is sent once, with the transport's own bound.
  assert.equal(policy.start(1, "PUT", false).attemptTimeoutMs(), 1000);
});

Deno.test("#30.2: backoff with full jitter, bounded by the deadline: no wait that would end past it", () => {
  const { policy, clock } = policyWith({ attempts: 5, backoff_base_ms: 100, backoff_max_ms: 400 });
  const plan = policy.start(1, "GET", true);
  // random() is 0.5: half of 100, 200, 400, 400.
  assert.deepEqual([0, 1, 2, 3].map((n) => plan.retry(n, "connect", undefined)), [
    50,
    100,
    200,
    200,
  ]);
  clock.now = 850; // 150 ms left: a 200 ms wait would end past the deadline
  assert.equal(plan.retry(4, "connect", undefined), -1);
});

Deno.test("#30.2: the budget refuses a retry past budget_percent, and the refusal is counted", () => {
  const { policy, budget, counters } = policyWith({
    budget_percent: 20,
    min_retries_per_second: 0,
  });
  const plans = Array.from({ length: 10 }, () => policy.start(1, "GET", true));
  assert.equal(budget.active, 10);
  // 10 requests, 20 %: one retry fits (1 retrying, 9 first: 100 <= 180), a second does not (200 > 160).
  assert.equal(plans[0].retry(0, "connect", undefined), 0);
  assert.equal(plans[1].retry(0, "connect", undefined), -1);
  assert.equal(counters.budgetExhausted, 1);
  assert.deepEqual(counters.snapshot(["connect"]), [["connect", 1]]);
  for (const p of plans) p.finish();
  assert.equal(budget.active, 0);
  assert.equal(budget.retrying, 0, "every request gave its share back");
});
