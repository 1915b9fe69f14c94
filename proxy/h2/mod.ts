/**
 * A sans-IO HTTP/2 client codec (RFC 9113) with HPACK (RFC 7541): no
 * sockets, no timers, no `Deno.*`; a peer's violation is an event, never an
 * exception. It keeps the wire format (frames, settings, flow control,
 * stream states); what makes a response well formed is `proxy/http/`'s.
 * The transport on it is in `proxy/upstream/`.
 *
 * @module
 */

export { H2ClientConnection } from "./connection.ts";
export type { H2ConnectionOptions, H2Event, OpenRefusal, OpenResult } from "./types.ts";
export { CLIENT_PREFACE, Flag, FrameType } from "./frames.ts";
export { SettingId } from "./settings.ts";
export { type ConnectionCredit, DEFAULT_WINDOW, MAX_WINDOW } from "./flow_control.ts";
export { nextState, type StreamEvent, type StreamState } from "./stream.ts";
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
