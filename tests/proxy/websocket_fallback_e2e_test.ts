/**
 * #29.2: WebSockets on the TCP fallback (HTTP/1.1 `Upgrade: websocket` over
 * TLS on the HTTP/3 port): headless Chromium (whose WebSockets run over TCP
 * whatever the page used) and Python's `websockets` client, through the real
 * proxy to an HTTP/1.1 backend (`Deno.upgradeWebSocket`: the client's own
 * handshake passes through) and to an HTTP/2 one (Node, RFC 8441). The
 * fallback's ordinary HTTP/1.1 and HTTP/2 requests still work beside them.
 *
 * @module
 */

import assert from "node:assert/strict";
import { startBackend } from "../support/backend.ts";
import { chromiumDumpDom } from "../support/chromium.ts";
import { startProxy, testCerts } from "../support/proxy_process.ts";
import { needs } from "../support/tools.ts";
import { withTimeout } from "../support/wait.ts";
import { wsClose, WsFrameReader, WsOpcode, wsText } from "../support/websocket_frames.ts";
import { DEBIAN_PYTHON, startDenoWsEcho, startNodeH2WsEcho } from "../interop/_ws_servers.ts";

const PAGE = `<!doctype html><html><head><title>ws</title></head><body>
<pre id="out">pending</pre>
<script>
function round(path) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket("wss://" + location.host + path, ["echo"]);
    ws.binaryType = "arraybuffer";
    const got = [];
    ws.onopen = () => { ws.send("hello"); ws.send(new Uint8Array(100000).fill(7)); };
    ws.onmessage = (e) => {
      got.push(typeof e.data === "string" ? e.data : "bin:" + e.data.byteLength);
      if (got.length === 2) ws.close(1000, "done");
    };
    ws.onclose = (e) => resolve(path + "=" + got.join(",") + ";" + ws.protocol + ";" + e.code);
    ws.onerror = () => reject(new Error("websocket error on " + path));
  });
}
// Headless Chromium's virtual time runs on while only a WebSocket is busy:
// a request kept pending holds it until the rounds are done.
let busy = true;
(async () => { while (busy) await fetch("/hold?" + Math.random(), { cache: "no-store" }); })();
(async () => {
  const results = [await round("/deno/chat"), await round("/node/chat")];
  document.getElementById("out").textContent = "DONE " + results.join(" ");
})().catch((e) => { document.getElementById("out").textContent = "ERROR " + e; })
  .finally(() => { busy = false; });
</script></body></html>`;

/** The proxy with the TCP fallback: `/deno` (HTTP/1.1), `/node` (HTTP/2), `/` the page and plain answers. */
async function setup() {
  const deno = startDenoWsEcho();
  const node = await startNodeH2WsEcho();
  const plain = startBackend("plain", async (req) => {
    const path = new URL(req.url).pathname;
    if (path === "/page.html") {
      return new Response(PAGE, { headers: { "content-type": "text/html; charset=utf-8" } });
    }
    if (path === "/hold") await new Promise((r) => setTimeout(r, 200));
    return Response.json({ path });
  });
  const proxy = await startProxy(`version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tcp_fallback: true, tls: {cert: "{{cert}}", key: "{{key}}"}}
upstream:
  deno: {route: {path_prefix: /deno}, backends: [{id: deno, address: "${deno.address}", protocol: http1}]}
  node: {route: {path_prefix: /node}, backends: [{id: node, address: "${node.address}", protocol: h2}]}
  plain: {route: {path_prefix: /}, backends: [{id: plain, address: "${plain.address}"}]}
`);
  return {
    deno,
    proxy,
    async close() {
      await proxy.stop();
      await deno.close();
      await node.close();
      await plain.close();
    },
  };
}

Deno.test({
  ...needs(
    "#29.2: headless Chromium opens wss:// WebSockets through the TCP fallback",
    "chromium",
    "node",
  ),
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const s = await setup();
    try {
      const certs = await testCerts();
      const origin = `localhost:${s.proxy.port}`;
      const r = await chromiumDumpDom(`https://${origin}/page.html`, {
        quicOrigin: origin,
        spkiPin: certs.spkiPin,
        budgetMs: 20_000,
      });
      assert.match(
        r.dom,
        /DONE \/deno\/chat=hello,bin:100000;echo;1000 \/node\/chat=hello,bin:100000;echo;1000/,
        `dom: ${r.dom.slice(0, 500)}\nstderr: ${r.stderr.slice(-1500)}`,
      );
      assert.ok(
        s.proxy.stderr.some((l) => /"GET localhost:\d+ \/deno\/chat" 101 .* listener=tcp/.test(l)),
        s.proxy.stderr.join("\n"),
      );
    } finally {
      await s.close();
    }
  },
});

