import assert from "node:assert/strict";
import { createAccessLog } from "./access_log.ts";
import { ProxyMetrics } from "./metrics/metrics.ts";
import { createRequestSink } from "./request_log.ts";
import type { RequestRecord } from "./server/types.ts";

const record = (over: Partial<RequestRecord> = {}): RequestRecord => ({
  listener: "h3",
  streamId: 0,
  remote: { hostname: "192.0.2.7", port: 1 },
  method: "GET",
  authority: "example.com",
  path: "/",
  status: 200,
  bytes: 0,
  durationMs: 1,
  outcome: "complete",
  ...over,
});

Deno.test("request sink: each record is counted once and logged once, with the same status", () => {
  const metrics = new ProxyMetrics();
  const lines: string[] = [];
  const sink = createRequestSink(
    metrics,
    createAccessLog({ format: "json", write: (t) => lines.push(...t.trim().split("\n")) }),
  );
  sink.finished(record({ backend: "b1" }));
  sink.finished(record({ listener: "tcp", status: 413 })); // the server layer's own answer
  sink.finished(record({ method: "-", path: "-", status: 400 })); // head not decoded
  sink.finished(record({ backend: "b1", status: 503, failure: "timeout" }));
  sink.finished(record({ backend: "b1", status: 502, failure: "client_gone", outcome: "aborted" }));
  sink.close();
  assert.equal(lines.length, 5);
  assert.equal(metrics.global.get("requests_total"), 5n);
  assert.deepEqual(lines.map((l) => JSON.parse(l).status), [200, 413, 400, 503, 499]);
  assert.equal(metrics.global.get("backend_timeouts"), 1n);
  assert.equal(
    metrics.global.get("backend_errors"),
    0n,
    "a client that left is not the backend's error",
  );
  assert.equal(metrics.backend("b1").get("requests_total"), 3n);
  assert.equal(metrics.global.getClass("4xx"), 3n);
});

Deno.test("request sink: setAccessLog swaps the destination and closes the old one; undefined turns it off", () => {
  const metrics = new ProxyMetrics();
  const a: string[] = [];
  const b: string[] = [];
  let aClosed = false;
  const sink = createRequestSink(
    metrics,
    createAccessLog({ format: "text", write: (t) => a.push(t), onClose: () => aClosed = true }),
  );
  sink.finished(record());
  sink.setAccessLog(createAccessLog({ format: "json", write: (t) => b.push(t) }));
  assert.equal(aClosed, true);
  sink.finished(record());
  sink.setAccessLog(undefined);
  sink.finished(record());
  sink.close();
  assert.equal(a.join("").split("\n").filter(Boolean).length, 1);
  assert.equal(b.join("").split("\n").filter(Boolean).length, 1);
  assert.equal(metrics.global.get("requests_total"), 3n, "counted whether logged or not");
});
