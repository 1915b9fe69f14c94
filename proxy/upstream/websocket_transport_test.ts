/**
 * WebSockets through the upstream transports: RFC 8441 extended CONNECT to
 * an HTTP/2 backend that enables it (Deno's `node:http2` with
 * `enableConnectProtocol`), the HTTP/1.1 upgrade to `Deno.upgradeWebSocket`,
 * and the handshakes a backend gets wrong, each a failure of that backend
 * and nothing of the client's sent.
 */

import assert from "node:assert/strict";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { concatBytes } from "../../shared/bytes.ts";
import { websocketAccept } from "../http/mod.ts";
import { createH1Transport } from "./h1_transport.ts";
import { createH2Transport } from "./h2_transport.ts";
import {
  UpstreamError,
  type UpstreamRequest,
  type UpstreamResponse,
  WebSocketUnsupported,
} from "./transport.ts";
import { withTimeout } from "../../tests/support/wait.ts";
import { WsFrameReader, wsText } from "../../tests/support/websocket_frames.ts";

const KEY = "dGhlIHNhbXBsZSBub25jZQ==";
const enc = new TextEncoder();
const dec = new TextDecoder();

/** A request opening a WebSocket at `/chat`, its body the client's side (`side`). */
function wsRequest(address: string, side: ReadableStream<Uint8Array>, over = {}): UpstreamRequest {
  return {
    address,
    method: "CONNECT",
    path: "/chat",
    authority: "example.test",
    headers: [["sec-websocket-version", "13"]],
    body: side,
    timeoutMs: 5_000,
    ...over,
  };
}

/** The client's side of a tunnel: bytes pushed by the test. */
function clientSide() {
  let ctrl!: ReadableStreamDefaultController<Uint8Array>;
  let pulled = 0;
  const stream = new ReadableStream<Uint8Array>({
    start: (c) => void (ctrl = c),
    pull: () => void pulled++,
  }, { highWaterMark: 0 });
  return {
    stream,
    send: (b: Uint8Array) => ctrl.enqueue(b),
    end: () => ctrl.close(),
    get pulled() {
      return pulled;
    },
  };
}

/** Reads one WebSocket frame's payload (as text) from a tunnel's body. */
async function readText(reader: ReadableStreamDefaultReader<Uint8Array>, frames: WsFrameReader) {
  for (;;) {
    const r = await reader.read();
    if (r.done) throw new Error("tunnel ended");
    const got = frames.push(r.value);
    if (got.length > 0) return dec.decode(got[0].payload);
  }
}

async function failure(p: Promise<UpstreamResponse>): Promise<UpstreamError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof UpstreamError, String(err));
    return err;
  }
  assert.fail("expected the WebSocket to fail");
}

/** An HTTP/1.1 backend that reads one request head, then runs `answer` on the socket. */
function rawH1(
  answer: (conn: Deno.Conn, head: string) => Promise<void>,
): { address: string; after: Promise<Uint8Array>; close(): void } {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const after = Promise.withResolvers<Uint8Array>();
  (async () => {
    const conn = await listener.accept();
    const buf = new Uint8Array(65536);
    let got = new Uint8Array(0);
    let end = -1;
    while (end < 0) {
      const n = await conn.read(buf);
      if (n === null) return;
      got = concatBytes(got, buf.subarray(0, n));
      end = dec.decode(got).indexOf("\r\n\r\n");
    }
    await answer(conn, dec.decode(got.subarray(0, end)));
    // Whatever the client's side writes after the head, until the proxy closes.
    let rest = got.subarray(end + 4);
    for (;;) {
      const n = await conn.read(buf).catch(() => null);
      if (n === null) break;
      rest = concatBytes(rest, buf.subarray(0, n));
    }
    after.resolve(rest);
    conn.close();
  })().catch((err) => after.reject(err));
  return {
    address: `127.0.0.1:${listener.addr.port}`,
    after: after.promise,
    close: () => listener.close(),
  };
}

