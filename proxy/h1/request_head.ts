/**
 * An HTTP/1.1 request head as a server reads it (RFC 9112 §3, §5): the
 * request line and the field lines of a complete head, with the strict line
 * rules of the response parser (CRLF only, no bare CR, no obs-fold, a bound
 * on bytes and field lines). The proxy reads one itself only where the
 * runtime's HTTP server cannot serve the request: the first request of a
 * TCP fallback connection that asks for a WebSocket (`server/tcp_websocket.ts`).
 *
 * @example
 * ```ts
 * import { parseRequestHead } from "./request_head.ts";
 * const head = parseRequestHead(
 *   new TextEncoder().encode("GET /chat HTTP/1.1\r\nHost: a.example\r\nUpgrade: websocket\r\n\r\n"),
 * );
 * // { method: "GET", target: "/chat", version: "1.1", fields: [["host", "a.example"], …], next: 59 }
 * ```
 *
 * @module
 */

import { type FieldLine, isToken } from "../http/mod.ts";
import { LineReader, NEED_MORE, TOO_LONG } from "./lines.ts";
import { SectionReader } from "./section.ts";
import { H1_DEFAULTS } from "./types.ts";

/** A parsed request head. */
export interface H1RequestHead {
  /** The method, case kept (RFC 9110 §9.1). */
  method: string;
  /** The request target as sent (RFC 9112 §3.2). */
  target: string;
  /** `1.0` or `1.1` (a later 1.x minor version counts as 1.1). */
  version: "1.0" | "1.1";
  /** Field lines in order, names lowercased, values without surrounding whitespace. */
  fields: FieldLine[];
  /** Index just past the head's blank line. */
  next: number;
}

// deno-lint-ignore no-control-regex
const TARGET = /^[^\x00-\x20\x7f]+$/;
const VERSION = /^HTTP\/1\.([0-9])$/;

/**
 * Parses the request head at the start of `bytes` (which must hold it
 * whole, blank line included). Returns it, or why it is malformed.
 */
export function parseRequestHead(bytes: Uint8Array): H1RequestHead | string {
  const limits = { maxBytes: H1_DEFAULTS.maxHeadBytes, maxFields: H1_DEFAULTS.maxFields };
  const line = new LineReader().read(bytes, 0, limits.maxBytes);
  if (line === NEED_MORE) return "incomplete request line";
  if (line === TOO_LONG) return `request line over ${limits.maxBytes} bytes`;
  if (typeof line === "string") return line;
  const parts = line.text.split(" ");
  if (parts.length !== 3) return `malformed request line (RFC 9112 §3)`;
  const [method, target, versionText] = parts;
  if (!isToken(method)) return `invalid method ${JSON.stringify(method.slice(0, 32))}`;
  if (!TARGET.test(target)) return "invalid request target (RFC 9112 §3.2)";
  const version = VERSION.exec(versionText);
  if (version === null) {
    return `not an HTTP/1.x request: ${JSON.stringify(versionText.slice(0, 16))}`;
  }
  const section = new SectionReader(false, limits).read(bytes, line.next);
  if (section === NEED_MORE) return "incomplete request head";
  if (typeof section === "string") return section;
  return {
    method,
    target,
    version: version[1] === "0" ? "1.0" : "1.1",
    fields: section.fields,
    next: section.next,
  };
}
