import assert from "node:assert/strict";
import { CounterSet, ProxyMetrics } from "./metrics.ts";

Deno.test("metrics: a 2xx counts as success, others as failure, per backend too", () => {
  const m = new ProxyMetrics();
  m.record("b1", 200);
  m.record("b1", 502, "error");
  m.record("b2", 503, "timeout");
  m.record(null, 404);
  assert.deepEqual(m.global.snapshot(), {
    requests_total: 4n,
    requests_success: 1n,
    requests_failure: 3n,
    backend_timeouts: 1n,
    backend_errors: 1n,
  });
  assert.equal(m.backend("b1").get("requests_total"), 2n);
  assert.equal(m.backend("b1").get("backend_errors"), 1n);
  assert.equal(m.backend("b2").get("backend_timeouts"), 1n);
});

Deno.test("metrics: counters are u64 (bigint) and only increase", () => {
  const c = new CounterSet();
  for (let i = 0; i < 1000; i++) c.inc("requests_total");
  assert.equal(typeof c.get("requests_total"), "bigint");
  assert.equal(c.get("requests_total"), 1000n);
});

Deno.test("#32.3: counters count exactly up to 2^53 and never decrease past it", () => {
  // docs/operations.md promises exact integers up to 2^53. Fails if the slots lose precision below
  // 2^53 (mutant: Float32Array, exact only to 2^24) or wrap (mutant: Uint32Array).
  const top = 2 ** 53;
  const c = new CounterSet(top - 1000);
  let expected = BigInt(top - 1000);
  assert.equal(c.get("requests_total"), expected);
  for (let i = 0; i < 1000; i++) {
    c.inc("requests_total");
    c.incStatus(200);
    expected++;
    assert.equal(c.get("requests_total"), expected, `increment ${i + 1}`);
  }
  assert.equal(c.get("requests_total"), 2n ** 53n);
  assert.equal(c.getClass("2xx"), 2n ** 53n);
  assert.equal(c.snapshot().requests_total, 2n ** 53n);
  assert.equal(c.get("requests_success"), BigInt(top - 1000), "the other counters did not move");
  // Past 2^53 a float64 slot can no longer add one: the counter stays put; it never goes down.
  for (let i = 0; i < 10; i++) {
    c.inc("requests_total");
    assert.ok(c.get("requests_total") >= 2n ** 53n);
  }
  for (const bad of [-1, 0.5, top + 2, NaN]) {
    assert.throws(() => new CounterSet(bad), RangeError, String(bad));
  }
});

Deno.test("#29.2: a WebSocket switched on the TCP fallback (101) counts as a success", () => {
  const m = new ProxyMetrics();
  m.record("b", 101);
  assert.equal(m.global.get("requests_success"), 1n);
  assert.equal(m.global.get("requests_failure"), 0n);
});
