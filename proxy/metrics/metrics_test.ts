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
