/**
 * #29.2: a pool's `websocket` settings with the real proxy process: the idle
 * timeout (a WebSocket that carries nothing is closed, one that talks is
 * not), the total limit, `enabled: false` (501 on HTTP/3 and on the TCP
 * fallback), a reload that changes them, and a drain: open WebSockets, over
 * HTTP/3 and over the fallback, keep working until the drain deadline
 * closes them, and the proxy exits.
 *
 * @module
 */

import assert from "node:assert/strict";
import { H3TestClient, type H3Tunnel } from "../support/h3_client.ts";
import { adminReload, startProxy, testCerts } from "../support/proxy_process.ts";
import { pollUntil, sleep, withTimeout } from "../support/wait.ts";
import { type WsFrame, WsFrameReader, wsText } from "../support/websocket_frames.ts";
import { scrapeMetrics } from "../support/metrics.ts";
import { startDenoWsEcho } from "../interop/_ws_servers.ts";

const dec = new TextDecoder();
const enc = new TextEncoder();

/** Sends `text` and reads its echo; `null` when the tunnel ended instead. */
async function echo(
  send: (bytes: Uint8Array) => Promise<unknown>,
  reader: ReadableStreamDefaultReader<Uint8Array>,
  frames: WsFrameReader,
  text: string,
): Promise<string | null> {
  await send(wsText(text)).catch(() => {});
  const got: WsFrame[] = [];
  while (got.length === 0) {
    const r = await withTimeout(reader.read(), 10_000, `echo of ${text}`);
    if (r.done) return null;
    got.push(...frames.push(r.value));
  }
  return dec.decode(got[0].payload);
}

/** Reads until the tunnel ends; the time it ended (ms). */
async function ended(reader: ReadableStreamDefaultReader<Uint8Array>, what: string) {
  for (;;) {
    const r = await withTimeout(reader.read().catch(() => ({ done: true })), 15_000, what);
    if (r.done) return performance.now();
  }
}

