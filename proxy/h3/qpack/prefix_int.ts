/**
 * Prefixed integers (RFC 7541 §5.1), as used by every QPACK instruction
 * (RFC 9204 §4.1.1).
 *
 * Values are JavaScript numbers; anything above `Number.MAX_SAFE_INTEGER`
 * (2^53 - 1) is rejected as an implementation limit (RFC 9204 §2.1.5 allows
 * this: such values exceed every limit we would accept anyway).
 *
 * @module
 */

import { H3Code, H3Error, NEED_MORE, type NeedMore } from "../errors.ts";

/** Largest value {@link decodePrefixInt} accepts: 2^53 - 1. */
export const MAX_PREFIX_INT: number = Number.MAX_SAFE_INTEGER;

/** A decoded prefixed integer and the offset just after it. */
export interface PrefixInt {
  /** The integer value. */
  value: number;
  /** Offset of the first byte after the integer. */
  next: number;
}

/**
 * Position after the last integer read by {@link readPrefixInt}. Module state
 * avoids an allocation per integer on the hot path.
 */
export let prefixIntEnd = 0;

/**
 * Fast form of {@link decodePrefixInt} for the codec's hot paths: returns the
 * value (and sets {@link prefixIntEnd}) or -1 when the bytes end early.
 *
 * @throws {H3Error} with `errorCode` (connection scope) on overflow.
 */
export function readPrefixInt(
  bytes: Uint8Array,
  offset: number,
  end: number,
  prefixBits: number,
  errorCode: number,
): number {
  if (offset >= end) return -1;
  const max = (1 << prefixBits) - 1;
  let value = bytes[offset] & max;
  let pos = offset + 1;
  if (value < max) {
    prefixIntEnd = pos;
    return value;
  }
  let scale = 1;
  for (;;) {
    if (pos >= end) return -1;
    const b = bytes[pos++];
    value += (b & 0x7f) * scale;
    if ((b & 0x80) === 0) break;
    scale *= 128;
    if (scale > 2 ** 56) {
      throw new H3Error(errorCode, "connection", "prefixed integer too long");
    }
  }
  if (value > MAX_PREFIX_INT) {
    throw new H3Error(errorCode, "connection", "prefixed integer exceeds 2^53-1");
  }
  prefixIntEnd = pos;
  return value;
}

/**
 * Decode a prefixed integer whose first byte is `bytes[offset]` and whose
 * prefix is the low `prefixBits` (1..8) bits of that byte.
 *
 * Returns {@link NEED_MORE} when the bytes end before the integer does.
 *
 * @throws {H3Error} with `errorCode` (default QPACK_DECOMPRESSION_FAILED,
 * connection scope) when the value exceeds {@link MAX_PREFIX_INT}.
 *
 * @example
 * ```ts
 * decodePrefixInt(new Uint8Array([0x1f, 0x9a, 0x0a]), 0, 5); // { value: 1337, next: 3 }
 * ```
 */
export function decodePrefixInt(
  bytes: Uint8Array,
  offset: number,
  prefixBits: number,
  errorCode: number = H3Code.QPACK_DECOMPRESSION_FAILED,
): PrefixInt | NeedMore {
  const value = readPrefixInt(bytes, offset, bytes.length, prefixBits, errorCode);
  if (value < 0) return NEED_MORE;
  return { value, next: prefixIntEnd };
}

/** Number of bytes the prefixed encoding of `value` takes. */
export function prefixIntLength(value: number, prefixBits: number): number {
  const max = (1 << prefixBits) - 1;
  if (value < max) return 1;
  let n = 2;
  value -= max;
  while (value >= 128) {
    value = Math.floor(value / 128);
    n++;
  }
  return n;
}

/**
 * Write `value` with a `prefixBits` prefix into `out` at `offset`, OR-ing
 * `flags` into the first byte; returns the offset after the integer.
 */
export function writePrefixInt(
  out: Uint8Array,
  offset: number,
  value: number,
  prefixBits: number,
  flags: number,
): number {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(`prefixed integer out of range: ${value}`);
  }
  const max = (1 << prefixBits) - 1;
  if (value < max) {
    out[offset] = flags | value;
    return offset + 1;
  }
  out[offset++] = flags | max;
  value -= max;
  while (value >= 128) {
    out[offset++] = (value % 128) | 0x80;
    value = Math.floor(value / 128);
  }
  out[offset++] = value;
  return offset;
}

/**
 * Encode `value` as a prefixed integer with a `prefixBits` (1..8) prefix; the
 * bits above the prefix in the first byte are `flags`.
 *
 * @example
 * ```ts
 * encodePrefixInt(1337, 5); // 1f 9a 0a (RFC 7541 C.1.2)
 * ```
 */
export function encodePrefixInt(value: number, prefixBits: number, flags = 0): Uint8Array {
  const out = new Uint8Array(prefixIntLength(value, prefixBits));
  writePrefixInt(out, 0, value, prefixBits, flags);
  return out;
}
