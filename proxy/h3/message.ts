/**
 * HTTP message validation for HTTP/3 (RFC 9114 §4.1.2, §4.2, §4.3) on decoded
 * field lists. Every violation makes the message malformed and throws
 * {@link MalformedMessageError} (a stream error H3_MESSAGE_ERROR).
 *
 * Field names and values are JavaScript strings as produced by QPACK decoding
 * (one character per octet is expected).
 *
 * @module
 */

import { MalformedMessageError } from "./errors.ts";
import { allowedInTrailers, CONNECTION_SPECIFIC, isToken, TCHAR } from "./fields.ts";

/** A validated request head. */
export interface RequestHead {
  /** `:method`. */
  method: string;
  /** `:scheme` (absent for CONNECT). */
  scheme?: string;
  /** `:authority`. */
  authority?: string;
  /** `:path`, with the query (absent for CONNECT). */
  path?: string;
  /** Extended CONNECT protocol (RFC 9220), e.g. `websocket`. */
  protocol?: string;
  /** Regular fields only, in order. */
  fields: Array<[string, string]>;
  /** The request's Content-Length, when given. */
  contentLength?: number;
}

/** A validated response head. */
export interface ResponseHead {
  /** `:status`. */
  status: number;
  /** Regular fields only, in order. */
  fields: Array<[string, string]>;
  /** The response's Content-Length, when given. */
  contentLength?: number;
}

/** Options of {@link validateRequestFields}. */
export interface RequestValidationOptions {
  /**
   * Accept `:protocol` (extended CONNECT, RFC 9220). Only when this endpoint
   * sent SETTINGS_ENABLE_CONNECT_PROTOCOL = 1. Default false.
   */
  allowExtendedConnect?: boolean;
}

// tchar (RFC 9110 §5.6.2) without uppercase letters: field names must be lowercase (RFC 9114 §4.2).
const NAME_CHAR = TCHAR.slice();
for (let c = 0x41; c <= 0x5a; c++) NAME_CHAR[c] = 0;

const REQUEST_PSEUDO = new Set([":method", ":scheme", ":authority", ":path", ":protocol"]);

const BAD_VALUE_CHAR = /[\0\r\n]/;
/** Other control characters (not HTAB): not field-vchar (RFC 9110 §5.5). */
// deno-lint-ignore no-control-regex
const CTL_VALUE_CHAR = /[\x01-\x08\x0b\x0c\x0e-\x1f\x7f]/;
const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*$/;
const DIGITS = /^[0-9]+$/;
/**
 * An authority a server can act on (RFC 3986 §3.2, no userinfo): an IP
 * literal in brackets, or a host name or IPv4 address of letters, digits and
 * `-._~` (percent-encoded octets allowed), then an optional port of at most
 * five digits. Stricter than the URI grammar's sub-delims on purpose: an
 * authority that a backend's HTTP/2 stack cannot parse is a connection error
 * there (GOAWAY), which would fail every other request sharing the
 * connection.
 */
const AUTHORITY = /^(?:\[[0-9A-Fa-f:.]+\]|(?:[A-Za-z0-9._~-]|%[0-9A-Fa-f]{2})+)(?::[0-9]{0,5})?$/;

function fail(field: string, message: string): never {
  throw new MalformedMessageError(field, message);
}

/** RFC 9114 §4.2: lowercase token characters only. */
function checkName(name: string): void {
  if (name.length === 0) fail(name, "empty field name (RFC 9114 §4.2)");
  if (isToken(name, NAME_CHAR)) return;
  if (isToken(name)) fail(name, `uppercase field name "${name}" (RFC 9114 §4.2)`);
  fail(name, `invalid character in field name ${JSON.stringify(name)} (RFC 9114 §4.2, §10.3)`);
}

