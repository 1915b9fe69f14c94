import assert from "node:assert/strict";
import { HealthState } from "./health_state.ts";

const opts = { failure_threshold: 3, success_threshold: 2, cooldown_ms: 5000 };

function unhealthyAt(t: number): HealthState {
  const s = new HealthState(opts);
  s.recordFailure(t - 2, "x");
  s.recordFailure(t - 1, "x");
  assert.ok(s.recordFailure(t, "x"));
  return s;
}

Deno.test("health state: initial state is healthy", () => {
  const s = new HealthState(opts);
  assert.equal(s.status, "healthy");
  assert.equal(s.unhealthySince, null);
});

Deno.test("health state: defaults are the spec's (3 failures, 2 successes, 5000 ms)", () => {
  const s = new HealthState();
  assert.equal(s.recordFailure(0), null);
  assert.equal(s.recordFailure(1), null);
  assert.deepEqual(s.recordFailure(2), { from: "healthy", to: "unhealthy", at: 2 });
  assert.equal(s.recordSuccess(5001), null);
  assert.equal(s.recordSuccess(5002), null, "first success after the cooldown");
  assert.deepEqual(s.recordSuccess(5003), { from: "unhealthy", to: "healthy", at: 5003 });
});

Deno.test("health state: healthy + success stays healthy and resets the failure count", () => {
  const s = new HealthState(opts);
  s.recordFailure(0, "a");
  s.recordFailure(1, "a");
  assert.equal(s.consecutiveFailures, 2);
  assert.equal(s.recordSuccess(2), null);
  assert.equal(s.consecutiveFailures, 0);
  s.recordFailure(3, "a");
  s.recordFailure(4, "a");
  assert.equal(s.status, "healthy", "failures must be consecutive");
});

Deno.test("health state: healthy + failure_threshold consecutive failures -> unhealthy", () => {
  const s = new HealthState(opts);
  assert.equal(s.recordFailure(100, "status 503"), null);
  assert.equal(s.recordFailure(200, "status 503"), null);
  assert.deepEqual(s.recordFailure(300, "timeout after 1000 ms"), {
    from: "healthy",
    to: "unhealthy",
    at: 300,
    reason: "timeout after 1000 ms",
  });
  assert.equal(s.status, "unhealthy");
  assert.equal(s.unhealthySince, 300);
});

Deno.test("health state: unhealthy + failures stay unhealthy (no new transition)", () => {
  const s = unhealthyAt(1000);
  for (let t = 1001; t < 20_000; t += 1000) assert.equal(s.recordFailure(t, "x"), null);
  assert.equal(s.status, "unhealthy");
  assert.equal(s.unhealthySince, 1000, "failures do not restart the cooldown");
});

Deno.test("health state: successes during the cooldown do not count toward recovery", () => {
  const s = unhealthyAt(1000);
  for (let t = 1000; t < 6000; t += 100) {
    assert.equal(s.recordSuccess(t), null);
    assert.equal(s.consecutiveSuccesses, 0);
    assert.ok(s.inCooldown(t));
  }
  assert.equal(s.status, "unhealthy");
  // Cooldown over at exactly 1000 + 5000: two successes are needed from here.
  assert.equal(s.inCooldown(6000), false);
  assert.equal(s.recordSuccess(6000), null);
  assert.equal(s.consecutiveSuccesses, 1);
  assert.deepEqual(s.recordSuccess(6100), { from: "unhealthy", to: "healthy", at: 6100 });
  assert.equal(s.status, "healthy");
  assert.equal(s.unhealthySince, null);
});

Deno.test("health state: unhealthy + success_threshold successes after the cooldown -> healthy", () => {
  const s = unhealthyAt(0);
  assert.equal(s.recordSuccess(7000), null);
  assert.deepEqual(s.recordSuccess(8000), { from: "unhealthy", to: "healthy", at: 8000 });
});

Deno.test("health state: a failure after the cooldown resets the success count", () => {
  const s = unhealthyAt(0);
  assert.equal(s.recordSuccess(6000), null);
  assert.equal(s.recordFailure(6100, "status 500"), null);
  assert.equal(s.consecutiveSuccesses, 0);
  assert.equal(s.recordSuccess(6200), null, "counting starts again");
  assert.deepEqual(s.recordSuccess(6300), { from: "unhealthy", to: "healthy", at: 6300 });
});

Deno.test("health state: after recovering, it takes failure_threshold failures again", () => {
  const s = unhealthyAt(0);
  s.recordSuccess(6000);
  s.recordSuccess(6001);
  assert.equal(s.recordFailure(6002, "x"), null);
  assert.equal(s.recordFailure(6003, "x"), null);
  assert.deepEqual(s.recordFailure(6004, "x"), {
    from: "healthy",
    to: "unhealthy",
    at: 6004,
    reason: "x",
  });
  assert.equal(s.unhealthySince, 6004, "a new cooldown starts");
  assert.equal(s.recordSuccess(11_003), null);
  assert.equal(s.recordSuccess(11_003.5), null, "still inside the new cooldown");
});

Deno.test("health state: thresholds of 1 and a zero cooldown", () => {
  const s = new HealthState({ failure_threshold: 1, success_threshold: 1, cooldown_ms: 0 });
  assert.deepEqual(s.recordFailure(5, "r"), {
    from: "healthy",
    to: "unhealthy",
    at: 5,
    reason: "r",
  });
  assert.deepEqual(s.recordSuccess(5), { from: "unhealthy", to: "healthy", at: 5 });
});

Deno.test("health state: a clock going backwards only prolongs the cooldown", () => {
  const s = unhealthyAt(10_000);
  assert.equal(s.recordSuccess(9000), null);
  assert.equal(s.recordSuccess(9500), null);
  assert.equal(s.status, "unhealthy");
});

Deno.test("health state: invalid thresholds are rejected", () => {
  assert.throws(() => new HealthState({ failure_threshold: 0 }), RangeError);
  assert.throws(() => new HealthState({ success_threshold: 1.5 }), RangeError);
  assert.throws(() => new HealthState({ cooldown_ms: -1 }), RangeError);
  assert.throws(() => new HealthState({ cooldown_ms: NaN }), RangeError);
});
