/**
 * A sans-IO HTTP/2 client codec (RFC 9113) with HPACK (RFC 7541): no
 * sockets, no timers, no `Deno.*`; a peer's violation is an event, never an
 * exception. The transport on it is `proxy/upstream/h2_transport.ts`.
 *
 * @module
 */

export {
  CLIENT_PREFACE,
  FrameType,
  H2ClientConnection,
  type H2ConnectionOptions,
  type H2Event,
  type OpenRefusal,
  type OpenResult,
  SettingId,
} from "./connection.ts";
export { H2Code, h2CodeName, type H2ErrorValue } from "./errors.ts";
export {
  type FieldLine,
  HPACK_ENTRY_OVERHEAD,
  HpackDecoder,
  HpackDynamicTable,
  HpackEncoder,
  type HpackFault,
} from "./hpack.ts";
export { HPACK_STATIC_TABLE } from "./static_table.ts";
export { type ResponseHead, validateResponseHead, validateTrailers } from "./validate.ts";
