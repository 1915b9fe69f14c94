/**
 * `limits.upstream_workers` (issue #14.3) with a real proxy process: the log
 * line says where the HTTP/2 exchanges run, and the same requests behave the
 * same in process (`0`) and on worker threads (`2`): small and streamed
 * bodies both ways, retry on the next backend after a connect failure, the
 * per-pool timeout, and a clean stop.
 */
import assert from "node:assert/strict";
import { startBackend } from "../support/backend.ts";
import { H3TestClient } from "../support/h3_client.ts";
import { startProxy, testCerts } from "../support/proxy_process.ts";
import { faultConfig } from "../faults/_support.ts";

const ca = async () => await Deno.readTextFile((await testCerts()).caPath);

async function sha256(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const d = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return [...d].map((b) => b.toString(16).padStart(2, "0")).join("");
}

for (
  const [workers, line] of [
    [0, "on the QUIC thread (limits.upstream_workers: 0)"],
    [2, "on 2 worker threads"],
  ] as const
) {
  Deno.test(`upstream_workers: ${workers}: announced, and requests behave the same`, async () => {
    const live = startBackend("live", async (req) => {
      const path = new URL(req.url).pathname;
      if (path === "/slow") await new Promise((r) => setTimeout(r, 3000));
      if (path === "/echo") {
        const body = new Uint8Array(await req.arrayBuffer());
        return new Response(body, { headers: { "x-sha": await sha256(body) } });
      }
      return new Response(`live ${req.method} ${path}`);
    });
    // A port nothing listens on: every exchange to it is a connect failure.
    const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const dead = `127.0.0.1:${probe.addr.port}`;
    probe.close();
    const proxy = await startProxy(faultConfig([dead, live.address], {
      requestTimeoutMs: 700,
      extra: `limits: {upstream_workers: ${workers}}`,
    }));
    const c = await H3TestClient.connect(proxy.port, await ca());
    const head = (method: string, path: string, extra: Array<[string, string]> = []) =>
      [
        [":method", method],
        [":scheme", "https"],
        [":authority", `localhost:${proxy.port}`],
        [":path", path],
        ...extra,
      ] as Array<[string, string]>;
    try {
      assert.ok(
        proxy.stderr.some((l) => l.includes(`upstream HTTP/2 exchanges: ${line}`)),
        proxy.stderr.join("\n"),
      );
      // Round-robin over [dead, live]: whichever comes first, every GET is
      // answered by the live backend (a connect failure moves on).
      for (let i = 0; i < 4; i++) {
        const r = await c.request({ head: head("GET", `/g${i}`) });
        assert.equal(r.status, 200);
        assert.equal(new TextDecoder().decode(r.body), `live GET /g${i}`);
      }
      // A small body (read whole) and a large one (streamed), echoed intact.
      // A streamed body is not retried (it may meet the dead backend first,
      // 502): two tries, one of which round-robin gives the live backend.
      for (const size of [1000, 3 << 20]) {
        const big = new Uint8Array(size);
        for (let off = 0; off < size; off += 65536) {
          crypto.getRandomValues(big.subarray(off, Math.min(size, off + 65536)));
        }
        const statuses: number[] = [];
        for (let attempt = 0; attempt < 2 && !statuses.includes(200); attempt++) {
          const r = await c.request({
            head: head("POST", "/echo", [["content-length", String(size)]]),
            body: big,
          });
          statuses.push(r.status);
          if (r.status !== 200) continue;
          assert.equal(r.body.length, size);
          assert.equal(r.headers.find(([n]) => n === "x-sha")?.[1], await sha256(big));
        }
        assert.ok(statuses.includes(200), `size ${size}: ${statuses}`);
        assert.ok(statuses.every((s) => s === 200 || s === 502), `size ${size}: ${statuses}`);
      }
      // The pool's request_timeout_ms holds on this path too.
      const t0 = performance.now();
      const slow = await c.request({ head: head("GET", "/slow") });
      assert.equal(slow.status, 503);
      assert.ok(performance.now() - t0 < 2800, "the 700 ms timeout, not the backend's 3 s");
    } finally {
      await c.close();
      assert.equal(await proxy.stop(), 0);
      await live.close();
    }
  });
}
