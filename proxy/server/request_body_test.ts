/**
 * The request body of an HTTP/3 stream against buffer reuse: the stream is
 * read into one buffer that is read into again once nothing refers to it
 * (`request_body.ts`, `body_io.ts` `chunkReader`). A reader that holds
 * every chunk it got (as a transport that has not sent them yet would) must
 * find them intact at the end, however the QUIC reads cut the frames, and
 * whichever way it reads: into its own buffers (BYOB), with the default
 * reader, or as a tunnel's side. The QUIC stream here is a byte stream cut
 * at chosen places, as Deno's is read with a BYOB reader.
 *
 * @module
 */

import assert from "node:assert/strict";
import { concatBytes, encodeFrame, FrameType, QpackDecoder, QpackEncoder } from "../h3/mod.ts";
import type { BidiStream, ReceiveStream, SendStream } from "../quic/transport.ts";
import { serveRequest, type StreamContext } from "./request_stream.ts";
import type { IncomingRequest, OutgoingResponse } from "./types.ts";

const enc = new QpackEncoder();

/** Body byte `i`: never 0 (a reused buffer shows old bytes), not periodic at any read size. */
const bodyByte = (i: number) => ((i * 7 + (i >>> 11)) % 251) + 1;

function bodyOf(n: number): Uint8Array {
  return Uint8Array.from({ length: n }, (_, i) => bodyByte(i));
}

/** A small deterministic generator, so a failure can be replayed. */
function lcg(seed: number): (n: number) => number {
  let s = seed;
  return (n) => {
    s = (s * 1103515245 + 12345) & 0x7fffffff;
    return s % n;
  };
}

/**
 * A request stream's bytes: HEADERS, the body in DATA frames of 1 to 400
 * bytes (with empty ones: many frame headers for the reads to cut), then
 * trailers when given.
 */
function requestBytes(
  head: Array<[string, string]>,
  body: Uint8Array,
  trailers: Array<[string, string]> | null,
): Uint8Array {
  const rand = lcg(7);
  const frames = [encodeFrame(FrameType.HEADERS, enc.encodeSection(head))];
  for (let at = 0; at < body.length;) {
    const n = Math.min(body.length - at, rand(400) + 1);
    frames.push(encodeFrame(FrameType.DATA, body.subarray(at, at + n)));
    if (rand(10) === 0) frames.push(encodeFrame(FrameType.DATA, new Uint8Array(0)));
    at += n;
  }
  if (trailers !== null) frames.push(encodeFrame(FrameType.HEADERS, enc.encodeSection(trailers)));
  return concatBytes(...frames);
}

/** What the fake QUIC stream saw of the reads made on it. */
interface ReadStats {
  reads: number;
  /** Reads whose buffer came with bytes in it already: a buffer read into again. */
  reused: number;
}

/**
 * A QUIC stream that delivers `bytes` in reads of 1 to 1500 bytes (so
 * frame headers and payloads are cut anywhere, and reads never fill the
 * reader's 2 KiB buffer), as a byte stream read with a BYOB reader.
 */
function quicStream(bytes: Uint8Array, stats: ReadStats): BidiStream {
  const rand = lcg(11);
  let at = 0;
  const readable = new ReadableStream({
    type: "bytes",
    pull(c) {
      const req = c.byobRequest!;
      const view = req.view!;
      if (at >= bytes.length) {
        c.close();
        req.respond(0);
        return;
      }
      const dst = new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
      stats.reads++;
      if (dst.some((b) => b !== 0)) stats.reused++;
      const n = Math.min(rand(1500) + 1, dst.length, bytes.length - at);
      dst.set(bytes.subarray(at, at + n));
      at += n;
      req.respond(n);
    },
  });
  const writable = new WritableStream<Uint8Array>();
  return {
    readable: Object.assign(readable, { id: 0n }) as ReceiveStream,
    writable: Object.assign(writable, { id: 0n }) as SendStream,
  };
}

