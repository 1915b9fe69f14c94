/**
 * #29.2: WebSocket peers that misbehave, against the real proxy process:
 * HTTP/1.1 backends that answer the upgrade with 200 instead of 101, or with
 * a 101 whose `Sec-WebSocket-Accept` is not the key's (502, nothing of the
 * client's sent); an eager HTTP/3 client whose bytes come before the answer
 * (never written to a backend that refuses: they would be its next request);
 * a client that sends HEADERS on an open tunnel (its connection closed with
 * H3_FRAME_UNEXPECTED, RFC 9114 §4.4); and ends that must cross the proxy
 * both ways (a client that ends its side, a backend killed mid-tunnel).
 *
 * @module
 */

import assert from "node:assert/strict";
import { concatBytes } from "../../shared/bytes.ts";
import { websocketAccept } from "../../proxy/http/mod.ts";
import { encodeFrame, FrameType } from "../../proxy/h3/mod.ts";
import { H3TestClient, type H3Tunnel } from "../support/h3_client.ts";
import { startProxy, testCerts } from "../support/proxy_process.ts";
import { needs } from "../support/tools.ts";
import { pollUntil, withTimeout } from "../support/wait.ts";
import { WsFrameReader, wsText } from "../support/websocket_frames.ts";
import { scrapeMetrics } from "../support/metrics.ts";
import { startDenoWsEcho, startPythonWsEcho } from "../interop/_ws_servers.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

/** An HTTP/1.1 backend that reads each request head, then answers with `answer`; records what followed. */
function rawBackend(answer: (conn: Deno.Conn, head: string) => Promise<void>) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const after: string[] = [];
  const serve = async (conn: Deno.Conn) => {
    const buf = new Uint8Array(65536);
    let got = new Uint8Array(0);
    let end = -1;
    while (end < 0) {
      const n = await conn.read(buf).catch(() => null);
      if (n === null) return conn.close();
      got = concatBytes(got, buf.subarray(0, n));
      end = dec.decode(got).indexOf("\r\n\r\n");
    }
    await answer(conn, dec.decode(got.subarray(0, end))).catch(() => {});
    let rest = dec.decode(got.subarray(end + 4));
    for (;;) {
      const n = await conn.read(buf).catch(() => null);
      if (n === null) break;
      rest += dec.decode(buf.subarray(0, n));
    }
    after.push(rest);
    try {
      conn.close();
    } catch { /* closed */ }
  };
  (async () => {
    for await (const conn of listener) serve(conn);
  })().catch(() => {});
  return {
    address: `127.0.0.1:${listener.addr.port}`,
    /** What each connection sent after its head, once it closed. */
    after,
    close: () => listener.close(),
  };
}

const keyOf = (head: string) => /\r\nsec-websocket-key: ([^\r]+)/i.exec(head)?.[1] ?? "";

/** Every byte of a tunnel's readable, until it ends. */
async function drain(ws: H3Tunnel): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const chunk of ws.readable) parts.push(chunk);
  return concatBytes(...parts);
}

