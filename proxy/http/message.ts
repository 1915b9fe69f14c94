/**
 * HTTP messages whatever the version carrying them (RFC 9110): the request
 * and response heads the layers hand each other, which responses carry no
 * content, and which methods may be sent twice.
 *
 * @example
 * ```ts
 * import { isIdempotent, responseHasNoBody } from "./message.ts";
 * responseHasNoBody("GET", 304); // true
 * isIdempotent("POST"); // false
 * ```
 *
 * @module
 */

/** One field line: a lowercase name and its value (one character per octet). */
export type FieldLine = [name: string, value: string];

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
  /** The status code, 100-599. */
  status: number;
  /** Regular fields only, in order. */
  fields: FieldLine[];
  /** The declared Content-Length, or -1. */
  contentLength: number;
}

/**
 * Whether a response with `status` carries no content whatever its fields
 * say: 1xx, 204 and 304 (RFC 9110 §6.4.1); see {@link responseHasNoBody}
 * for the answer to HEAD.
 */
export function statusHasNoBody(status: number): boolean {
  return status === 204 || status === 304 || (status >= 100 && status < 200);
}

/**
 * Whether a response carries no content whatever its fields say: the answer
 * to HEAD, 1xx, 204 and 304 (RFC 9110 §6.4.1).
 */
export function responseHasNoBody(method: string, status: number): boolean {
  return method === "HEAD" || statusHasNoBody(status);
}

const IDEMPOTENT: ReadonlySet<string> = new Set(["GET", "HEAD", "OPTIONS", "PUT", "DELETE"]);

/**
 * Whether `method` is idempotent (RFC 9110 §9.2.2): sending it twice does
 * what once does. TRACE is left out: the proxy never forwards it.
 */
export function isIdempotent(method: string): boolean {
  return IDEMPOTENT.has(method);
}
