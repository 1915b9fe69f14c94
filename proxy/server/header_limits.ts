/**
 * The two bounds on a request's HEADERS frame, derived from the field
 * section size limit the server advertises (SETTINGS_MAX_FIELD_SECTION_SIZE,
 * `limits.max_header_list_size`):
 *
 * - **431 without decoding**: a frame longer than the limit plus 1 KiB (at
 *   least 16 KiB) cannot hold a section within the limit, since a field line
 *   encodes to fewer bytes than it counts for (its name and value plus 32,
 *   RFC 9114 §4.2.2) unless an encoder picks a Huffman code longer than the
 *   literal. It is skipped as it arrives, never buffered nor given to QPACK,
 *   and its stream alone is answered 431 (a stream error, RFC 9114 §4.2.2,
 *   §10.5.1). A smaller section over the limit is decoded and answered 431 too.
 * - **connection closed**: a frame longer than 16 times the limit (at least
 *   1 MiB) is no client misjudging the limit (even the longest Huffman codes
 *   make a section at most about 4 times its size): it is treated as abuse
 *   (RFC 9114 §10.5) and the connection is closed with H3_EXCESSIVE_LOAD
 *   (0x107), the code for a peer "generating excessive load" (§8.1). Not
 *   H3_FRAME_ERROR: the frame is well formed, only larger than this server
 *   accepts. The whole frame is refused as soon as its header is read.
 *
 * @example
 * ```ts
 * headersFrameLimits(16_384); // { skipAbove: 17_408, closeAbove: 1_048_576 }
 * ```
 *
 * @module
 */

/** The HEADERS frame sizes above which a request gets 431 undecoded, or its connection closes. */
export interface HeadersFrameLimits {
  /** Longest HEADERS payload decoded; a longer one is skipped and answered 431. */
  readonly skipAbove: number;
  /** Longest HEADERS payload tolerated at all; a longer one closes the connection. */
  readonly closeAbove: number;
}

/** Both bounds for a field section limit of `maxFieldSectionSize` bytes. */
export function headersFrameLimits(maxFieldSectionSize: number): HeadersFrameLimits {
  const skipAbove = Math.min(Math.max(maxFieldSectionSize + 1024, 16 * 1024), MAX_SAFE);
  const closeAbove = Math.min(Math.max(16 * maxFieldSectionSize, 1024 * 1024), MAX_SAFE);
  return { skipAbove, closeAbove: Math.max(closeAbove, skipAbove) };
}

const MAX_SAFE = Number.MAX_SAFE_INTEGER;
