/**
 * A sans-IO HTTP/1.1 client codec (RFC 9112): no sockets, no timers, no
 * `Deno.*`; a backend's violation is an event, never an exception. It keeps
 * the wire format (request serialization, the chunk encoder, the incremental
 * response parser with its bounds and framing rules, whether a connection
 * may be reused); what makes a response well formed is `proxy/http/`'s.
 *
 * Strict where smuggling lives: a response with both Content-Length and
 * Transfer-Encoding, differing Content-Lengths, obsolete line folding, a
 * bare CR or a bare LF, an invalid chunk size or extension, a status line
 * that is not HTTP/1.x, or a head over its bounds is an `error` event (a 502
 * of that backend), never a response half trusted. A connection that sent
 * bytes outside a response, or whose response ended with its close, is not
 * reusable.
 *
 * @example
 * ```ts
 * import { H1ResponseParser, serializeRequestHead } from "./mod.ts";
 * const head = { method: "HEAD", authority: "a.example", path: "/", fields: [] };
 * serializeRequestHead(head, { kind: "none" }); // the bytes to write
 * const parser = new H1ResponseParser("HEAD");
 * parser.push(new TextEncoder().encode("HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\n"));
 * parser.reusable; // true: a response to HEAD has no content
 * ```
 *
 * @module
 */

export type { FieldLine, RequestHead, ResponseHead } from "../http/mod.ts";
export { H1ResponseParser } from "./response_parser.ts";
export { type H1RequestHead, parseRequestHead } from "./request_head.ts";
export { encodeChunk, encodeLastChunk, type RequestBody, serializeRequestHead } from "./request.ts";
export {
  H1_DEFAULTS,
  type H1ErrorKind,
  type H1Event,
  type H1Framing,
  type H1ParserOptions,
  type H1ResponseHead,
} from "./types.ts";
