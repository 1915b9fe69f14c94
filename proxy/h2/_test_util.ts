/**
 * Test helpers: frames a test plays as the server, and a reader of the
 * frames the client wrote.
 *
 * @module
 */

import { HpackEncoder } from "./hpack.ts";

/** One raw frame. */
export function frame(
  type: number,
  flags: number,
  stream: number,
  payload: Uint8Array | number[] = [],
): Uint8Array {
  const p = payload instanceof Uint8Array ? payload : new Uint8Array(payload);
  const out = new Uint8Array(9 + p.length);
  out[0] = (p.length >>> 16) & 0xff;
  out[1] = (p.length >>> 8) & 0xff;
  out[2] = p.length & 0xff;
  out[3] = type;
  out[4] = flags;
  new DataView(out.buffer).setUint32(5, stream);
  out.set(p, 9);
  return out;
}

/** A SETTINGS frame of `[id, value]` pairs. */
export function settings(pairs: Array<[number, number]> = [], ack = false): Uint8Array {
  const p = new Uint8Array(pairs.length * 6);
  const v = new DataView(p.buffer);
  pairs.forEach(([id, value], i) => {
    v.setUint16(i * 6, id);
    v.setUint32(i * 6 + 2, value);
  });
  return frame(4, ack ? 1 : 0, 0, p);
}

/** A 4-byte big-endian payload. */
export function u32(n: number): Uint8Array {
  const p = new Uint8Array(4);
  new DataView(p.buffer).setUint32(0, n);
  return p;
}

/** A HEADERS frame (END_HEADERS) with the fields HPACK-encoded. */
export function headers(
  stream: number,
  fields: Array<[string, string]>,
  endStream = false,
): Uint8Array {
  const block = new HpackEncoder({ huffman: false }).encode(fields);
  return frame(1, 0x4 | (endStream ? 1 : 0), stream, block);
}

/** A parsed frame the client wrote. */
export interface Written {
  type: number;
  flags: number;
  stream: number;
  payload: Uint8Array;
}

/** Splits client output (after the 24-byte preface, when `preface`) into frames. */
export function parseFrames(bytes: Uint8Array, preface = false): Written[] {
  const out: Written[] = [];
  let p = preface ? 24 : 0;
  while (p + 9 <= bytes.length) {
    const len = (bytes[p] << 16) | (bytes[p + 1] << 8) | bytes[p + 2];
    out.push({
      type: bytes[p + 3],
      flags: bytes[p + 4],
      stream: new DataView(bytes.buffer, bytes.byteOffset).getUint32(p + 5) & 0x7fffffff,
      payload: bytes.slice(p + 9, p + 9 + len),
    });
    p += 9 + len;
  }
  return out;
}

/** Concatenates byte arrays. */
export function cat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
