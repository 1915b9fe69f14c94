/**
 * What an HTTP/1.x response head means (RFC 9112 §6, §9.3): the fields that
 * concern only this connection are taken out (connection-specific, hop-by-hop
 * and those the Connection field names, RFC 9110 §7.6.1), the content's
 * framing is decided by RFC 9112 §6.3 in order, and whether the connection
 * stays open. Strict where smuggling lives: Content-Length with
 * Transfer-Encoding, differing Content-Lengths, a transfer coding other than
 * `chunked`, or Transfer-Encoding in an HTTP/1.0 response reject the head.
 *
 * @module
 */

import {
  type FieldLine,
  fieldTokens,
  HOP_BY_HOP,
  mergeContentLength,
  responseFieldsError,
  responseHasNoBody,
  validateResponseHead,
} from "../http/mod.ts";
import type { StatusLine } from "./section.ts";
import type { H1Framing } from "./types.ts";

/** A head's meaning for this connection. */
export interface HeadMeaning {
  /** The fields to hand on: no connection-specific or hop-by-hop ones. */
  fields: FieldLine[];
  /** The declared Content-Length, or -1. */
  contentLength: number;
  /** How the content is delimited (final responses; `none` for 1xx). */
  framing: H1Framing;
  /** Whether the connection stays open after this response (RFC 9112 §9.3). */
  keepAlive: boolean;
}

/** The fields without the ones that concern only this connection (RFC 9110 §7.6.1). */
function endToEnd(fields: readonly FieldLine[], connection: readonly string[]): FieldLine[] {
  return fields.filter(([n]) => !HOP_BY_HOP.has(n) && !connection.includes(n));
}

/** Whether the connection persists after the response (RFC 9112 §9.3). */
function persists(version: StatusLine["version"], connection: readonly string[]): boolean {
  if (connection.includes("close")) return false;
  return version === "1.1" || connection.includes("keep-alive");
}

/**
 * The framing of a final response (RFC 9112 §6.3, in order) or why it is
 * invalid. `codings` are the Transfer-Encoding tokens, `length` the merged
 * Content-Length (-1: none).
 */
function framingOf(
  method: string,
  line: StatusLine,
  codings: readonly string[],
  length: number,
): H1Framing | string {
  if (codings.length > 0 && length >= 0) {
    return "both Content-Length and Transfer-Encoding (RFC 9112 §6.3)";
  }
  if (codings.length > 0 && line.version === "1.0") {
    return "Transfer-Encoding in an HTTP/1.0 response (RFC 9112 §6.1)";
  }
  if (responseHasNoBody(method, line.status)) return "none";
  if (codings.length > 0) {
    if (codings.length !== 1 || codings[0] !== "chunked") {
      return `unsupported transfer coding ${JSON.stringify(codings.join(", "))} (RFC 9112 §6.1)`;
    }
    return "chunked";
  }
  return length >= 0 ? "length" : "close";
}

/** The merged Content-Length of the raw fields (-1: none), or why they disagree. */
function contentLengthOf(fields: readonly FieldLine[]): number | string {
  let length = -1;
  for (const [n, v] of fields) {
    if (n !== "content-length") continue;
    const merged = mergeContentLength(length, v);
    if (typeof merged === "string") return merged;
    length = merged;
  }
  return length;
}

/**
 * Interprets a response head for a request with `method`: its end-to-end
 * fields, validated (a final head as `validateResponseHead`, a 1xx head's
 * fields as `responseFieldsError`), its framing and persistence. Returns the
 * meaning or why the head may not be trusted.
 */
export function interpretHead(
  method: string,
  line: StatusLine,
  raw: readonly FieldLine[],
): HeadMeaning | string {
  if (line.status < 100 || line.status > 599) return `invalid status ${line.status} (RFC 9110 §15)`;
  const contentLength = contentLengthOf(raw);
  if (typeof contentLength === "string") return contentLength;
  const codings = fieldTokens(raw, "transfer-encoding");
  const framing = line.status < 200 ? "none" : framingOf(method, line, codings, contentLength);
  if (line.status < 200 && codings.length > 0) {
    return `Transfer-Encoding in a ${line.status} response (RFC 9112 §6.1)`;
  }
  if (typeof framing === "string" && !isFraming(framing)) return framing;
  const connection = fieldTokens(raw, "connection");
  const fields = endToEnd(raw, connection);
  const checked = line.status < 200
    ? responseFieldsError(fields)
    : validateResponseHead(line.status, fields);
  if (typeof checked === "string") return checked;
  const keepAlive = persists(line.version, connection) && framing !== "close";
  return { fields, contentLength, framing: framing as H1Framing, keepAlive };
}

function isFraming(s: string): s is H1Framing {
  return s === "none" || s === "length" || s === "chunked" || s === "close";
}