/** A WebSocket over a raw TLS connection to the TCP fallback (HTTP/1.1 upgrade): its head and its bytes. */
async function fallbackWs(port: number, ca: string, path: string) {
  const tcp = await Deno.connect({ hostname: "127.0.0.1", port });
  const conn = await Deno.startTls(tcp, {
    hostname: "localhost",
    caCerts: [ca],
    alpnProtocols: ["http/1.1"],
  });
  await conn.write(enc.encode(
    `GET ${path} HTTP/1.1\r\nHost: localhost:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
  ));
  const reader = conn.readable.getReader();
  let head = "";
  while (!head.includes("\r\n\r\n")) {
    const r = await withTimeout(reader.read(), 10_000, "fallback answer");
    if (r.done) break;
    head += dec.decode(r.value); // the answer comes before any frame: nothing else is read here
  }
  return { conn, head, reader };
}

Deno.test({
  name: "#29.2: websocket.idle_timeout_ms, max_duration_ms and enabled: false, applied on reload",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const backend = startDenoWsEcho();
    const config = (off: boolean) =>
      `version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tcp_fallback: true, tls: {cert: "{{cert}}", key: "{{key}}"}}
admin: {address: 127.0.0.1, port: 0}
upstream:
  idle: {route: {path_prefix: /idle}, websocket: {idle_timeout_ms: 2000},
         backends: [{id: idle, address: "${backend.address}", protocol: http1}]}
  long: {route: {path_prefix: /long}, websocket: {max_duration_ms: 2000},
         backends: [{id: long, address: "${backend.address}", protocol: http1}]}
  off: {route: {path_prefix: /off}, websocket: {enabled: ${!off}},
        backends: [{id: off, address: "${backend.address}", protocol: http1}]}
`;
    const proxy = await startProxy(config(true));
    const certs = await testCerts();
    const ca = await Deno.readTextFile(certs.caPath);
    const client = await H3TestClient.connect(proxy.port, ca);
    const open = (path: string) =>
      client.connectWebSocket({ authority: `localhost:${proxy.port}`, path });
    const metrics = async () => await scrapeMetrics(proxy.adminPort!);
    try {
      // Talking every 200 ms for 3 s keeps it open; silent for the idle timeout (2 s), it is closed.
      const idle = await open("/idle/x");
      assert.equal(idle.status, 200);
      const ir = idle.readable.getReader();
      const ifr = new WsFrameReader();
      for (let i = 0; i < 15; i++) {
        assert.equal(await echo((b) => idle.send(b), ir, ifr, `m${i}`), `m${i}`);
        await sleep(200);
      }
      const quietFrom = performance.now();
      const idleEnd = await ended(ir, "the idle tunnel's end");
      assert.ok(idleEnd - quietFrom >= 1_000, "not closed before it went quiet for long");

      // Busy or not, a WebSocket ends at max_duration_ms (2 s).
      const openedAt = performance.now();
      const long = await open("/long/x");
      assert.equal(long.status, 200);
      const lr = long.readable.getReader();
      const lfr = new WsFrameReader();
      let answered = 0;
      while ((await echo((b) => long.send(b), lr, lfr, `k${answered}`)) !== null) {
        answered++;
        await sleep(200);
        assert.ok(answered < 100, "still open after 100 rounds");
      }
      assert.ok(performance.now() - openedAt >= 1_500, "closed at its total limit, not before");
      assert.ok(answered >= 2, "it worked until then");

      // enabled: false: 501 on HTTP/3 and on the TCP fallback.
      const off = await open("/off/x");
      assert.equal(off.status, 501);
      assert.match(
        dec.decode(await new Response(off.readable).arrayBuffer()),
        /websocket_disabled/,
      );
      const fb = await fallbackWs(proxy.port, ca, "/off/x");
      assert.match(fb.head, /^HTTP\/1\.1 501 /);
      fb.conn.close();

      let text = "";
      await pollUntil(async () => /outcome="max_duration"\} 1/.test(text = await metrics()));
      assert.match(
        text,
        /spooky_pool_websocket_sessions_total\{pool="idle",outcome="idle_timeout"\} 1/,
      );
      assert.match(
        text,
        /spooky_pool_websocket_sessions_total\{pool="long",outcome="max_duration"\} 1/,
      );
      assert.match(text, /spooky_pool_websocket_sessions_total\{pool="off",outcome="disabled"\} 2/);

      // A reload that enables it applies to the next WebSocket.
      await Deno.writeTextFile(
        proxy.configPath,
        config(false).replaceAll("{{cert}}", certs.certPath).replaceAll("{{key}}", certs.keyPath),
      );
      assert.equal((await adminReload(proxy.adminPort!)).reloaded, true);
      const on = await open("/off/x");
      assert.equal(on.status, 200);
      await on.end();
    } finally {
      await client.close();
      assert.equal(await proxy.stop(), 0);
      await backend.close();
    }
  },
});

Deno.test({
  name:
    "#29.2: a drain lets open WebSockets (HTTP/3 and TCP fallback) run until its deadline, then closes them",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const backend = startDenoWsEcho();
    const proxy = await startProxy(`version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tcp_fallback: true, tls: {cert: "{{cert}}", key: "{{key}}"}}
limits: {drain_timeout_ms: 2000}
upstream:
  chat: {route: {path_prefix: /}, backends: [{id: chat, address: "${backend.address}", protocol: http1}]}
`);
    const ca = await Deno.readTextFile((await testCerts()).caPath);
    const client = await H3TestClient.connect(proxy.port, ca);
    let h3: H3Tunnel | undefined;
    let fb: Awaited<ReturnType<typeof fallbackWs>> | undefined;
    try {
      h3 = await client.connectWebSocket({ authority: `localhost:${proxy.port}`, path: "/h3" });
      assert.equal(h3.status, 200);
      fb = await fallbackWs(proxy.port, ca, "/tcp");
      assert.match(fb.head, /^HTTP\/1\.1 101 /);
      const hr = h3.readable.getReader();
      const hf = new WsFrameReader();
      const ff = new WsFrameReader();
      const tunnel = fb;
      const sigterm = performance.now();
      const exited = proxy.stop("SIGTERM");
      await sleep(300);
      // Draining, both still carry messages.
      assert.equal(await echo((b) => h3!.send(b), hr, hf, "h3 during drain"), "h3 during drain");
      assert.equal(
        await echo((b) => tunnel.conn.write(b), tunnel.reader, ff, "tcp during drain"),
        "tcp during drain",
      );
      // At the deadline both are closed, and the proxy exits.
      await ended(hr, "the HTTP/3 WebSocket's end");
      await ended(tunnel.reader, "the fallback WebSocket's end");
      assert.equal(await withTimeout(exited, 15_000, "exit"), 0);
      assert.ok(performance.now() - sigterm >= 1_500, "kept until the drain deadline");
      const log = proxy.stderr.join("\n");
      assert.match(log, /"CONNECT localhost:\d+ \/h3" 200 /);
      assert.match(log, /"GET localhost:\d+ \/tcp" 101 .*listener=tcp/);
    } finally {
      try {
        fb?.conn.close();
      } catch { /* closed */ }
      await client.close();
      await proxy.stop();
      await backend.close();
    }
  },
});
