import assert from "node:assert/strict";
import { createAccessLog, FLUSH_MS } from "./access_log.ts";
import type { RequestRecord } from "./server/types.ts";

const record = (over: Partial<RequestRecord> = {}): RequestRecord => ({
  listener: "h3",
  streamId: 8,
  remote: { hostname: "192.0.2.7", port: 51234 },
  method: "GET",
  authority: "example.com",
  path: "/api/x",
  status: 200,
  bytes: 1234,
  durationMs: 12.34,
  backend: "api-1",
  upstreamMs: 10.05,
  outcome: "complete",
  ...over,
});

// 2026-11-24 10:40:00 UTC, as the rest of the log prints it.
const NOW = Date.UTC(2026, 10, 24, 10, 40, 0, 123);

Deno.test("access log: one text line per request with every field; batched into one write", async () => {
  const writes: string[] = [];
  const access = createAccessLog({ format: "text", write: (t) => writes.push(t), now: () => NOW });
  access.log(record());
  access.log(record({ streamId: 12, status: 502, backend: undefined, upstreamMs: undefined }));
  assert.equal(writes.length, 0, "nothing written before the flush");
  await new Promise((r) => setTimeout(r, FLUSH_MS + 30));
  assert.equal(writes.length, 1, "one write for the batch");
  assert.deepEqual(writes[0].split("\n"), [
    '[2026-11-24 10:40:00] [INFO] [proxy::access] 192.0.2.7:51234 "GET example.com /api/x" 200 1234 12.3ms upstream=10.1ms backend=api-1 stream=8',
    '[2026-11-24 10:40:00] [INFO] [proxy::access] 192.0.2.7:51234 "GET example.com /api/x" 502 1234 12.3ms stream=12',
    "",
  ]);
  access.close();
});

Deno.test("access log: secrets in the path and query are redacted by the shared rules; JSON lines parse", () => {
  const writes: string[] = [];
  const access = createAccessLog({ format: "json", write: (t) => writes.push(t), now: () => NOW });
  access.log(record({
    path: "/payments/tokens/tok_abcdefgh12345678?access_token=s3cr3t",
    outcome: "broken",
  }));
  access.close();
  const line = JSON.parse(writes[0]);
  assert.equal(line.path.includes("tok_abcdefgh12345678"), false);
  assert.equal(line.path.includes("s3cr3t"), false);
  assert.equal(line.status, 200);
  assert.equal(line.stream_id, 8);
  assert.equal(line.backend, "api-1");
  assert.equal(line.outcome, "broken");
  assert.equal(line.client, "192.0.2.7:51234");
});

Deno.test("access log: a TCP-fallback line says listener=tcp; close flushes once and calls onClose once", () => {
  const writes: string[] = [];
  let closes = 0;
  const access = createAccessLog({
    format: "text",
    write: (t) => writes.push(t),
    now: () => NOW,
    onClose: () => closes++,
  });
  access.log(
    record({ listener: "tcp", streamId: 0, method: "-", path: "-", authority: undefined }),
  );
  access.close();
  access.close();
  assert.equal(closes, 1);
  assert.deepEqual(writes, [
    '[2026-11-24 10:40:00] [INFO] [proxy::access] 192.0.2.7:51234 "- - -" 200 1234 12.3ms upstream=10.1ms backend=api-1 listener=tcp\n',
  ]);
});
