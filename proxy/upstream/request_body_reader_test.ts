/**
 * The request body reader of the upstream transports (`request_body_reader.ts`)
 * and the transports on it: a body read into one buffer reused for every
 * chunk must reach the backend intact, which holds only if the next chunk
 * is read once the previous one is sent (HTTP/1.1: the socket took it;
 * HTTP/2: the codec copied it, flow control permitting). The backend here
 * takes its time, so sends wait, and checks every byte.
 *
 * @module
 */

import assert from "node:assert/strict";
import { MiB, request, text } from "./_test_util.ts";
import {
  startWireBackend,
  type Wire,
  type WireRequest,
  type WireResponse,
} from "./_test_wire_backend.ts";
import { createH1Transport } from "./h1_transport.ts";
import { createH2Transport } from "./h2_transport.ts";
import { REQUEST_READ_BYTES, RequestBodyReader } from "./request_body_reader.ts";
import type { UpstreamTransport } from "./transport.ts";

/** Byte `i` of a body: not periodic at any buffer size, so a stale or shifted byte shows. */
const bodyByte = (i: number) => (i * 7 + (i >>> 13)) & 0xff;

/**
 * A body of `total` bytes as a byte stream that writes into the reader's
 * buffer (as the HTTP/3 server's request body does).
 */
function byteSource(total: number): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream({
    type: "bytes",
    pull(c) {
      const req = c.byobRequest!;
      const view = req.view!;
      if (at >= total) {
        c.close();
        req.respond(0);
        return;
      }
      const dst = new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
      const n = Math.min(dst.length, total - at);
      for (let i = 0; i < n; i++) dst[i] = bodyByte(at + i);
      at += n;
      req.respond(n);
    },
  });
}

/** Chunks of a default stream, as given. */
function chunkSource(chunks: Uint8Array[]): ReadableStream<Uint8Array> {
  let i = 0;
  return new ReadableStream({
    pull(c) {
      if (i < chunks.length) c.enqueue(chunks[i++]);
      else c.close();
    },
  }, { highWaterMark: 0 });
}

async function readAll(reader: RequestBodyReader): Promise<Uint8Array[]> {
  const out: Uint8Array[] = [];
  for (let c = await reader.next(); c !== null; c = await reader.next()) out.push(c);
  return out;
}

Deno.test("#29: RequestBodyReader: a byte stream is read into one buffer, with the room asked for around each chunk", async () => {
  const reader = new RequestBodyReader(byteSource(200_000), { head: 8, tail: 2 });
  let at = 0;
  for (let c = await reader.next(); c !== null; c = await reader.next()) {
    assert.ok(c.length > 0 && c.length <= REQUEST_READ_BYTES);
    assert.equal(c.byteOffset, 8);
    assert.equal(c.buffer.byteLength, 8 + REQUEST_READ_BYTES + 2);
    for (let i = 0; i < c.length; i += 997) assert.equal(c[i], bodyByte(at + i));
    at += c.length;
  }
  assert.equal(at, 200_000);
});

Deno.test("#29: RequestBodyReader: a default stream's chunks are handed on as they are without room, copied behind the room (and split to the buffer's size) with it", async () => {
  const big = Uint8Array.from({ length: REQUEST_READ_BYTES + 1000 }, (_, i) => bodyByte(i));
  const small = Uint8Array.of(1, 2, 3);
  const plain = await readAll(new RequestBodyReader(chunkSource([small, new Uint8Array(0), big])));
  assert.equal(plain.length, 2, "the empty chunk is skipped");
  assert.equal(plain[0], small, "no room: the chunk itself");
  assert.equal(plain[1], big);

  const reader = new RequestBodyReader(chunkSource([small, big]), { head: 8, tail: 2 });
  const first = (await reader.next())!;
  assert.deepEqual([...first], [1, 2, 3]);
  assert.equal(first.byteOffset, 8);
  const second = (await reader.next())!;
  assert.equal(second.length, REQUEST_READ_BYTES);
  assert.equal(second.buffer, first.buffer, "one buffer for every chunk");
  assert.deepEqual(second, big.subarray(0, REQUEST_READ_BYTES));
  const third = (await reader.next())!;
  assert.deepEqual(third, big.subarray(REQUEST_READ_BYTES));
  assert.equal(await reader.next(), null);
});

/** Reads the body slowly (pauses of 50 ms every 2 MiB) and checks every byte; answers `"<bytes> <intact>"`. */
function slowCheckingSink(req: WireRequest, res: WireResponse): void {
  let at = 0;
  let intact = true;
  let nextPause = 2 * MiB;
  req.pause();
  setTimeout(() => req.resume(), 300);
  req.on("data", (c: Uint8Array) => {
    for (let i = 0; i < c.length && intact; i++) {
      if (c[i] !== bodyByte(at + i)) intact = false;
    }
    at += c.length;
    if (at >= nextPause) {
      nextPause += 2 * MiB;
      req.pause();
      setTimeout(() => req.resume(), 50);
    }
  });
  req.on("end", () => {
    const answer = `${at} ${intact}`;
    res.writeHead(200, { "content-length": answer.length });
    res.end(answer);
  });
}

const TOTAL = 24 * MiB;
const CASES: Array<{ wire: Wire; framing: "length" | "chunked" }> = [
  { wire: "h2", framing: "length" },
  { wire: "http1", framing: "length" },
  { wire: "http1", framing: "chunked" },
];

for (const { wire, framing } of CASES) {
  Deno.test({
    name: `#29: upstream transport (${wire}${
      wire === "http1" ? `, ${framing}` : ""
    }): a body read into one reused buffer reaches a slow backend intact (the next chunk is read only once the last one is sent)`,
    // Node's sockets (the test backend) outlive a single test.
    sanitizeOps: false,
    sanitizeResources: false,
    async fn() {
      const backend = await startWireBackend(wire);
      const transport: UpstreamTransport = wire === "h2"
        ? createH2Transport()
        : createH1Transport();
      try {
        backend.route("/slow", slowCheckingSink);
        const res = await transport.exchange(request(backend, {
          path: "/slow",
          method: "POST",
          headers: framing === "length" ? [["content-length", String(TOTAL)]] : [],
          body: byteSource(TOTAL),
          // A body with trailers to come goes chunked over HTTP/1.1.
          trailers: framing === "chunked" ? () => null : undefined,
          timeoutMs: 30_000,
        }));
        assert.equal(res.status, 200);
        assert.equal(await text(res), `${TOTAL} true`);
      } finally {
        await transport.close();
        await backend.close();
      }
    },
  });
}
