/**
 * #29.2: WebSockets end to end over HTTP/3 (RFC 9220, the project's own
 * client) through the real proxy process to WebSocket servers nobody here
 * wrote: `Deno.upgradeWebSocket` and Python's `websockets` over HTTP/1.1
 * (the proxy's `Upgrade`, its own `Sec-WebSocket-Key`, the 101 checked and
 * answered as 200), and Node's `node:http2` with extended CONNECT (RFC
 * 8441). Each echoes messages, small and large, and answers the close
 * handshake; the proxy counts each session and logs it.
 *
 * @module
 */

import assert from "node:assert/strict";
import { H3TestClient, type H3Tunnel } from "../support/h3_client.ts";
import { startProxy, testCerts } from "../support/proxy_process.ts";
import { needs } from "../support/tools.ts";
import { pollUntil, withTimeout } from "../support/wait.ts";
import {
  closeCode,
  encodeWsFrame,
  wsClose,
  type WsFrame,
  WsFrameReader,
  WsOpcode,
  wsText,
} from "../support/websocket_frames.ts";
import { scrapeMetrics } from "../support/metrics.ts";
import type { Server } from "./_servers.ts";
import { startDenoWsEcho, startNodeH2WsEcho, startPythonWsEcho } from "./_ws_servers.ts";

/** Reads frames from a tunnel until one is complete. */
async function nextFrame(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  frames: WsFrameReader,
  pending: WsFrame[],
): Promise<WsFrame> {
  while (pending.length === 0) {
    const r = await reader.read();
    if (r.done) throw new Error("the tunnel ended before a frame");
    pending.push(...frames.push(r.value));
  }
  return pending.shift()!;
}

/** An echo round over `ws`: a text, a 200 KiB binary message, then the close handshake. */
async function echoRound(ws: H3Tunnel, label: string): Promise<void> {
  const reader = ws.readable.getReader();
  const frames = new WsFrameReader();
  const pending: WsFrame[] = [];
  const next = () => withTimeout(nextFrame(reader, frames, pending), 10_000, `${label} frame`);
  await ws.send(wsText(`hello ${label}`));
  const text = await next();
  assert.equal(text.opcode, WsOpcode.TEXT, label);
  assert.equal(text.masked, false, `${label}: a server's frames are not masked`);
  assert.equal(new TextDecoder().decode(text.payload), `hello ${label}`);
  const big = new Uint8Array(200 * 1024);
  for (let at = 0; at < big.length; at += 65536) {
    crypto.getRandomValues(big.subarray(at, at + 65536));
  }
  await ws.send(encodeWsFrame(WsOpcode.BINARY, big));
  const echoed = await next();
  assert.equal(echoed.opcode, WsOpcode.BINARY, label);
  assert.deepEqual(echoed.payload, big, `${label}: 200 KiB echoed intact`);
  await ws.send(wsClose(1000, "bye"));
  const close = await next();
  assert.equal(close.opcode, WsOpcode.CLOSE, label);
  assert.equal(closeCode(close), 1000, label);
  await ws.end();
  // The backend ends the tunnel after the close handshake: the stream's FIN.
  for (;;) {
    const r = await withTimeout(reader.read(), 10_000, `${label} end`);
    if (r.done) break;
  }
}

Deno.test({
  ...needs(
    "#29.2: WebSockets over HTTP/3 to Deno, Python and Node backends",
    "node",
    "python3-websockets",
  ),
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const servers: Record<string, Server> = {};
    try {
      servers.deno = startDenoWsEcho();
      servers.python = await startPythonWsEcho();
      servers.node = await startNodeH2WsEcho();
    } catch (err) {
      for (const s of Object.values(servers)) await s.close();
      throw err;
    }
    const protocols: Record<string, string> = { deno: "http1", python: "http1", node: "h2" };
    const pools = Object.entries(servers).map(([name, s]) =>
      `  ${name}:
    route: {path_prefix: /${name}}
    backends: [{id: ${name}, address: "${s.address}", protocol: ${protocols[name]}}]`
    ).join("\n");
    const proxy = await startProxy(`version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tls: {cert: "{{cert}}", key: "{{key}}"}}
admin: {address: 127.0.0.1, port: 0}
upstream:
${pools}
`);
    const ca = await Deno.readTextFile((await testCerts()).caPath);
    const client = await H3TestClient.connect(proxy.port, ca);
    try {
      const settings = await client.serverSettings;
      assert.equal(settings.get(0x08), 1, "SETTINGS_ENABLE_CONNECT_PROTOCOL (RFC 9220 §3)");
      for (const name of Object.keys(servers)) {
        const ws = await client.connectWebSocket({
          authority: `localhost:${proxy.port}`,
          path: `/${name}/chat`,
          headers: [["sec-websocket-protocol", "echo, other"]],
        });
        assert.equal(ws.status, 200, name);
        assert.ok(!ws.headers.some(([n]) => n === "sec-websocket-accept"), name);
        if (name !== "python") {
          assert.ok(ws.headers.some(([n, v]) => n === "sec-websocket-protocol" && v === "echo"));
        }
        await echoRound(ws, name);
      }
      const deno = servers.deno as Server & { keys: string[] };
      assert.match(deno.keys[0], /^[A-Za-z0-9+/]{22}==$/, "the proxy made a key for HTTP/1.1");
      // Counted per pool once closed, and logged.
      const metrics = async () => await scrapeMetrics(proxy.adminPort!);
      await pollUntil(async () =>
        /spooky_pool_websocket_sessions_total\{pool="node",outcome="closed"\} 1/.test(
          await metrics(),
        )
      );
      const text = await metrics();
      for (const name of Object.keys(servers)) {
        assert.match(text, new RegExp(`spooky_pool_websockets_open\\{pool="${name}"\\} 0`));
        assert.match(
          text,
          new RegExp(`spooky_pool_websocket_sessions_total\\{pool="${name}",outcome="closed"\\} 1`),
        );
      }
      await pollUntil(() =>
        proxy.stderr.some((l) => /"CONNECT localhost:\d+ \/deno\/chat" 200/.test(l))
      );
    } finally {
      await client.close();
      await proxy.stop();
      for (const s of Object.values(servers)) await s.close();
    }
  },
});
