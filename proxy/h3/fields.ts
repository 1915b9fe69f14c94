/**
 * Field-name vocabularies and message rules shared by every layer that
 * builds or forwards HTTP messages: the HTTP/3 codec, the server, the
 * upstream header translation and the TCP fallback. One home, so the lists
 * cannot drift apart.
 *
 * @example
 * ```ts
 * import { HOP_BY_HOP, responseHasNoBody } from "./fields.ts";
 * HOP_BY_HOP.has("keep-alive"); // true
 * responseHasNoBody("GET", 304); // true
 * ```
 *
 * @module
 */

/**
 * Connection-specific fields (RFC 9110 §7.6.1), which make an HTTP/3 message
 * malformed (RFC 9114 §4.2). `te` is allowed only as `te: trailers`, checked
 * where requests are validated.
 */
export const CONNECTION_SPECIFIC: ReadonlySet<string> = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "upgrade",
]);

/**
 * Fields a proxy never forwards in either direction: the connection-specific
 * ones plus the hop-by-hop fields of RFC 9110 §7.6.1 (`te`, `trailer`,
 * `proxy-authenticate`, `proxy-authorization`).
 */
export const HOP_BY_HOP: ReadonlySet<string> = new Set([
  ...CONNECTION_SPECIFIC,
  "te",
  "trailer",
  "proxy-authenticate",
  "proxy-authorization",
]);

/**
 * Fields that must not be sent in a trailer section (RFC 9110 §6.5.1):
 * they have to be known before the content because they frame the message
 * or the connection, route it, modify or authenticate the request, control
 * the response, or describe the content's format. Conditionals (`if-*`)
 * belong here too; {@link allowedInTrailers} checks them by prefix.
 */
export const NOT_IN_TRAILERS: ReadonlySet<string> = new Set([
  // framing and the connection (§6.1, §7.6)
  ...HOP_BY_HOP,
  "content-length",
  // routing (§7.2)
  "host",
  // request controls and modifiers (§10.1, §14.2)
  "cache-control",
  "expect",
  "max-forwards",
  "pragma",
  "range",
  // authentication (§11)
  "authorization",
  "www-authenticate",
  // response control data (§10.2)
  "age",
  "date",
  "expires",
  "location",
  "retry-after",
  "vary",
  // the content's format (§8.3–§8.5, §14.4)
  "content-type",
  "content-encoding",
  "content-language",
  "content-range",
]);

/** Whether a field named `name` (lowercase) may be in a trailer section (RFC 9110 §6.5.1). */
export function allowedInTrailers(name: string): boolean {
  return !NOT_IN_TRAILERS.has(name) && !name.startsWith("if-");
}

/**
 * Whether a response carries no content whatever its fields say: the answer
 * to HEAD, 1xx, 204 and 304 (RFC 9110 §6.4.1).
 */
export function responseHasNoBody(method: string, status: number): boolean {
  return method === "HEAD" || status === 204 || status === 304 || (status >= 100 && status < 200);
}

/**
 * RFC 9110 §5.6.2 `tchar`, indexed by character code (ASCII only): 1 for
 * the characters a token may hold (methods, field names, parameter names).
 */
export const TCHAR: Readonly<Uint8Array> = (() => {
  const table = new Uint8Array(128);
  const chars = "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  for (const ch of chars) table[ch.charCodeAt(0)] = 1;
  return table;
})();

/**
 * True when `s` is an RFC 9110 §5.6.2 token (one or more `tchar`), checked
 * against `table` ({@link TCHAR} by default; a narrower table, such as
 * lowercase-only field names, may be given).
 *
 * @example
 * ```ts
 * isToken("x-request-id"); // true
 * isToken("a b"); // false
 * ```
 */
export function isToken(s: string, table: Readonly<Uint8Array> = TCHAR): boolean {
  if (s.length === 0) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 128 || table[c] === 0) return false;
  }
  return true;
}