Deno.test("RFC 6455 §4.1: an HTTP/1.1 upgrade to Deno.upgradeWebSocket echoes through the tunnel", async () => {
  const seenKeys: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    seenKeys.push(req.headers.get("sec-websocket-key") ?? "");
    const { socket, response } = Deno.upgradeWebSocket(req);
    socket.onmessage = (e) => socket.send(e.data);
    return response;
  });
  const transport = createH1Transport();
  try {
    const side = clientSide();
    const address = `127.0.0.1:${server.addr.port}`;
    const res = await transport.websocket!(
      wsRequest(address, side.stream, {
        headers: [["sec-websocket-version", "13"], ["sec-websocket-key", KEY]],
      }),
    );
    assert.equal(res.status, 200);
    assert.ok(!res.headers.some(([n]) => n === "sec-websocket-accept"));
    assert.deepEqual(seenKeys, [KEY], "an HTTP/1.1 client's key passes through");
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const frames = new WsFrameReader();
    side.send(wsText("hello"));
    assert.equal(await withTimeout(readText(reader, frames), 5_000, "echo"), "hello");
    side.send(wsText("again"));
    assert.equal(await withTimeout(readText(reader, frames), 5_000, "echo"), "again");
    await reader.cancel();
  } finally {
    await transport.close();
    await server.shutdown();
  }
});

Deno.test("RFC 6455 §4.1: a backend that answers the upgrade with 200, not 101, fails invalid_response", async () => {
  const backend = rawH1(async (conn) => {
    await conn.write(enc.encode("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"));
  });
  const transport = createH1Transport();
  try {
    const side = clientSide();
    side.send(enc.encode("early bytes"));
    const err = await failure(transport.websocket!(wsRequest(backend.address, side.stream)));
    assert.equal(err.kind, "invalid_response");
    assert.match(err.message, /200, not 101/);
    assert.equal(dec.decode(await backend.after), "", "nothing of the client's was written");
  } finally {
    backend.close();
    await transport.close();
  }
});

Deno.test("RFC 6455 §4.1: a 101 with the wrong Sec-WebSocket-Accept fails invalid_response", async () => {
  const backend = rawH1(async (conn) => {
    const wrong = await websocketAccept("AAAAAAAAAAAAAAAAAAAAAA==");
    await conn.write(enc.encode(
      "HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: upgrade\r\n" +
        `sec-websocket-accept: ${wrong}\r\n\r\n`,
    ));
  });
  const transport = createH1Transport();
  try {
    const side = clientSide();
    side.send(enc.encode("early bytes"));
    const err = await failure(
      transport.websocket!(
        wsRequest(backend.address, side.stream, {
          headers: [["sec-websocket-version", "13"], ["sec-websocket-key", KEY]],
        }),
      ),
    );
    assert.equal(err.kind, "invalid_response");
    assert.match(err.message, /Sec-WebSocket-Accept/);
    assert.equal(dec.decode(await backend.after), "");
  } finally {
    backend.close();
    await transport.close();
  }
});

Deno.test("RFC 6455 §4.1: a refusal is the answer; the client's early bytes never reach the backend", async () => {
  const backend = rawH1(async (conn, head) => {
    assert.match(head, /^GET \/chat HTTP\/1\.1\r\n/);
    assert.match(head, /\r\nconnection: upgrade\r\nupgrade: websocket/);
    // Long enough for eager bytes to arrive, were they written.
    await new Promise((r) => setTimeout(r, 300));
    await conn.write(enc.encode("HTTP/1.1 403 Forbidden\r\ncontent-length: 4\r\n\r\nnope"));
  });
  const transport = createH1Transport();
  try {
    const side = clientSide();
    side.send(enc.encode("GET /smuggled HTTP/1.1\r\nhost: x\r\n\r\n"));
    const res = await transport.websocket!(wsRequest(backend.address, side.stream));
    assert.equal(res.status, 403);
    assert.equal(await new Response(res.body as ReadableStream).text(), "nope");
    assert.equal(side.pulled, 0, "the client's side was never read");
    assert.equal(dec.decode(await backend.after), "");
  } finally {
    backend.close();
    await transport.close();
  }
});

