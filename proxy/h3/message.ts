/**
 * HTTP/3 request message validation (RFC 9114 §4.1.2, §4.2, §4.3) on decoded
 * field lists: the pseudo-headers of a request, its trailers and its body
 * length, with the field rules of `proxy/http/`. Every violation makes the
 * message malformed and throws {@link MalformedMessageError} (a stream
 * error H3_MESSAGE_ERROR).
 *
 * Field names and values are JavaScript strings as produced by QPACK decoding
 * (one character per octet is expected).
 *
 * @module
 */

import { MalformedMessageError } from "./errors.ts";
import {
  allowedInTrailers,
  fieldValueError,
  isToken,
  mergeContentLength,
  regularFieldError,
  type RequestHead,
} from "../http/mod.ts";

/** Options of {@link validateRequestFields}. */
export interface RequestValidationOptions {
  /**
   * Accept `:protocol` (extended CONNECT, RFC 9220). Only when this endpoint
   * sent SETTINGS_ENABLE_CONNECT_PROTOCOL = 1. Default false.
   */
  allowExtendedConnect?: boolean;
}

const REQUEST_PSEUDO = new Set([":method", ":scheme", ":authority", ":path", ":protocol"]);

const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*$/;
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

/** A pseudo-header's value: the value rules of any field (RFC 9114 §4.2, §10.3). */
function checkValue(name: string, value: string): void {
  const why = fieldValueError(name, value);
  if (why !== null) fail(name, why);
}

/** A regular field: name and value syntax, connection-specific fields, TE (RFC 9114 §4.2). */
function checkRegular(name: string, value: string): void {
  const why = regularFieldError(name, value);
  if (why !== null) fail(name, why);
}

/** Folds one Content-Length value into the running one (RFC 9110 §8.6, RFC 9114 §4.1.2). */
function contentLengthOf(current: number | undefined, value: string): number {
  const merged = mergeContentLength(current ?? -1, value);
  if (typeof merged === "string") fail("content-length", merged);
  return merged;
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
      contentLength = contentLengthOf(contentLength, value);
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
