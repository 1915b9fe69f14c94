/**
 * Benchmarks of the frame layer's hot path: decoding a request stream
 * (HEADERS + a few DATA frames) delivered in chunks.
 *
 *     deno bench proxy/h3/frames_bench.ts
 */
import { NEED_MORE } from "./errors.ts";
import { concatBytes, encodeFrame, encodeFrameHeader, FrameDecoder, FrameType } from "./frames.ts";
import { RequestStreamParser } from "./streams.ts";

function split(buf: Uint8Array, size: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let i = 0; i < buf.length; i += size) out.push(buf.subarray(i, i + size));
  return out;
}

const body = new Uint8Array(16 * 1024).fill(0x61);
const stream = concatBytes(
  encodeFrame(FrameType.HEADERS, new Uint8Array(200).fill(0x11)),
  encodeFrameHeader(FrameType.DATA, body.length),
  body,
  encodeFrameHeader(FrameType.DATA, body.length),
  body,
  encodeFrameHeader(FrameType.DATA, body.length),
  body,
  encodeFrameHeader(FrameType.DATA, body.length),
  body,
  encodeFrame(FrameType.HEADERS, new Uint8Array(20).fill(0x22)),
);
const packets = split(stream, 1200); // roughly one QUIC packet per chunk
const small = split(stream, 97); // awkward boundaries
const whole = [stream];

function parseRequest(chunks: Uint8Array[]): number {
  const p = new RequestStreamParser();
  let n = 0;
  for (const c of chunks) n += p.push(c).length;
  return n + p.end().length;
}

function decodeFrames(chunks: Uint8Array[]): number {
  const dec = new FrameDecoder();
  let n = 0;
  for (const c of chunks) {
    dec.push(c);
    for (let ev = dec.next(); ev !== NEED_MORE; ev = dec.next()) n++;
  }
  return n;
}

Deno.bench({
  name: "RequestStreamParser: 64 KiB request in 1200-byte chunks",
  group: "request",
  baseline: true,
  fn: () => void parseRequest(packets),
});
Deno.bench({
  name: "RequestStreamParser: 64 KiB request in 97-byte chunks",
  group: "request",
  fn: () => void parseRequest(small),
});
Deno.bench({
  name: "RequestStreamParser: 64 KiB request in one chunk",
  group: "request",
  fn: () => void parseRequest(whole),
});
Deno.bench({
  name: "FrameDecoder: 64 KiB request in 1200-byte chunks",
  group: "decoder",
  fn: () => void decodeFrames(packets),
});

const headersOnly = split(
  concatBytes(
    ...Array.from({ length: 100 }, () => encodeFrame(FrameType.HEADERS, new Uint8Array(300))),
  ),
  1200,
);
Deno.bench({
  name: "FrameDecoder: 100 HEADERS frames of 300 bytes in 1200-byte chunks",
  group: "decoder",
  fn: () => void decodeFrames(headersOnly),
});
