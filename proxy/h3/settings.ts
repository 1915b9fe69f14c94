/**
 * The SETTINGS frame payload (RFC 9114 §7.2.4).
 *
 * @module
 */

import { H3Code, H3Error, NEED_MORE } from "./errors.ts";
import { decodeVarint, decodeVarintBig, varintLength, writeVarint } from "./varint.ts";

/** Setting identifiers this codec knows (RFC 9114 §7.2.4.1, RFC 9204 §5, RFC 9220 §3, RFC 9297 §2.1.1). */
export const SettingId = {
  QPACK_MAX_TABLE_CAPACITY: 0x1,
  MAX_FIELD_SECTION_SIZE: 0x6,
  QPACK_BLOCKED_STREAMS: 0x7,
  ENABLE_CONNECT_PROTOCOL: 0x8,
  H3_DATAGRAM: 0x33,
} as const;

/**
 * Settings as identifier → value. Unknown identifiers are kept. Values above
 * 2^53 - 1 are approximate (see `varint.ts`).
 */
export type Settings = Map<number, number>;

/** HTTP/2 setting identifiers that are reserved in HTTP/3 (RFC 9114 §7.2.4.1, §11.2.2). */
const HTTP2_RESERVED = new Set([0x0, 0x2, 0x3, 0x4, 0x5]);

/** Settings whose only legal values are 0 and 1 (RFC 9220 §3, RFC 9297 §2.1.1). */
const BOOLEAN_SETTINGS = new Set<number>([
  SettingId.ENABLE_CONNECT_PROTOCOL,
  SettingId.H3_DATAGRAM,
]);

/** Whether `id` is one of the reserved "grease" identifiers 0x1f * N + 0x21 (RFC 9114 §7.2.4.1). */
export function isReservedSettingId(id: number | bigint): boolean {
  const big = BigInt(id);
  return big >= 0x21n && (big - 0x21n) % 0x1fn === 0n;
}

/**
 * Decodes a SETTINGS frame payload.
 *
 * Connection errors (all thrown as {@link H3Error}):
 * - H3_FRAME_ERROR: the payload ends inside an identifier/value pair (RFC 9114 §7.1, §7.2.4).
 * - H3_SETTINGS_ERROR: an identifier appears twice, an HTTP/2-only identifier
 *   (0x0, 0x2–0x5) appears (RFC 9114 §7.2.4, §7.2.4.1), or
 *   ENABLE_CONNECT_PROTOCOL / H3_DATAGRAM has a value other than 0 or 1
 *   (RFC 9220 §3, RFC 9297 §2.1.1).
 *
 * Unknown identifiers are kept in the result. Identifiers above 2^53 - 1 are
 * still checked for duplicates exactly but are left out of the map, since a
 * `number` cannot name them.
 */
export function decodeSettings(payload: Uint8Array): Settings {
  const settings: Settings = new Map();
  let bigIds: Set<bigint> | undefined;
  let offset = 0;
  while (offset < payload.length) {
    const id = decodeVarint(payload, offset);
    if (id === NEED_MORE) throw truncated();
    const value = decodeVarint(payload, offset + id.length);
    if (value === NEED_MORE) throw truncated();
    if (id.value > Number.MAX_SAFE_INTEGER) {
      const exact = decodeVarintBig(payload, offset);
      if (exact === NEED_MORE) throw truncated();
      bigIds ??= new Set();
      if (bigIds.has(exact.value)) throw duplicate(exact.value);
      bigIds.add(exact.value);
    } else {
      if (HTTP2_RESERVED.has(id.value)) {
        throw new H3Error(
          H3Code.SETTINGS_ERROR,
          "connection",
          `HTTP/2 setting identifier 0x${id.value.toString(16)} received in HTTP/3 SETTINGS`,
        );
      }
      if (settings.has(id.value)) throw duplicate(id.value);
      if (BOOLEAN_SETTINGS.has(id.value) && value.value > 1) {
        throw new H3Error(
          H3Code.SETTINGS_ERROR,
          "connection",
          `setting 0x${id.value.toString(16)} must be 0 or 1, got ${value.value}`,
        );
      }
      settings.set(id.value, value.value);
    }
    offset += id.length + value.length;
  }
  return settings;
}

function truncated(): H3Error {
  return new H3Error(H3Code.FRAME_ERROR, "connection", "truncated SETTINGS frame payload");
}

function duplicate(id: number | bigint): H3Error {
  return new H3Error(
    H3Code.SETTINGS_ERROR,
    "connection",
    `duplicate setting identifier 0x${id.toString(16)}`,
  );
}

/**
 * Encodes settings as a SETTINGS frame payload (without the frame header), in
 * the map's iteration order. Throws `RangeError` for HTTP/2-only identifiers or
 * values that do not fit a varint.
 */
export function encodeSettings(settings: Settings): Uint8Array {
  let size = 0;
  for (const [id, value] of settings) {
    if (HTTP2_RESERVED.has(id)) {
      throw new RangeError(`setting identifier 0x${id.toString(16)} is reserved for HTTP/2`);
    }
    size += varintLength(id) + varintLength(value);
  }
  const out = new Uint8Array(size);
  let offset = 0;
  for (const [id, value] of settings) {
    offset = writeVarint(out, offset, id);
    offset = writeVarint(out, offset, value);
  }
  return out;
}