/** RFC 9114 §4.2, §10.3 with RFC 9110 §5.5: no NUL/CR/LF or other CTLs but HTAB, no leading/trailing whitespace. */
function checkValue(name: string, value: string): void {
  if (value.length === 0) return;
  if (BAD_VALUE_CHAR.test(value)) {
    fail(name, `NUL, CR or LF in the value of ${name} (RFC 9114 §10.3)`);
  }
  if (CTL_VALUE_CHAR.test(value)) {
    fail(name, `control character in the value of ${name} (RFC 9110 §5.5)`);
  }
  const first = value.charCodeAt(0);
  const last = value.charCodeAt(value.length - 1);
  if (first === 0x20 || first === 0x09 || last === 0x20 || last === 0x09) {
    fail(name, `leading or trailing whitespace in the value of ${name} (RFC 9110 §5.5)`);
  }
}

/**
 * Shared checks for a regular field: name/value syntax, connection-specific
 * fields, TE. Returns nothing; throws on violation.
 */
function checkRegular(name: string, value: string): void {
  checkName(name);
  checkValue(name, value);
  if (CONNECTION_SPECIFIC.has(name)) {
    fail(name, `connection-specific field ${name} (RFC 9114 §4.2)`);
  }
  if (name === "te" && value.toLowerCase() !== "trailers") {
    fail(name, `TE may only be "trailers" (RFC 9114 §4.2)`);
  }
}

/**
 * Folds one Content-Length field value into the running value. Repeated
 * identical values (in separate fields or a comma list) are merged; differing
 * or non-numeric values are malformed (RFC 9110 §8.6, RFC 9114 §4.1.2).
 */
function mergeContentLength(current: number | undefined, value: string): number {
  let result = current;
  for (const part of value.split(",")) {
    const v = part.trim();
    if (!DIGITS.test(v)) fail("content-length", `invalid content-length ${JSON.stringify(value)}`);
    const n = Number(v);
    if (!Number.isSafeInteger(n)) fail("content-length", `content-length too large: ${v}`);
    if (result !== undefined && result !== n) {
      fail("content-length", `conflicting content-length values ${result} and ${n}`);
    }
    result = n;
  }
  return result!;
}

/**
 * Validates a request header section (RFC 9114 §4.1.2, §4.2, §4.3.1, §4.4;
 * RFC 9220 for `:protocol`).
 */
