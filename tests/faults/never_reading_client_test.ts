/**
 * Fault test (issue #25 item 4): one connection opens many download streams
 * and never reads them (it grants no flow-control credit). It may hold no
 * more than `limits.max_backend_streams_per_connection` of the pool's
 * backend streams (the rest wait for one of its own to finish, here longer
 * than the pool's `request_timeout_ms`, so they get 503 and never reach the
 * backend), other clients are still served, and its stalled responses are
 * cut after `limits.request_idle_timeout_ms` with their backend streams
 * reset, while its connection stays open.
 */
// deno-lint-ignore-file no-console
import assert from "node:assert/strict";
import {
  encodeFrame,
  FrameDecoder,
  FrameType,
  NEED_MORE,
  QpackDecoder,
} from "../../proxy/h3/mod.ts";
import { H3TestClient } from "../support/h3_client.ts";
import { startProxy, testCerts } from "../support/proxy_process.ts";
import { faultConfig, getHead, mib, rssBytes } from "../support/faults.ts";
import { msUntil, sleep } from "../support/wait.ts";

const STREAMS = 40;
const SHARE = 10;
const IDLE_MS = 3000;
/** Waiting for a slot gives up before the stalled ones are cut. */
const REQUEST_TIMEOUT_MS = 1500;
const CHUNK = new Uint8Array(16 * 1024).fill(98);

/**
 * An h2c backend (`Deno.serve`): `/big` streams without end (as fast as the
 * proxy takes it), anything else answers at once. Counts `/big` streams
 * open, the most open at once, and those the proxy reset (the body is
 * cancelled).
 */
function downloadBackend() {
  const counts = { opened: 0, open: 0, maxOpen: 0, reset: 0 };
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    if (!new URL(req.url).pathname.startsWith("/big")) return new Response("small");
    counts.opened++;
    counts.open++;
    counts.maxOpen = Math.max(counts.maxOpen, counts.open);
    return new Response(
      new ReadableStream<Uint8Array>({
        pull: (c) => c.enqueue(CHUNK.slice()),
        cancel: () => {
          counts.open--;
          counts.reset++;
        },
      }, { highWaterMark: 0 }),
    );
  });
  return { counts, port: server.addr.port, close: () => server.shutdown() };
}

/** Reads a response stream to its end: status, body bytes, and the trailer section's names. */
async function readAll(readable: ReadableStream<Uint8Array>) {
  const frames = new FrameDecoder({ maxFrameSize: 1 << 20 });
  const qpack = new QpackDecoder({ maxTableCapacity: 0, maxBlockedStreams: 0 });
  let status = 0;
  let body = 0;
  let trailer: string[] | null = null;
  let clean = true;
  try {
    for await (const chunk of readable) {
      frames.push(chunk);
      for (let ev = frames.next(); ev !== NEED_MORE; ev = frames.next()) {
        if (ev.kind === "data") body += ev.chunk.length;
        else if (ev.kind === "frame" && ev.type === FrameType.HEADERS) {
          const fields = qpack.decodeSection(0, ev.payload) as Array<[string, string]>;
          if (status === 0) status = Number(fields.find(([n]) => n === ":status")?.[1]);
          else trailer = fields.map(([n]) => n);
        }
      }
    }
  } catch {
    clean = false;
  }
  return { status, body, trailer, clean };
}

