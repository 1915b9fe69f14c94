/**
 * Prefixed integers (RFC 7541 §5.1), shared by HPACK (HTTP/2) and QPACK
 * (RFC 9204 §4.1.1). Sans-IO and exception-free on input: a value that does
 * not fit is returned as {@link PREFIX_INT_TOO_LARGE}, and each codec turns it
 * into its own error.
 *
 * Values are JavaScript numbers; anything above `Number.MAX_SAFE_INTEGER`
 * (2^53 - 1) is rejected as an implementation limit (RFC 7541 §5.1 and RFC
 * 9204 §2.1.5 allow this: such values exceed every limit we accept anyway).
 *
 * @module
 */

/** Largest value {@link readPrefixInt} accepts: 2^53 - 1. */
export const MAX_PREFIX_INT: number = Number.MAX_SAFE_INTEGER;

/** {@link readPrefixInt}: the bytes end before the integer does. */
export const PREFIX_INT_NEED_MORE: -1 = -1;
/** {@link readPrefixInt}: the integer is longer than {@link MAX_PREFIX_INT}. */
export const PREFIX_INT_TOO_LARGE: -2 = -2;

/**
 * Position after the last integer read by {@link readPrefixInt}. Module state
 * avoids an allocation per integer on the hot path.
 */
export let prefixIntEnd = 0;

/**
 * Reads the prefixed integer whose first byte is `bytes[offset]` (prefix: the
 * low `prefixBits` bits, 1..8), looking no further than `end`. Returns the
 * value and sets {@link prefixIntEnd}, or {@link PREFIX_INT_NEED_MORE}, or
 * {@link PREFIX_INT_TOO_LARGE}. Never throws.
 *
 * @example
 * ```ts
 * readPrefixInt(new Uint8Array([0x1f, 0x9a, 0x0a]), 0, 3, 5); // 1337 (prefixIntEnd = 3)
 * ```
 */
export function readPrefixInt(
  bytes: Uint8Array,
  offset: number,
  end: number,
  prefixBits: number,
): number {
  if (offset >= end) return PREFIX_INT_NEED_MORE;
  const max = (1 << prefixBits) - 1;
  let value = bytes[offset] & max;
  let pos = offset + 1;
  if (value < max) {
    prefixIntEnd = pos;
    return value;
  }
  let scale = 1;
  for (;;) {
    if (pos >= end) return PREFIX_INT_NEED_MORE;
    const b = bytes[pos++];
    value += (b & 0x7f) * scale;
    if ((b & 0x80) === 0) break;
    scale *= 128;
    if (scale > 2 ** 56) return PREFIX_INT_TOO_LARGE;
  }
  if (value > MAX_PREFIX_INT) return PREFIX_INT_TOO_LARGE;
  prefixIntEnd = pos;
  return value;
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
 *
 * @throws {RangeError} for a negative or unsafe value (a caller's bug, never input).
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