export function validateRequestFields(
  fields: Array<[string, string]>,
  opts: RequestValidationOptions = {},
): RequestHead {
  let method: string | undefined;
  let scheme: string | undefined;
  let authority: string | undefined;
  let path: string | undefined;
  let protocol: string | undefined;
  let host: string | undefined;
  let contentLength: number | undefined;
  const regular: Array<[string, string]> = [];

  for (const [name, value] of fields) {
    if (name.charCodeAt(0) === 0x3a /* ':' */) {
      if (regular.length > 0) {
        fail(name, `pseudo-header ${name} after a regular field (RFC 9114 §4.3)`);
      }
      if (!REQUEST_PSEUDO.has(name) || (name === ":protocol" && !opts.allowExtendedConnect)) {
        fail(name, `pseudo-header ${name} is not allowed in a request (RFC 9114 §4.3)`);
      }
      checkValue(name, value);
      switch (name) {
        case ":method":
          if (method !== undefined) fail(name, "repeated :method (RFC 9114 §4.3.1)");
          method = value;
          break;
        case ":scheme":
          if (scheme !== undefined) fail(name, "repeated :scheme (RFC 9114 §4.3.1)");
          scheme = value;
          break;
        case ":authority":
          if (authority !== undefined) fail(name, "repeated :authority (RFC 9114 §4.3.1)");
          authority = value;
          break;
        case ":path":
          if (path !== undefined) fail(name, "repeated :path (RFC 9114 §4.3.1)");
          path = value;
          break;
        default:
          if (protocol !== undefined) fail(name, "repeated :protocol (RFC 9220 §3)");
          protocol = value;
      }
      continue;
    }
    checkRegular(name, value);
    if (name === "host") {
      if (host !== undefined) fail(name, "repeated host field (RFC 9114 §4.3.1)");
      host = value;
    } else if (name === "content-length") {
      contentLength = mergeContentLength(contentLength, value);
    }
    regular.push([name, value]);
  }

  if (method === undefined) fail(":method", "missing :method (RFC 9114 §4.3.1)");
  if (!isToken(method)) fail(":method", `invalid method ${JSON.stringify(method)}`);

  if (method === "CONNECT" && protocol === undefined) {
    // RFC 9114 §4.4
    if (scheme !== undefined || path !== undefined) {
      fail(
        scheme !== undefined ? ":scheme" : ":path",
        "CONNECT must omit :scheme and :path (RFC 9114 §4.4)",
      );
    }
    if (authority === undefined || authority.length === 0) {
      fail(":authority", "CONNECT needs :authority (RFC 9114 §4.4)");
    }
  } else {
    if (protocol !== undefined && method !== "CONNECT") {
      fail(":protocol", ":protocol is only allowed with CONNECT (RFC 9220 §3)");
    }
    if (scheme === undefined) fail(":scheme", "missing :scheme (RFC 9114 §4.3.1)");
    if (path === undefined) fail(":path", "missing :path (RFC 9114 §4.3.1)");
    if (!SCHEME.test(scheme)) fail(":scheme", `invalid scheme ${JSON.stringify(scheme)}`);
    if (path.length === 0) fail(":path", "empty :path (RFC 9114 §4.3.1)");
    if (path === "*") {
      if (method !== "OPTIONS") fail(":path", `":path *" is only for OPTIONS (RFC 9114 §4.3.1)`);
    } else if (path.charCodeAt(0) !== 0x2f /* '/' */ && isHttpScheme(scheme)) {
      fail(":path", `:path must start with "/" (RFC 9114 §4.3.1)`);
    }
    if (protocol !== undefined && authority === undefined) {
      fail(":authority", "extended CONNECT needs :authority (RFC 9220 §3)");
    }
  }

  if (scheme === undefined || isHttpScheme(scheme)) {
    // RFC 9114 §4.3.1: http/https need :authority or Host, non-empty, equal when both.
    if (authority === undefined && host === undefined) {
      fail(":authority", "request needs :authority or host (RFC 9114 §4.3.1)");
    }
    if (authority !== undefined) {
      if (authority.length === 0) fail(":authority", "empty :authority (RFC 9114 §4.3.1)");
      if (authority.includes("@")) fail(":authority", "userinfo in :authority (RFC 9114 §4.3.1)");
      if (!AUTHORITY.test(authority)) {
        fail(":authority", "not a host[:port] authority (RFC 3986 §3.2)");
      }
    }
    if (host !== undefined) {
      if (host.length === 0) fail("host", "empty host (RFC 9114 §4.3.1)");
      if (!AUTHORITY.test(host)) fail("host", "not a host[:port] authority (RFC 3986 §3.2)");
    }
  }
  if (authority !== undefined && host !== undefined && authority !== host) {
    fail("host", ":authority and host differ (RFC 9114 §4.3.1)");
  }

  const head: RequestHead = { method, fields: regular };
  if (scheme !== undefined) head.scheme = scheme;
  if (authority !== undefined) head.authority = authority;
  if (path !== undefined) head.path = path;
  if (protocol !== undefined) head.protocol = protocol;
  if (contentLength !== undefined) head.contentLength = contentLength;
  return head;
}

function isHttpScheme(scheme: string): boolean {
  const s = scheme.toLowerCase();
  return s === "http" || s === "https";
}

/**
 * Validates a trailer section (RFC 9114 §4.1, §4.3): no pseudo-headers, the
 * same field rules as any section, and none of the fields that must be
 * known before the content (RFC 9110 §6.5.1: `content-length`, `host`,
 * `authorization`, conditionals, …; see `allowedInTrailers`). Returns the
 * fields.
 */
export function validateTrailerFields(fields: Array<[string, string]>): Array<[string, string]> {
  for (const [name, value] of fields) {
    if (name.charCodeAt(0) === 0x3a) {
      fail(name, `pseudo-header ${name} in trailers (RFC 9114 §4.3)`);
    }
    checkRegular(name, value);
    if (!allowedInTrailers(name)) {
      fail(name, `${name} is not allowed in trailers (RFC 9110 §6.5.1)`);
    }
  }
  return fields;
}

/**
 * Validates a response header section (RFC 9114 §4.3.2): exactly one
 * `:status` of three digits, before the regular fields, and no other
 * pseudo-header.
 */
