/**
 * QUIC variable-length integers (RFC 9000 §16), as used by every HTTP/3 frame
 * header and by SETTINGS, GOAWAY, MAX_PUSH_ID and CANCEL_PUSH payloads.
 *
 * Decoding returns a `number`. Values above 2^53 - 1 (only possible with the
 * 8-byte form) lose precision; that is acceptable for skipping reserved frame
 * or stream types, and every caller that needs an exact identifier bounds it
 * first. Use {@link decodeVarintBig} when the exact value matters.
 *
 * @module
 */

import { NEED_MORE, type NeedMore } from "./errors.ts";

/** Largest value a QUIC varint can carry: 2^62 - 1. */
export const VARINT_MAX: bigint = (1n << 62n) - 1n;

const TWO_POW_32 = 0x1_0000_0000;
const TWO_POW_62 = 2 ** 62;

/** A decoded varint: its value and how many bytes it took. */
export interface DecodedVarint {
  /** The decoded value. */
  value: number;
  /** Bytes the encoding took: 1, 2, 4 or 8. */
  length: number;
}

/**
 * Decodes the varint starting at `offset`, or returns {@link NEED_MORE} when
 * `buf` ends before it does.
 */
export function decodeVarint(buf: Uint8Array, offset: number): DecodedVarint | NeedMore {
  if (offset >= buf.length) return NEED_MORE;
  const first = buf[offset];
  const prefix = first >> 6;
  if (prefix === 0) return { value: first, length: 1 };
  const length = 1 << prefix;
  if (offset + length > buf.length) return NEED_MORE;
  if (prefix === 1) return { value: ((first & 0x3f) << 8) | buf[offset + 1], length: 2 };
  if (prefix === 2) {
    const value = (((first & 0x3f) << 24) | (buf[offset + 1] << 16) | (buf[offset + 2] << 8) |
      buf[offset + 3]) >>> 0;
    return { value, length: 4 };
  }
  const hi = (((first & 0x3f) << 24) | (buf[offset + 1] << 16) | (buf[offset + 2] << 8) |
    buf[offset + 3]) >>> 0;
  const lo = ((buf[offset + 4] << 24) | (buf[offset + 5] << 16) | (buf[offset + 6] << 8) |
    buf[offset + 7]) >>> 0;
  return { value: hi * TWO_POW_32 + lo, length: 8 };
}

/** Like {@link decodeVarint} but exact for every value up to 2^62 - 1. */
export function decodeVarintBig(
  buf: Uint8Array,
  offset: number,
): { value: bigint; length: number } | NeedMore {
  if (offset >= buf.length) return NEED_MORE;
  const length = 1 << (buf[offset] >> 6);
  if (offset + length > buf.length) return NEED_MORE;
  let value = BigInt(buf[offset] & 0x3f);
  for (let i = 1; i < length; i++) value = (value << 8n) | BigInt(buf[offset + i]);
  return { value, length };
}

function checkValue(value: number | bigint): void {
  if (typeof value === "bigint") {
    if (value < 0n || value > VARINT_MAX) throw new RangeError(`varint out of range: ${value}`);
    return;
  }
  if (!Number.isInteger(value) || value < 0 || value >= TWO_POW_62) {
    throw new RangeError(`varint out of range: ${value}`);
  }
}

/**
 * The encoded size (1, 2, 4 or 8) of `value`. Throws `RangeError` for values
 * that are negative, not integers, or >= 2^62.
 */
export function varintLength(value: number | bigint): number {
  checkValue(value);
  if (typeof value === "bigint") {
    if (value < 0x40n) return 1;
    if (value < 0x4000n) return 2;
    if (value < 0x4000_0000n) return 4;
    return 8;
  }
  if (value < 0x40) return 1;
  if (value < 0x4000) return 2;
  if (value < 0x4000_0000) return 4;
  return 8;
}

/**
 * Writes the shortest encoding of `value` into `buf` at `offset` and returns
 * the offset just past it. Throws `RangeError` when the value is out of range
 * or `buf` is too short.
 */
export function writeVarint(buf: Uint8Array, offset: number, value: number | bigint): number {
  const length = varintLength(value);
  if (offset < 0 || offset + length > buf.length) {
    throw new RangeError("buffer too small for varint");
  }
  if (length === 8) {
    const big = BigInt(value);
    const hi = Number(big >> 32n);
    const lo = Number(big & 0xffff_ffffn);
    buf[offset] = 0xc0 | (hi >>> 24);
    buf[offset + 1] = hi >>> 16;
    buf[offset + 2] = hi >>> 8;
    buf[offset + 3] = hi;
    buf[offset + 4] = lo >>> 24;
    buf[offset + 5] = lo >>> 16;
    buf[offset + 6] = lo >>> 8;
    buf[offset + 7] = lo;
    return offset + 8;
  }
  const v = Number(value);
  if (length === 1) {
    buf[offset] = v;
    return offset + 1;
  }
  if (length === 2) {
    buf[offset] = 0x40 | (v >> 8);
    buf[offset + 1] = v;
    return offset + 2;
  }
  buf[offset] = 0x80 | (v >>> 24);
  buf[offset + 1] = v >>> 16;
  buf[offset + 2] = v >>> 8;
  buf[offset + 3] = v;
  return offset + 4;
}

/** The shortest encoding of `value`. Throws `RangeError` for values >= 2^62. */
export function encodeVarint(value: number | bigint): Uint8Array {
  const out = new Uint8Array(varintLength(value));
  writeVarint(out, 0, value);
  return out;
}