/** Deno's node:http2 server, `enableConnectProtocol` as given, echoing CONNECT streams. */
async function h2Backend(enableConnectProtocol: boolean, status = 200) {
  const seen: Array<Record<string, unknown>> = [];
  const received: Uint8Array[] = [];
  const server = http2.createServer({ settings: { enableConnectProtocol } });
  server.on("stream", (stream, headers) => {
    seen.push({ ...headers });
    stream.on("error", () => {});
    stream.respond({ ":status": status });
    stream.on("data", (d: Uint8Array) => {
      received.push(d);
      if (status === 200) stream.write(d);
    });
    stream.on("end", () => stream.end());
    if (status !== 200) stream.end("refused");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  return {
    address: `127.0.0.1:${port}`,
    seen,
    received,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

Deno.test("RFC 8441 §4-5: an extended CONNECT to an HTTP/2 backend that enables it is a tunnel", async () => {
  const backend = await h2Backend(true);
  const transport = createH2Transport();
  try {
    const side = clientSide();
    const res = await transport.websocket!(
      wsRequest(backend.address, side.stream, {
        headers: [["sec-websocket-version", "13"], ["sec-websocket-key", KEY]],
      }),
    );
    assert.equal(res.status, 200);
    const h = backend.seen[0];
    assert.deepEqual(
      [h[":method"], h[":protocol"], h[":path"], h[":authority"], h["sec-websocket-key"]],
      ["CONNECT", "websocket", "/chat", "example.test", undefined],
    );
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    side.send(enc.encode("ping-1"));
    const echoed = await withTimeout(reader.read(), 5_000, "echo");
    assert.equal(dec.decode(echoed.value), "ping-1");
    // The client's end is END_STREAM; the backend's then ends the tunnel cleanly.
    side.end();
    assert.equal((await withTimeout(reader.read(), 5_000, "end")).done, true);
  } finally {
    await transport.close();
    await backend.close();
  }
});

Deno.test("RFC 8441 §4: no extended CONNECT to an HTTP/2 backend that did not enable it", async () => {
  const backend = await h2Backend(false);
  const transport = createH2Transport();
  try {
    const err = await failure(
      transport.websocket!(wsRequest(backend.address, clientSide().stream)),
    );
    assert.ok(err instanceof WebSocketUnsupported, String(err));
    assert.equal(backend.seen.length, 0, "nothing was sent");
  } finally {
    await transport.close();
    await backend.close();
  }
});

Deno.test("RFC 8441 §5: an HTTP/2 refusal is the answer; the client's bytes are not sent", async () => {
  const backend = await h2Backend(true, 403);
  const transport = createH2Transport();
  try {
    const side = clientSide();
    side.send(enc.encode("early"));
    const res = await transport.websocket!(wsRequest(backend.address, side.stream));
    assert.equal(res.status, 403);
    assert.equal(await new Response(res.body as ReadableStream).text(), "refused");
    assert.equal(side.pulled, 0);
    assert.deepEqual(backend.received, []);
  } finally {
    await transport.close();
    await backend.close();
  }
});

Deno.test("request_timeout_ms bounds the wait for a WebSocket's answer", async () => {
  const backend = rawH1(() => new Promise(() => {}));
  const transport = createH1Transport();
  try {
    const err = await failure(
      transport.websocket!(wsRequest(backend.address, clientSide().stream, { timeoutMs: 300 })),
    );
    assert.equal(err.kind, "timeout");
  } finally {
    backend.close();
    await transport.close();
  }
});
