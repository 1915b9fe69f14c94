/**
 * QPACK (RFC 9204): field compression for HTTP/3, sans-IO.
 *
 * @example
 * ```ts
 * import { QpackDecoder, QpackEncoder } from "./mod.ts";
 *
 * const block = new QpackEncoder().encodeSection([[":status", "200"], ["server", "spooky"]]);
 * const decoder = new QpackDecoder({ maxTableCapacity: 0, maxBlockedStreams: 0 });
 * decoder.decodeSection(0, block); // [[":status", "200"], ["server", "spooky"]]
 * ```
 *
 * @module
 */

export {
  BLOCKED,
  decodeRequiredInsertCount,
  FieldSectionTooLargeError,
  QpackDecoder,
} from "./decoder.ts";
export type { Blocked, FieldLine, QpackDecoderOptions, UnblockedSection } from "./decoder.ts";
export { H3Error, type H3ErrorScope, NEED_MORE, type NeedMore } from "../errors.ts";
export { QpackEncoder } from "./encoder.ts";
export type { QpackEncoderOptions } from "./encoder.ts";
export type { HuffmanChoice } from "../../hpack_common/mod.ts";
export { DynamicTable, ENTRY_OVERHEAD } from "./dynamic_table.ts";
export { STATIC_TABLE, staticIndexOf, staticLookup, staticNameIndexOf } from "./static_table.ts";
export {
  HUFFMAN_TABLE,
  huffmanDecode,
  HuffmanDecodeError,
  huffmanEncode,
  huffmanEncodedLength,
} from "../../hpack_common/huffman.ts";
export {
  decodePrefixInt,
  encodePrefixInt,
  MAX_PREFIX_INT,
  prefixIntLength,
  writePrefixInt,
} from "./prefix_int.ts";
export type { PrefixInt } from "./prefix_int.ts";
