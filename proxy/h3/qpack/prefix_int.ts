/**
 * Prefixed integers (RFC 7541 §5.1) as QPACK uses them (RFC 9204 §4.1.1):
 * the shared code of `proxy/hpack_common/prefix_int.ts`, with a value that
 * does not fit raised as the connection error the caller names.
 *
 * @module
 */

import { H3Code, H3Error, NEED_MORE, type NeedMore } from "../errors.ts";
import {
  MAX_PREFIX_INT,
  PREFIX_INT_NEED_MORE,
  prefixIntEnd,
  readPrefixInt as readShared,
} from "../../hpack_common/prefix_int.ts";

export {
  encodePrefixInt,
  MAX_PREFIX_INT,
  prefixIntEnd,
  prefixIntLength,
  writePrefixInt,
} from "../../hpack_common/prefix_int.ts";

/** A decoded prefixed integer and the offset just after it. */
export interface PrefixInt {
  /** The integer value. */
  value: number;
  /** Offset of the first byte after the integer. */
  next: number;
}

/**
 * Fast form of {@link decodePrefixInt} for the codec's hot paths: returns the
 * value (and sets `prefixIntEnd`) or -1 when the bytes end early.
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
  const value = readShared(bytes, offset, end, prefixBits);
  if (value >= 0 || value === PREFIX_INT_NEED_MORE) return value;
  throw new H3Error(errorCode, "connection", `prefixed integer exceeds 2^53-1 (${MAX_PREFIX_INT})`);
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