const PYTHON_CLIENT = `
import asyncio, ssl, sys, websockets
async def main():
    ctx = ssl.create_default_context(cafile=sys.argv[2])
    for path in ["/deno/chat", "/node/chat"]:
        async with websockets.connect(f"wss://localhost:{sys.argv[1]}{path}", ssl=ctx,
                                      subprotocols=["echo"], max_size=None) as ws:
            await ws.send("hello " + path)
            text = await ws.recv()
            await ws.send(bytes(range(256)) * 2000)
            data = await ws.recv()
            print(path, text, ws.subprotocol, len(data), data == bytes(range(256)) * 2000)
asyncio.run(main())
`;

Deno.test({
  ...needs(
    "#29.2: Python websockets over TLS to the TCP fallback, HTTP/1.1 and HTTP/2 backends",
    "python3-websockets",
    "node",
  ),
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const s = await setup();
    try {
      const certs = await testCerts();
      const out = await new Deno.Command(DEBIAN_PYTHON, {
        args: ["-c", PYTHON_CLIENT, String(s.proxy.port), certs.caPath],
        stdout: "piped",
        stderr: "piped",
        signal: AbortSignal.timeout(30_000),
      }).output();
      const text = new TextDecoder().decode(out.stdout);
      assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
      assert.match(text, /^\/deno\/chat hello \/deno\/chat echo 512000 True$/m);
      assert.match(text, /^\/node\/chat hello \/node\/chat echo 512000 True$/m);
    } finally {
      await s.close();
    }
  },
});

Deno.test({
  name:
    "#29.2: an HTTP/1.1 client's handshake passes through to an HTTP/1.1 backend; plain requests beside it",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const s = await setup();
    const certs = await testCerts();
    const ca = await Deno.readTextFile(certs.caPath);
    const tcp = await Deno.connect({ hostname: "127.0.0.1", port: s.proxy.port });
    const conn = await Deno.startTls(tcp, {
      hostname: "localhost",
      caCerts: [ca],
      alpnProtocols: ["http/1.1"],
    });
    try {
      const key = "dGhlIHNhbXBsZSBub25jZQ==";
      const enc = new TextEncoder();
      // The head and a first frame in one write: the frame waits for the switch.
      await conn.write(
        new Uint8Array([
          ...enc.encode(
            `GET /deno/chat HTTP/1.1\r\nHost: localhost:${s.proxy.port}\r\nUpgrade: websocket\r\n` +
              `Connection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
          ),
          ...wsText("early"),
        ]),
      );
      const reader = conn.readable.getReader();
      let head = "";
      let pending = new Uint8Array(0);
      const frames = new WsFrameReader();
      const got = [];
      while (got.length === 0) {
        const r = await withTimeout(reader.read(), 10_000, "answer");
        assert.ok(!r.done, `closed; head so far: ${head}`);
        let bytes = r.value;
        if (head === "") {
          pending = new Uint8Array([...pending, ...bytes]);
          const end = headEnd(pending);
          if (end < 0) continue;
          head = new TextDecoder().decode(pending.subarray(0, end));
          bytes = pending.subarray(end);
        }
        got.push(...frames.push(bytes));
      }
      assert.match(head, /^HTTP\/1\.1 101 Switching Protocols\r\n/);
      assert.match(head, /\r\nsec-websocket-accept: s3pPLMBiTxaQ9kYGzzhZRbK\+xOo=\r\n/i);
      assert.deepEqual(s.deno.keys, [key], "the client's own key reached the backend");
      assert.equal(new TextDecoder().decode(got[0].payload), "early");
      await conn.write(wsClose(1000));
      for (;;) {
        const r = await withTimeout(reader.read(), 10_000, "close");
        if (r.done) break;
        for (const f of frames.push(r.value)) assert.equal(f.opcode, WsOpcode.CLOSE);
      }
      // Ordinary requests still go to the runtime's server, HTTP/1.1 (kept alive) and HTTP/2.
      const curl = async (...flags: string[]) =>
        new TextDecoder().decode(
          (await new Deno.Command("curl", {
            args: [
              "-s",
              ...flags,
              "--cacert",
              certs.caPath,
              "--resolve",
              `localhost:${s.proxy.port}:127.0.0.1`,
              `https://localhost:${s.proxy.port}/a`,
              `https://localhost:${s.proxy.port}/b`,
            ],
            stdout: "piped",
          }).output()).stdout,
        );
      assert.equal(await curl("--http1.1"), '{"path":"/a"}{"path":"/b"}');
      assert.equal(await curl("--http2"), '{"path":"/a"}{"path":"/b"}');
    } finally {
      try {
        conn.close();
      } catch { /* closed */ }
      await s.close();
    }
  },
});

/** Index past the first CRLF CRLF of `b`, or -1. */
function headEnd(b: Uint8Array): number {
  for (let i = 0; i + 3 < b.length; i++) {
    if (b[i] === 13 && b[i + 1] === 10 && b[i + 2] === 13 && b[i + 3] === 10) return i + 4;
  }
  return -1;
}
