/**
 * Fault test (issue #25 item 5): a client that cancels its requests
 * (STOP_SENDING) before the response head must not leave their backend
 * streams open. A backend that never answers counts the
 * streams it was sent and the ones the proxy reset; the proxy's
 * `spooky_active_streams` gauge must come back to 0 while the client's
 * connection stays open.
 */
// deno-lint-ignore-file no-console
import assert from "node:assert/strict";
import { encodeFrame, FrameType } from "../../proxy/h3/mod.ts";
import { H3TestClient } from "../support/h3_client.ts";
import { startProxy, testCerts } from "../support/proxy_process.ts";
import { faultConfig, getHead } from "../support/faults.ts";
import { msUntil } from "../support/wait.ts";
import { scrapeMetrics } from "../support/metrics.ts";

const N = 50;

/**
 * An h2c backend (`Deno.serve`) that never answers `/hang` and counts those
 * requests: opened, still open, and ended by the proxy (the stream reset,
 * which aborts the request's signal).
 */
function hangingBackend() {
  const counts = { opened: 0, reset: 0, open: 0 };
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    if (!new URL(req.url).pathname.startsWith("/hang")) return new Response("ok");
    counts.opened++;
    counts.open++;
    await new Promise((resolve) => req.signal.addEventListener("abort", resolve, { once: true }));
    counts.open--;
    counts.reset++;
    return new Response(null, { status: 499 });
  });
  return { counts, port: server.addr.port, close: () => server.shutdown() };
}

async function activeStreams(adminPort: number): Promise<number> {
  const text = await scrapeMetrics(adminPort);
  const m = /^spooky_active_streams (\d+)/m.exec(text);
  assert.ok(m, "spooky_active_streams in /metrics");
  return Number(m[1]);
}

Deno.test("#25.5: a client's STOP_SENDING before the response head resets the backend stream", async () => {
  const be = hangingBackend();
  const port = be.port;
  const proxy = await startProxy(
    faultConfig([`127.0.0.1:${port}`], {
      requestTimeoutMs: 60_000,
      extra: "admin: {address: 127.0.0.1, port: 0}",
    }),
  );
  const client = await H3TestClient.connect(
    proxy.port,
    await Deno.readTextFile((await testCerts()).caPath),
  );
  try {
    const streams: Deno.QuicBidirectionalStream[] = [];
    for (let i = 0; i < N; i++) {
      const s = await client.conn.createBidirectionalStream();
      const w = s.writable.getWriter();
      await w.write(
        encodeFrame(FrameType.HEADERS, client.encodeFields(getHead(`/hang/${i}`, proxy.port))),
      );
      await w.close();
      streams.push(s);
    }
    assert.ok(
      await msUntil(() => be.counts.opened === N, 20_000) >= 0,
      `opened ${be.counts.opened}`,
    );
    assert.equal(await activeStreams(proxy.adminPort!), N);
    // The client cancels every request: STOP_SENDING on each response.
    for (const s of streams) await s.readable.cancel(new Error("not wanted")).catch(() => {});
    const resetAfter = await msUntil(() => be.counts.reset === N, 15_000);
    console.log(
      `${be.counts.reset}/${N} backend streams reset ${
        resetAfter >= 0 ? `within ${resetAfter.toFixed(0)} ms` : "(not all within 15 s)"
      }; ${be.counts.open} still open`,
    );
    assert.equal(be.counts.reset, N, "every cancelled request's backend stream was reset");
    assert.equal(be.counts.open, 0);
    const freed = await msUntil(async () => (await activeStreams(proxy.adminPort!)) === 0, 10_000);
    assert.ok(freed >= 0, "the proxy's active-stream gauge came back to 0");
    // The connection itself is still good.
    const r = await client.request({ head: getHead("/fine", proxy.port) });
    assert.equal(r.status, 200);
  } finally {
    await client.close();
    assert.equal(await proxy.stop(), 0);
    await be.close();
  }
});

Deno.test("#25.5: rapid cancels (HEADERS, then STOP_SENDING at once) do not pile up at the backend; another client is served meanwhile", async () => {
  const RAPID = 300;
  const be = hangingBackend();
  const proxy = await startProxy(
    faultConfig([`127.0.0.1:${be.port}`], {
      requestTimeoutMs: 60_000,
      extra: "admin: {address: 127.0.0.1, port: 0}",
    }),
  );
  const pem = await Deno.readTextFile((await testCerts()).caPath);
  const attacker = await H3TestClient.connect(proxy.port, pem);
  const other = await H3TestClient.connect(proxy.port, pem);
  const latency = async () => {
    const t0 = performance.now();
    const r = await other.request({ head: getHead("/fine", proxy.port) });
    assert.equal(r.status, 200);
    return performance.now() - t0;
  };
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  try {
    const quiet: number[] = [];
    for (let i = 0; i < 20; i++) quiet.push(await latency());
    const block = attacker.encodeFields(getHead("/hang/rapid", proxy.port));
    const busy: number[] = [];
    const measuring = (async () => {
      for (let i = 0; i < 20; i++) busy.push(await latency());
    })();
    for (let i = 0; i < RAPID; i++) {
      const s = await attacker.conn.createBidirectionalStream({ waitUntilAvailable: true });
      const w = s.writable.getWriter();
      await w.write(encodeFrame(FrameType.HEADERS, block));
      await w.close();
      await s.readable.cancel(new Error("rapid")).catch(() => {});
    }
    await measuring;
    const drained = await msUntil(() => be.counts.open === 0, 15_000);
    const freed = await msUntil(async () => (await activeStreams(proxy.adminPort!)) === 0, 10_000);
    console.log(
      `rapid cancels: ${RAPID} sent, ${be.counts.opened} reached the backend, ${be.counts.reset} reset, ` +
        `${be.counts.open} open at the end; other client's median ${
          median(quiet).toFixed(1)
        } ms quiet, ${median(busy).toFixed(1)} ms during`,
    );
    assert.ok(drained >= 0, `backend streams still open: ${be.counts.open}`);
    assert.ok(freed >= 0, "the proxy's active-stream gauge came back to 0");
    assert.equal(be.counts.reset, be.counts.opened);
  } finally {
    await attacker.close();
    await other.close();
    assert.equal(await proxy.stop(), 0);
    await be.close();
  }
});
