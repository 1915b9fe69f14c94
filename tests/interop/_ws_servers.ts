/**
 * WebSocket echo backends nobody here wrote the WebSocket side of, for the
 * WebSocket tests: `Deno.upgradeWebSocket` over HTTP/1.1 (`Deno.serve`),
 * Python's `websockets` (Debian `python3-websockets`, run by Debian's own
 * `/usr/bin/python3`: the `python3` on `PATH` may be another installation
 * that does not see Debian's modules), and Node's `node:http2` with
 * `enableConnectProtocol` (RFC 8441) around a small RFC 6455 echo. Each
 * echoes every message back; the Deno and Node ones answer a close with a
 * close of the same code.
 *
 * @module
 */

import { freePort } from "../support/free_port.ts";
import { listening, type Server, spawn, stop } from "./_servers.ts";

/** Debian's Python, which sees Debian's `python3-websockets`. */
export const DEBIAN_PYTHON = "/usr/bin/python3";

/** `Deno.upgradeWebSocket` echo on `Deno.serve` (HTTP/1.1), in this process. */
export function startDenoWsEcho(): Server & { keys: string[] } {
  const keys: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    if (req.headers.get("upgrade")?.toLowerCase() !== "websocket") {
      return new Response("websocket only", { status: 426 });
    }
    keys.push(req.headers.get("sec-websocket-key") ?? "");
    const offered = req.headers.get("sec-websocket-protocol")?.split(",")[0]?.trim();
    const { socket, response } = Deno.upgradeWebSocket(req, { protocol: offered });
    socket.onmessage = (e) => socket.send(e.data);
    socket.onclose = () => {};
    socket.onerror = () => {};
    return response;
  });
  return {
    address: `127.0.0.1:${server.addr.port}`,
    keys,
    close: () => server.shutdown(),
  };
}

const PYTHON_ECHO = `
import asyncio, sys, websockets

async def echo(ws, path=None):
    async for message in ws:
        await ws.send(message)

async def main():
    async with websockets.serve(echo, "127.0.0.1", int(sys.argv[1]), max_size=None):
        await asyncio.Future()

asyncio.run(main())
`;

/** Python `websockets`' echo server (HTTP/1.1 upgrade). */
export async function startPythonWsEcho(): Promise<Server> {
  const port = freePort();
  const child = spawn(DEBIAN_PYTHON, ["-c", PYTHON_ECHO, String(port)]);
  await listening(port, child, "python websockets server");
  return { address: `127.0.0.1:${port}`, close: () => stop(child) };
}

/**
 * Node: an h2c server with SETTINGS_ENABLE_CONNECT_PROTOCOL = 1 whose
 * extended CONNECT streams (\`:protocol websocket\`) run a small RFC 6455
 * echo: masked client frames in, the same messages unmasked out, ping
 * answered with pong, close answered with close. Anything else: 400.
 */
const NODE_H2_ECHO = `
const http2 = require("node:http2");
const server = http2.createServer({ settings: { enableConnectProtocol: true } });
function frame(opcode, payload) {
  const n = payload.length;
  const head = n < 126 ? Buffer.from([0x80 | opcode, n])
    : n < 65536 ? Buffer.from([0x80 | opcode, 126, n >> 8, n & 255])
    : Buffer.concat([Buffer.from([0x80 | opcode, 127]), (() => { const b = Buffer.alloc(8); b.writeBigUInt64BE(BigInt(n)); return b; })()]);
  return Buffer.concat([head, payload]);
}
server.on("stream", (stream, headers) => {
  stream.on("error", () => {});
  if (headers[":method"] !== "CONNECT" || headers[":protocol"] !== "websocket") {
    stream.respond({ ":status": 400 });
    return stream.end();
  }
  const proto = headers["sec-websocket-protocol"];
  stream.respond(proto ? { ":status": 200, "sec-websocket-protocol": String(proto).split(",")[0].trim() } : { ":status": 200 });
  let buf = Buffer.alloc(0);
  let message = [];
  let messageOpcode = 0;
  stream.on("data", (chunk) => {
    buf = Buffer.concat([buf, chunk]);
    for (;;) {
      if (buf.length < 2) return;
      let n = buf[1] & 127, at = 2;
      if (n === 126) { if (buf.length < 4) return; n = buf.readUInt16BE(2); at = 4; }
      else if (n === 127) { if (buf.length < 10) return; n = Number(buf.readBigUInt64BE(2)); at = 10; }
      const masked = (buf[1] & 128) !== 0;
      if (buf.length < at + (masked ? 4 : 0) + n) return;
      const key = masked ? buf.subarray(at, at + 4) : null;
      if (masked) at += 4;
      const payload = Buffer.from(buf.subarray(at, at + n));
      if (key) for (let i = 0; i < n; i++) payload[i] ^= key[i & 3];
      const fin = (buf[0] & 128) !== 0, opcode = buf[0] & 15;
      buf = buf.subarray(at + n);
      if (opcode === 8) { stream.end(frame(8, payload)); return; }
      if (opcode === 9) { stream.write(frame(10, payload)); continue; }
      if (opcode === 10) continue;
      if (opcode !== 0) messageOpcode = opcode;
      message.push(payload);
      if (fin) { stream.write(frame(messageOpcode, Buffer.concat(message))); message = []; }
    }
  });
  stream.on("end", () => stream.end());
});
server.listen(Number(process.argv[1]), "127.0.0.1");
`;

/** Node's `node:http2` with extended CONNECT, running the echo above. */
export async function startNodeH2WsEcho(): Promise<Server> {
  const port = freePort();
  const child = spawn("node", ["-e", NODE_H2_ECHO, String(port)]);
  await listening(port, child, "node http2 websocket server");
  return { address: `127.0.0.1:${port}`, close: () => stop(child) };
}
