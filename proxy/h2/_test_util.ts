/**
 * Test helpers: frames a test plays as the server (written by the codec's
 * own {@link FrameWriter}, the one HTTP/2 frame writer of the project), and a
 * reader of the frames the client wrote.
 *
 * @module
 */

import { Flag, FrameType, FrameWriter } from "./frames.ts";
import { HpackEncoder } from "./hpack.ts";

/**
 * One raw frame: a header announcing `length` octets of payload (by default
 * the payload's own length; more, for a truncated frame), then the payload.
 */
export function frame(
  type: number,
  flags: number,
  stream: number,
  payload: Uint8Array | number[] = [],
  length: number = payload.length,
): Uint8Array {
  const w = new FrameWriter();
  w.header(length, type, flags, stream);
  w.bytes(payload instanceof Uint8Array ? payload : new Uint8Array(payload));
  return w.take()!.slice();
}

/** A SETTINGS frame of `[id, value]` pairs, or (`ack`) its acknowledgement. */
export function settings(
  pairs: ReadonlyArray<readonly [number, number]> = [],
  ack = false,
): Uint8Array {
  const w = new FrameWriter();
  if (ack) w.settingsAck();
  else w.settings(pairs);
  return w.take()!.slice();
}

/** A 4-byte big-endian payload (WINDOW_UPDATE increment, RST_STREAM code). */
export function u32(n: number): Uint8Array {
  const p = new Uint8Array(4);
  new DataView(p.buffer).setUint32(0, n >>> 0);
  return p;
}

/** A GOAWAY frame naming `lastStreamId`, with `code` and optional debug data. */
export function goaway(lastStreamId: number, code: number, debug = new Uint8Array(0)): Uint8Array {
  const w = new FrameWriter();
  w.goaway(lastStreamId, code, debug);
  return w.take()!.slice();
}

/** A HEADERS frame (END_HEADERS) with the fields HPACK-encoded. */
export function headers(
  stream: number,
  fields: Array<[string, string]>,
  endStream = false,
): Uint8Array {
  const block = new HpackEncoder({ huffman: false }).encode(fields);
  return frame(
    FrameType.HEADERS,
    Flag.END_HEADERS | (endStream ? Flag.END_STREAM : 0),
    stream,
    block,
  );
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