/** Serves one request stream with `handler`; resolves with what it answered. */
async function serve(
  stream: BidiStream,
  handler: (req: IncomingRequest) => Promise<OutgoingResponse>,
): Promise<number> {
  const dec = new QpackDecoder({ maxTableCapacity: 0, maxBlockedStreams: 0 });
  let status = 0;
  const ctx: StreamContext = {
    opts: {
      handler,
      maxFieldSectionSize: 16384,
      qpackMaxTableCapacity: 0,
      qpackBlockedStreams: 0,
      maxRequestBodyBytes: 1 << 30,
      requestIdleTimeoutMs: 10_000,
      hooks: { requestDone: (r) => status = r.status },
    },
    remote: { hostname: "127.0.0.1", port: 1 },
    closed: false,
    decodeHeaders: (id, block) => dec.decodeSection(id, block) as Array<[string, string]>,
    cancelBlocked() {},
    sectionSkipped() {},
    encodeSection: (fields) => enc.encodeSection(fields),
  };
  await serveRequest(stream, 0, ctx, new AbortController());
  return status;
}

/** Reads a body with fresh views of varying sizes (a BYOB reader), keeping every one. */
async function holdByob(body: ReadableStream<Uint8Array>): Promise<Uint8Array[]> {
  const reader = body.getReader({ mode: "byob" });
  const held: Uint8Array[] = [];
  const sizes = [700, 3000, 64 * 1024, 1];
  for (let i = 0;; i++) {
    const r = await reader.read(new Uint8Array(sizes[i % sizes.length]));
    if (r.done) return held;
    held.push(r.value);
  }
}

/** Reads a body with the default reader, keeping every chunk (as `readUpTo` does). */
async function holdDefault(body: ReadableStream<Uint8Array>): Promise<Uint8Array[]> {
  const held: Uint8Array[] = [];
  for await (const chunk of body) held.push(chunk);
  return held;
}

const POST: Array<[string, string]> = [
  [":method", "POST"],
  [":scheme", "https"],
  [":authority", "example.test"],
  [":path", "/upload"],
];
const TRAILERS: Array<[string, string]> = [["x-checksum", "abc"]];
const BODY = bodyOf(300_000);

/** How a case reads the body: into its own buffers, with the default reader, or (declared small) whole. */
const MODES = {
  byob: { what: "into the reader's own buffers", body: BODY, declared: false },
  default: { what: "with the default reader", body: BODY, declared: false },
  small: {
    what: "whole (declared to fit one read)",
    body: BODY.subarray(0, 60_000),
    declared: true,
  },
} as const;

for (const mode of ["byob", "default", "small"] as const) {
  const { what, body, declared } = MODES[mode];
  Deno.test(`#29: a request body read ${what} and held whole is intact however the reads cut its frames (trailers included)`, async () => {
    const stats: ReadStats = { reads: 0, reused: 0 };
    let held: Uint8Array[] = [];
    let trailers: Array<[string, string]> | null = null;
    const head: Array<[string, string]> = declared
      ? [...POST, ["content-length", String(body.length)]]
      : POST;
    const status = await serve(
      quicStream(requestBytes(head, body, TRAILERS), stats),
      async (req) => {
        held = await (mode === "byob" ? holdByob : holdDefault)(req.body!);
        trailers = req.trailers?.() ?? null;
        return { status: 200, headers: [], body: null };
      },
    );
    assert.equal(status, 200);
    // Checked only now, after every read: a buffer reused under a chunk shows here.
    assert.deepEqual(concatBytes(...held), body);
    assert.deepEqual(trailers, TRAILERS);
    if (mode === "byob") {
      // The body copied out: the stream reads into one buffer (all but a few reads).
      assert.ok(stats.reused > stats.reads * 0.9, `${stats.reused} of ${stats.reads} reads reused`);
    }
  });
}

Deno.test("#29: a tunnel's side (extended CONNECT) held whole is intact: its reads never reuse a buffer", async () => {
  const stats: ReadStats = { reads: 0, reused: 0 };
  const connect: Array<[string, string]> = [
    [":method", "CONNECT"],
    [":protocol", "websocket"],
    [":scheme", "https"],
    [":authority", "example.test"],
    [":path", "/chat"],
  ];
  let held: Promise<Uint8Array[]> = Promise.resolve([]);
  const status = await serve(
    quicStream(requestBytes(connect, BODY, null), stats),
    (req) => {
      held = holdDefault(req.body!);
      // The backend's side ends once the client's has been read.
      const down = new ReadableStream<Uint8Array>({
        async pull(c) {
          await held;
          c.close();
        },
      });
      return Promise.resolve({ status: 200, headers: [], body: down });
    },
  );
  assert.equal(status, 200);
  assert.deepEqual(concatBytes(...await held), BODY);
  assert.equal(stats.reused, 0);
});
