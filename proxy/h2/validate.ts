/**
 * Response field validation (RFC 9113 §8.1.1, §8.2, §8.3.2): what makes a
 * response malformed, which the client treats as a stream error
 * PROTOCOL_ERROR. Pure functions, no I/O.
 *
 * @module
 */

import type { FieldLine } from "./hpack.ts";

/** Connection-specific fields (RFC 9113 §8.2.2): never valid in HTTP/2. */
const CONNECTION_SPECIFIC = new Set([
  "connection",
  "proxy-connection",
  "keep-alive",
  "transfer-encoding",
  "upgrade",
]);

/** Why a name is invalid (RFC 9113 §8.2.1), or null. */
function badName(name: string): string | null {
  if (name.length === 0) return "empty field name";
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c <= 0x20 || (c >= 0x41 && c <= 0x5a) || c >= 0x7f) {
      return c >= 0x41 && c <= 0x5a
        ? `uppercase field name ${JSON.stringify(name)}`
        : `invalid character 0x${c.toString(16)} in field name`;
    }
    if (c === 0x3a && i > 0) return "colon inside a field name";
  }
  return null;
}

/** Why a value is invalid (RFC 9113 §8.2.1), or null. */
function badValue(value: string): string | null {
  const n = value.length;
  if (n === 0) return null;
  for (let i = 0; i < n; i++) {
    const c = value.charCodeAt(i);
    if (c === 0 || c === 0x0a || c === 0x0d) {
      return `invalid character 0x${c.toString(16)} in a field value`;
    }
  }
  const first = value.charCodeAt(0);
  const last = value.charCodeAt(n - 1);
  if (first === 0x20 || first === 0x09 || last === 0x20 || last === 0x09) {
    return "field value with leading or trailing whitespace";
  }
  return null;
}

/** A validated response head. */
export interface ResponseHead {
  /** `:status`. */
  status: number;
  /** Regular fields in order (pseudo-headers removed). */
  headers: FieldLine[];
  /** The declared `content-length`, or -1. */
  contentLength: number;
}

/**
 * Validates a response header section (RFC 9113 §8.3.2): exactly one
 * `:status` of three digits, first; no other pseudo-header; valid names and
 * values; no connection-specific field; agreeing `content-length` values.
 * Returns the head or the reason it is malformed.
 */
export function validateResponseHead(fields: FieldLine[]): ResponseHead | string {
  let status = -1;
  let contentLength = -1;
  const headers: FieldLine[] = [];
  for (let i = 0; i < fields.length; i++) {
    const [name, value] = fields[i];
    if (name.charCodeAt(0) === 0x3a) {
      if (name !== ":status") return `pseudo-header ${name} in a response`;
      if (status >= 0) return "repeated :status";
      if (headers.length > 0) return ":status after a regular field";
      if (!/^[0-9]{3}$/.test(value)) return `:status ${JSON.stringify(value)} is not three digits`;
      status = Number(value);
      // RFC 9110 §15: status codes are 100-599 (a 0xx would pass for informational).
      if (status < 100 || status > 599) return `:status ${value} outside 100-599`;
      continue;
    }
    const why = badName(name) ?? badValue(value);
    if (why !== null) return why;
    if (CONNECTION_SPECIFIC.has(name)) return `connection-specific field ${name}`;
    if (name === "content-length") {
      if (!/^[0-9]{1,15}$/.test(value)) return `invalid content-length ${JSON.stringify(value)}`;
      const n = Number(value);
      if (contentLength >= 0 && contentLength !== n) return "content-length values disagree";
      contentLength = n;
    }
    headers.push(fields[i]);
  }
  if (status < 0) return "response without :status";
  return { status, headers, contentLength };
}

/** Validates a trailer section (RFC 9113 §8.1): no pseudo-header, valid fields. */
export function validateTrailers(fields: FieldLine[]): string | null {
  for (const [name, value] of fields) {
    if (name.charCodeAt(0) === 0x3a) return `pseudo-header ${name} in trailers`;
    const why = badName(name) ?? badValue(value);
    if (why !== null) return why;
    if (CONNECTION_SPECIFIC.has(name)) return `connection-specific field ${name}`;
  }
  return null;
}
