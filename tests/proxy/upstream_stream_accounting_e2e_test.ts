/**
 * Issue #25 item 3, end to end through the real proxy with its own HTTP/2
 * client: a backend allowing 4 concurrent streams that never answers; 40
 * requests time out (503). The proxy opens at most 4 streams per session
 * (8 sessions, so 32); no stream reaches the backend once the requests have
 * been answered (queued ones never open later); every opened stream is reset when its request times out (the
 * backend's count returns to 0); and a later request is served.
 *
 * @module
 */

import assert from "node:assert/strict";
import http2 from "node:http2";
import { getHead } from "../support/faults.ts";
import { H3TestClient } from "../support/h3_client.ts";
import { startProxy, testCerts } from "../support/proxy_process.ts";
import { sleep } from "../support/wait.ts";

Deno.test({
  name:
    "e2e #25.3: queued requests that time out never open; opened ones are reset; slots come back",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const server = http2.createServer({ settings: { maxConcurrentStreams: 4 } });
    let active = 0;
    let total = 0;
    let max = 0;
    let lastArrival = 0;
    let answer = false;
    const sessions: http2.ServerHttp2Session[] = [];
    server.on("session", (s: http2.ServerHttp2Session) => {
      sessions.push(s);
      s.on("error", () => {});
    });
    server.on("stream", (s: http2.ServerHttp2Stream) => {
      total++;
      active++;
      lastArrival = performance.now();
      max = Math.max(max, active);
      s.on("error", () => {});
      s.once("close", () => active--);
      if (answer) {
        s.respond({ ":status": 200, "content-length": 2 });
        s.end("ok");
      }
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    const port = (server.address() as { port: number }).port;
    const proxy = await startProxy(`version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tls: {cert: "{{cert}}", key: "{{key}}"}}
passive_health: {enabled: false}
upstream:
  slow:
    route: {path_prefix: /}
    request_timeout_ms: 1500
    backends: [{id: slow, address: "127.0.0.1:${port}"}]
`);
    const ca = await Deno.readTextFile((await testCerts()).caPath);
    const client = await H3TestClient.connect(proxy.port, ca);
    try {
      const all = await Promise.all(
        Array.from(
          { length: 40 },
          (_, i) => client.request({ head: getHead(`/stall/${i}`, proxy.port) }),
        ),
      );
      assert.deepEqual(all.map((r) => r.status), Array(40).fill(503));
      const answered = performance.now();
      // Let late opens (the bug) show, and resets arrive.
      await sleep(1500);
      assert.equal(max, 32, "at most 4 streams on each of 8 sessions");
      assert.ok(total >= 32 && total <= 40, `${total} streams`);
      assert.ok(lastArrival <= answered, "no stream opened after its request was answered");
      assert.equal(active, 0, "every opened stream was reset");
      answer = true;
      const later = await client.request({ head: getHead("/after", proxy.port) });
      assert.equal(later.status, 200);
    } finally {
      await client.close();
      await proxy.stop();
      for (const s of sessions) if (!s.destroyed) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    }
  },
});
