/**
 * Fault test (issue #8): a client asks for a 1 GiB response and never reads
 * it. Flow control must push back from the QUIC stream through the proxy to
 * the HTTP/2 backend: the proxy's memory stays bounded, the backend is asked
 * for only a bounded amount, and other clients are still served.
 */
// deno-lint-ignore-file no-console
import assert from "node:assert/strict";
import { encodeFrame, FrameType } from "../../proxy/h3/mod.ts";
import { startBackend } from "../support/backend.ts";
import { H3TestClient } from "../support/h3_client.ts";
import { startProxy, testCerts } from "../support/proxy_process.ts";
import { faultConfig, getHead, mib, rssBytes } from "../support/faults.ts";
import { sleep } from "../support/wait.ts";

const ONE_GIB = 1 << 30;
const CHUNK = 64 * 1024;
const MAX_GROWTH = 64 * 1024 * 1024;

Deno.test("faults: a client that never reads a 1 GiB response does not make the proxy buffer it", async () => {
  let produced = 0;
  let cancelled = false;
  const chunk = new Uint8Array(CHUNK).fill(97);
  // The backend produces on demand (pull), so `produced` shows how much the
  // proxy actually asked for.
  const be = startBackend("b", (req) => {
    if (!new URL(req.url).pathname.startsWith("/huge")) return new Response("ok");
    return new Response(
      new ReadableStream<Uint8Array>({
        pull(controller) {
          if (produced >= ONE_GIB) return controller.close();
          produced += CHUNK;
          controller.enqueue(chunk);
        },
        cancel() {
          cancelled = true;
        },
      }, { highWaterMark: 0 }),
      { headers: { "content-length": String(ONE_GIB) } },
    );
  });
  const proxy = await startProxy(faultConfig([be.address], { requestTimeoutMs: 60_000 }));
  const ca = await Deno.readTextFile((await testCerts()).caPath);
  const lazy = await H3TestClient.connect(proxy.port, ca);
  const other = await H3TestClient.connect(proxy.port, ca);
  try {
    // Warm up the proxy's code paths first so the baseline is fair.
    for (let i = 0; i < 20; i++) {
      assert.equal((await other.request({ head: getHead("/warm", proxy.port) })).status, 200);
    }
    const before = await rssBytes(proxy.pid);

    const stream = await lazy.conn.createBidirectionalStream();
    const writer = stream.writable.getWriter();
    await writer.write(
      encodeFrame(FrameType.HEADERS, lazy.encodeFields(getHead("/huge", proxy.port))),
    );
    await writer.close();
    // Never read `stream.readable`.

    let peak = before;
    const samples: string[] = [];
    for (let i = 0; i < 10; i++) {
      await sleep(500);
      const rss = await rssBytes(proxy.pid);
      peak = Math.max(peak, rss);
      samples.push(`${mib(rss)}/${mib(produced)}`);
      // Other clients are served meanwhile.
      const r = await other.request({ head: getHead("/other", proxy.port) });
      assert.equal(r.status, 200);
    }
    const producedWhileStalled = produced;
    console.log(
      `slow reader: proxy RSS before ${mib(before)}, peak ${mib(peak)}; backend produced ${
        mib(producedWhileStalled)
      }; samples (rss/produced): ${samples.join(" ")}`,
    );
    assert.ok(produced > 0, "the response started");
    assert.ok(
      producedWhileStalled < MAX_GROWTH,
      `the proxy pulled ${
        mib(producedWhileStalled)
      } from the backend for a client that reads nothing`,
    );
    assert.ok(
      peak - before < MAX_GROWTH,
      `RSS grew by ${mib(peak - before)} (before ${mib(before)}, peak ${mib(peak)})`,
    );

    // Once the client goes away, the proxy releases the upstream response.
    await lazy.close();
    const deadline = Date.now() + 10_000;
    while (!cancelled && Date.now() < deadline) await sleep(50);
    assert.ok(cancelled, "the backend body is cancelled after the client disconnects");
    assert.ok(produced < MAX_GROWTH, `produced ${mib(produced)} in total`);
  } finally {
    await lazy.close();
    await other.close();
    assert.equal(await proxy.stop(), 0);
    await be.close();
  }
});