export function validateResponseFields(fields: Array<[string, string]>): ResponseHead {
  let status: string | undefined;
  let contentLength: number | undefined;
  const regular: Array<[string, string]> = [];
  for (const [name, value] of fields) {
    if (name.charCodeAt(0) === 0x3a) {
      if (regular.length > 0) {
        fail(name, `pseudo-header ${name} after a regular field (RFC 9114 §4.3)`);
      }
      if (name !== ":status") {
        fail(name, `pseudo-header ${name} is not allowed in a response (RFC 9114 §4.3.2)`);
      }
      if (status !== undefined) fail(name, "repeated :status (RFC 9114 §4.3.2)");
      status = value;
      continue;
    }
    checkRegular(name, value);
    if (name === "content-length") contentLength = mergeContentLength(contentLength, value);
    regular.push([name, value]);
  }
  if (status === undefined) fail(":status", "missing :status (RFC 9114 §4.3.2)");
  if (!/^[1-5][0-9][0-9]$/.test(status)) {
    fail(":status", `invalid :status ${JSON.stringify(status)} (RFC 9110 §15)`);
  }
  const head: ResponseHead = { status: Number(status), fields: regular };
  if (contentLength !== undefined) head.contentLength = contentLength;
  return head;
}

/**
 * Validates the final response head of an HTTP/2 backend, as the upstream
 * transports hand it over (status apart, pseudo-headers removed), with the
 * rules {@link validateResponseFields} applies: the status is a final one,
 * 200-599 (RFC 9110 §15: three digits 100-599; a 1xx head is never final,
 * RFC 9113 §8.1; 101 has no place in HTTP/2 or HTTP/3, RFC 9113 §8.6), no
 * pseudo-header is left, and every field is well formed and not
 * connection-specific (RFC 9113 §8.2, RFC 9114 §4.2). Allocates nothing;
 * returns the Content-Length, if any. Throws {@link MalformedMessageError}.
 *
 * @example
 * ```ts
 * validateResponseHead(200, [["content-length", "2"]]); // 2
 * validateResponseHead(600, []); // throws: invalid :status
 * ```
 */
export function validateResponseHead(
  status: number,
  fields: ReadonlyArray<readonly [string, string]>,
): number | undefined {
  if (!Number.isInteger(status) || status < 100 || status > 599) {
    fail(":status", `invalid :status ${status} (RFC 9110 §15)`);
  }
  if (status === 101) fail(":status", ":status 101 is not allowed (RFC 9113 §8.6)");
  if (status < 200) {
    fail(":status", `informational :status ${status} as the final response (RFC 9113 §8.1)`);
  }
  let contentLength: number | undefined;
  for (const [name, value] of fields) {
    if (name.charCodeAt(0) === 0x3a) {
      fail(name, `pseudo-header ${name} in a response (RFC 9113 §8.3)`);
    }
    checkRegular(name, value);
    if (name === "content-length") contentLength = mergeContentLength(contentLength, value);
  }
  return contentLength;
}

/**
 * Checks that a body matches its Content-Length (RFC 9114 §4.1.2): `add` each
 * DATA chunk's size, `finish` at the end of the stream. Without an expected
 * length it only counts.
 */
export class BodyLengthTracker {
  /** The declared Content-Length, if any. */
  readonly expected: number | undefined;
  #received = 0;

  /**
   * Starts counting a body.
   *
   * @param expected the declared Content-Length, if any.
   */
  constructor(expected?: number) {
    this.expected = expected;
  }

  /** Bytes counted so far. */
  get received(): number {
    return this.#received;
  }

  /** Counts `n` more body bytes; throws as soon as the total passes the expected length. */
  add(n: number): void {
    this.#received += n;
    if (this.expected !== undefined && this.#received > this.expected) {
      fail(
        "content-length",
        `body longer than content-length ${this.expected} (RFC 9114 §4.1.2)`,
      );
    }
  }

  /** The body ended; throws when it is shorter than the expected length. */
  finish(): void {
    if (this.expected !== undefined && this.#received < this.expected) {
      fail(
        "content-length",
        `body of ${this.#received} bytes is shorter than content-length ${this.expected} (RFC 9114 §4.1.2)`,
      );
    }
  }
}