Deno.test("#25.4: a never-reading connection holds at most its share of a backend's streams, its stalled responses are cut at request_idle_timeout_ms, others are served", async () => {
  const be = downloadBackend();
  const port = be.port;
  const proxy = await startProxy(
    faultConfig([`127.0.0.1:${port}`], {
      requestTimeoutMs: REQUEST_TIMEOUT_MS,
      extra:
        `limits: {request_idle_timeout_ms: ${IDLE_MS}, max_backend_streams_per_connection: ${SHARE}}`,
    }),
  );
  const pem = await Deno.readTextFile((await testCerts()).caPath);
  const lazy = await H3TestClient.connect(proxy.port, pem);
  const other = await H3TestClient.connect(proxy.port, pem);
  try {
    for (let i = 0; i < 20; i++) {
      assert.equal((await other.request({ head: getHead("/warm", proxy.port) })).status, 200);
    }
    const before = await rssBytes(proxy.pid);
    // The attacker: STREAMS downloads, never read.
    const streams: Deno.QuicBidirectionalStream[] = [];
    for (let i = 0; i < STREAMS; i++) {
      const s = await lazy.conn.createBidirectionalStream();
      const w = s.writable.getWriter();
      await w.write(
        encodeFrame(FrameType.HEADERS, lazy.encodeFields(getHead(`/big/${i}`, proxy.port))),
      );
      await w.close();
      streams.push(s);
    }
    assert.ok(await msUntil(() => be.counts.opened >= SHARE, 20_000) >= 0, "downloads started");
    await sleep(500);
    const stalledRss = await rssBytes(proxy.pid);
    assert.equal(be.counts.opened, SHARE, "only the connection's share reached the backend");
    assert.ok(be.counts.maxOpen <= SHARE, `max open ${be.counts.maxOpen}`);
    // Another client is served while the attacker holds its share.
    for (let i = 0; i < 10; i++) {
      const r = await other.request({ head: getHead(`/other/${i}`, proxy.port) });
      assert.equal(r.status, 200);
    }
    // The stalled responses are cut at the idle bound and their backend streams reset.
    const t0 = performance.now();
    const cut = await msUntil(() => be.counts.open === 0, IDLE_MS * 5);
    const cutMs = performance.now() - t0;
    console.log(
      `never-reading client: ${be.counts.opened}/${STREAMS} streams reached the backend ` +
        `(share ${SHARE}); ${be.counts.reset} reset, all cut ${
          cut >= 0 ? `${cutMs.toFixed(0)} ms after the check` : "NOT within the bound"
        }; proxy RSS before ${mib(before)}, while stalled ${mib(stalledRss)} ` +
        `(${((stalledRss - before) / SHARE / 1024).toFixed(0)} KiB per stalled stream)`,
    );
    assert.ok(cut >= 0, `backend streams still open: ${be.counts.open}`);
    assert.equal(be.counts.reset, SHARE, "every stalled response's backend stream was reset");
    assert.equal(be.counts.opened, SHARE, "the requests past the share were never sent");
    assert.ok(be.counts.maxOpen <= SHARE, `max open ${be.counts.maxOpen}`);
    // The client reads again: each cut response ends malformed (a trailer
    // section with a pseudo-header, RFC 9114 §4.1.2), never as a clean
    // complete body; the ones that waited past request_timeout_ms are 503.
    const results = await Promise.all(streams.map((s) => readAll(s.readable)));
    const cutOnes = results.filter((r) => r.status === 200);
    assert.equal(cutOnes.length, SHARE, JSON.stringify(results.map((r) => r.status)));
    for (const r of cutOnes) {
      assert.ok(r.body > 0);
      assert.deepEqual(r.trailer, [":status"], "the cut response is marked malformed");
    }
    assert.equal(results.filter((r) => r.status === 503).length, STREAMS - SHARE);
    // The connection was not closed: its next request, read this time, is served.
    const again = await lazy.request({ head: getHead("/after", proxy.port) });
    assert.equal(again.status, 200);
    // And the freed share admits new downloads.
    const next = await lazy.conn.createBidirectionalStream();
    const w = next.writable.getWriter();
    await w.write(
      encodeFrame(FrameType.HEADERS, lazy.encodeFields(getHead("/big/next", proxy.port))),
    );
    await w.close();
    assert.ok(await msUntil(() => be.counts.opened === SHARE + 1, 10_000) >= 0);
    await next.readable.cancel().catch(() => {});
  } finally {
    await lazy.close();
    await other.close();
    assert.equal(await proxy.stop(), 0);
    await be.close();
  }
});
