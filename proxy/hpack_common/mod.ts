/**
 * What HPACK (RFC 7541, HTTP/2) and QPACK (RFC 9204, HTTP/3) share: the
 * static Huffman code, prefixed integers, byte strings and the writer of
 * integers and string literals. Sans-IO, no `Deno.*`; imported by
 * `proxy/h2/` and `proxy/h3/qpack/`, importing nothing outside itself.
 *
 * @module
 */

export * from "./huffman.ts";
export * from "./prefix_int.ts";
export { ByteWriter, type HuffmanChoice, latin1 } from "./bytes.ts";
