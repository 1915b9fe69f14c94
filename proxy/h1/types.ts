/**
 * What the HTTP/1.1 response parser takes and reports: its limits, its
 * events, and how a response's content is delimited.
 *
 * @module
 */

import type { FieldLine, ResponseHead } from "../http/mod.ts";

/** Limits of `H1ResponseParser`; every field has a default. */
export interface H1ParserOptions {
  /** Largest head (status line, fields, blank line), and largest trailer section (default 64 KiB). */
  maxHeadBytes?: number;
  /** Most field lines in one head or trailer section (default 128). */
  maxFields?: number;
  /** Longest chunk-size line, extensions included (default 4,096 bytes). */
  maxChunkLineBytes?: number;
  /** Most informational (1xx) responses before the final one (default 8). */
  maxInformational?: number;
}

/** The defaults of {@link H1ParserOptions}. */
export const H1_DEFAULTS: Readonly<Required<H1ParserOptions>> = {
  maxHeadBytes: 64 * 1024,
  maxFields: 128,
  maxChunkLineBytes: 4096,
  maxInformational: 8,
};

/**
 * How the content of a final response is delimited (RFC 9112 §6.3):
 * `none` (HEAD, 1xx, 204, 304), `length` (Content-Length), `chunked`, or
 * `close` (until the connection closes: never reusable).
 */
export type H1Framing = "none" | "length" | "chunked" | "close";

/**
 * Why a response cannot be trusted: `protocol` when the bytes are no
 * HTTP/1.x message (syntax, framing, a bound exceeded, the connection closed
 * too early), `invalid_response` when they are one but its head breaks HTTP's
 * rules (status, fields, conflicting framing). Either way the exchange is a
 * 502 of that backend and the connection is closed.
 */
export type H1ErrorKind = "protocol" | "invalid_response";

/** A final response head, as the parser hands it over. */
export interface H1ResponseHead extends ResponseHead {
  /** `1.0` or `1.1` (a later HTTP/1.x minor version counts as 1.1). */
  version: "1.0" | "1.1";
  /** The reason phrase (informative only, RFC 9112 §4). */
  reason: string;
  /** How the content is delimited. */
  framing: H1Framing;
}

/** What the parser reports, in the order the bytes said it. */
export type H1Event =
  /** An interim response (100, 103, …) before the final one; fields stripped of hop-by-hop ones. */
  | { type: "informational"; status: number; fields: FieldLine[] }
  /**
   * 101 Switching Protocols, or a 2xx answer to CONNECT: the connection now
   * carries another protocol, `rest` its first bytes. The parser is done.
   * `fields` are the end-to-end ones; `upgrade` and `connection` the tokens
   * of those fields (lowercased), which a client checks (RFC 6455 §4.1).
   */
  | {
    type: "upgrade";
    status: number;
    fields: FieldLine[];
    upgrade: string[];
    connection: string[];
    rest: Uint8Array;
  }
  /** The final response head (fields stripped of connection-specific and hop-by-hop ones). */
  | { type: "head"; head: H1ResponseHead }
  /** Content bytes: a view into the bytes given to `push`, valid as long as they are. */
  | { type: "data"; data: Uint8Array }
  /** The trailer section of a chunked response (only when it has fields). */
  | { type: "trailers"; fields: FieldLine[] }
  /**
   * The response is complete; `keepAlive`: it lets the connection persist
   * (RFC 9112 §9.3). Bytes arriving after it (an `excess` event) still make
   * the connection unfit for reuse: the parser's `reusable` has the last word.
   */
  | { type: "end"; keepAlive: boolean }
  /** Bytes outside any response (after its end): the connection is never reused. */
  | { type: "excess"; length: number }
  /** The response cannot be trusted (a 502 of that backend); the parser is done. */
  | { type: "error"; kind: H1ErrorKind; reason: string };