Deno.test({
  ...needs(
    "#29.2: misbehaving WebSocket backends and clients cost one WebSocket each",
    "python3-websockets",
  ),
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const ok200 = rawBackend(async (c) => {
      await c.write(enc.encode("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"));
    });
    const badAccept = rawBackend(async (c, head) => {
      const wrong = await websocketAccept(
        keyOf(head).replace(/^./, (ch) => ch === "A" ? "B" : "A"),
      );
      await c.write(enc.encode(
        "HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: upgrade\r\n" +
          `sec-websocket-accept: ${wrong}\r\n\r\n`,
      ));
    });
    const slowRefusal = rawBackend(async (c) => {
      // Long enough for eager bytes to arrive, were they passed on.
      await new Promise((r) => setTimeout(r, 300));
      await c.write(enc.encode("HTTP/1.1 403 Forbidden\r\ncontent-length: 4\r\n\r\nnope"));
    });
    const echo = startDenoWsEcho();
    const python = await startPythonWsEcho();
    const pool = (name: string, address: string) =>
      `  ${name}: {route: {path_prefix: /${name}}, backends: [{id: ${name}, address: "${address}", protocol: http1}]}`;
    const proxy = await startProxy(`version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tls: {cert: "{{cert}}", key: "{{key}}"}}
admin: {address: 127.0.0.1, port: 0}
upstream:
${pool("ok200", ok200.address)}
${pool("accept", badAccept.address)}
${pool("refuse", slowRefusal.address)}
${pool("echo", echo.address)}
${pool("python", python.address)}
`);
    const ca = await Deno.readTextFile((await testCerts()).caPath);
    const connect = () => H3TestClient.connect(proxy.port, ca);
    const client = await connect();
    const open = (path: string, early?: Uint8Array) =>
      client.connectWebSocket({ authority: `localhost:${proxy.port}`, path, early });
    const metrics = async () => await scrapeMetrics(proxy.adminPort!);
    try {
      // A 200 where a 101 belongs, and a 101 with the wrong accept: 502, nothing sent.
      for (const name of ["ok200", "accept"]) {
        const ws = await open(`/${name}/x`, wsText("early"));
        assert.equal(ws.status, 502, name);
        await drain(ws);
      }
      await pollUntil(() => ok200.after.length === 1 && badAccept.after.length === 1);
      assert.deepEqual([...ok200.after, ...badAccept.after], ["", ""], "no client byte sent");

      // An eager client's bytes never reach a backend that refuses.
      const refused = await open(
        "/refuse/x",
        enc.encode("GET /smuggled HTTP/1.1\r\nhost: x\r\n\r\n"),
      );
      assert.equal(refused.status, 403);
      assert.equal(dec.decode(await drain(refused)), "nope");
      await pollUntil(() => slowRefusal.after.length === 1);
      assert.deepEqual(slowRefusal.after, [""]);

      // To a backend that accepts, they are the first bytes of the tunnel.
      const eager = await open("/echo/x", wsText("eager"));
      assert.equal(eager.status, 200);
      const frames = new WsFrameReader();
      const reader = eager.readable.getReader();
      const first = await withTimeout(reader.read(), 10_000, "echo of the eager frame");
      assert.equal(dec.decode(frames.push(first.value!)[0].payload), "eager");
      // The client ends its side: the backend hears it and ends the tunnel.
      await eager.end();
      for (;;) {
        const r = await withTimeout(reader.read(), 10_000, "end of the tunnel");
        if (r.done) break;
      }

      // A backend killed mid-tunnel: the client's stream ends.
      const doomed = await open("/python/x");
      assert.equal(doomed.status, 200);
      await doomed.send(wsText("before"));
      const dr = doomed.readable.getReader();
      await withTimeout(dr.read(), 10_000, "echo before the kill");
      await python.close();
      for (;;) {
        const r = await withTimeout(dr.read(), 10_000, "end after the backend died");
        if (r.done) break;
      }

      // HEADERS on an open tunnel (RFC 9114 §4.4): the client's connection closes, H3_FRAME_UNEXPECTED.
      const rude = await connect();
      try {
        const ws = await rude.connectWebSocket({
          authority: `localhost:${proxy.port}`,
          path: "/echo/y",
        });
        assert.equal(ws.status, 200);
        await ws.raw(encodeFrame(FrameType.HEADERS, rude.encodeFields([["x-late", "1"]])));
        const info = await withTimeout(rude.conn.closed, 10_000, "connection close");
        assert.equal(info.closeCode, 0x105, "H3_FRAME_UNEXPECTED");
      } finally {
        await rude.close();
      }

      const text = await metrics();
      assert.match(text, /spooky_pool_websocket_sessions_total\{pool="ok200",outcome="failed"\} 1/);
      assert.match(
        text,
        /spooky_pool_websocket_sessions_total\{pool="accept",outcome="failed"\} 1/,
      );
      assert.match(
        text,
        /spooky_pool_websocket_sessions_total\{pool="refuse",outcome="refused"\} 1/,
      );
      // A killed process's socket ends with a FIN (or a reset): closed, or backend_error.
      assert.match(
        text,
        /spooky_pool_websocket_sessions_total\{pool="python",outcome="(closed|backend_error)"\} 1/,
      );
      assert.match(text, /spooky_pool_websockets_open\{pool="python"\} 0/);
      assert.match(text, /spooky_backend_errors_total\{backend="ok200",pool="ok200"\} 1/);
      // The proxy serves on.
      const after = await open("/echo/z");
      assert.equal(after.status, 200);
      await after.end();
    } finally {
      await client.close();
      assert.equal(await proxy.stop(), 0);
      for (const b of [ok200, badAccept, slowRefusal]) b.close();
      await echo.close();
      await python.close();
    }
  },
});
