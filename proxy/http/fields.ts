/**
 * Field rules shared by every layer that builds, checks or forwards HTTP
 * messages, whatever the version: the token grammar, what a field name and
 * a field value may hold, the connection-specific and hop-by-hop fields,
 * the fields a trailer section may not carry, and Content-Length values.
 * Each check returns why a field breaks a rule (a sentence for a log line
 * or an error), or `null`; the caller decides what a violation means (a
 * stream error, a 400, a 502).
 *
 * @example
 * ```ts
 * import { fieldNameError, HOP_BY_HOP } from "./fields.ts";
 * HOP_BY_HOP.has("keep-alive"); // true
 * fieldNameError("X-Id"); // 'uppercase field name "X-Id" (…)'
 * ```
 *
 * @module
 */

import type { FieldLine } from "./message.ts";

/**
 * Connection-specific fields (RFC 9110 §7.6.1), which make an HTTP/2 or
 * HTTP/3 message malformed (RFC 9113 §8.2.2, RFC 9114 §4.2). `te` is
 * allowed only as `te: trailers`, checked by {@link regularFieldError}.
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

/** `tchar` without uppercase letters: HTTP/2 and HTTP/3 field names are lowercase. */
const NAME_CHAR = TCHAR.slice();
for (let c = 0x41; c <= 0x5a; c++) NAME_CHAR[c] = 0;

const BAD_VALUE_CHAR = /[\0\r\n]/;
/** Other control characters (not HTAB): not field-vchar (RFC 9110 §5.5). */
// deno-lint-ignore no-control-regex
const CTL_VALUE_CHAR = /[\x01-\x08\x0b\x0c\x0e-\x1f\x7f]/;
const DIGITS = /^[0-9]+$/;

/**
 * Why `name` is no valid field name of an HTTP/2 or HTTP/3 message, or
 * null: a lowercase token (RFC 9110 §5.1, RFC 9113 §8.2.1, RFC 9114 §4.2).
 */
export function fieldNameError(name: string): string | null {
  if (name.length === 0) return "empty field name (RFC 9110 §5.1)";
  if (isToken(name, NAME_CHAR)) return null;
  if (isToken(name)) return `uppercase field name "${name}" (RFC 9113 §8.2.1, RFC 9114 §4.2)`;
  return `invalid character in field name ${JSON.stringify(name)} (RFC 9110 §5.1)`;
}

/**
 * Why `value` is no valid value of the field `name`, or null: no NUL, CR or
 * LF (RFC 9113 §8.2.1, RFC 9114 §10.3), no other control character but
 * HTAB, no leading or trailing whitespace (RFC 9110 §5.5).
 */
export function fieldValueError(name: string, value: string): string | null {
  if (value.length === 0) return null;
  if (BAD_VALUE_CHAR.test(value)) return `NUL, CR or LF in the value of ${name} (RFC 9110 §5.5)`;
  if (CTL_VALUE_CHAR.test(value)) {
    return `control character in the value of ${name} (RFC 9110 §5.5)`;
  }
  const first = value.charCodeAt(0);
  const last = value.charCodeAt(value.length - 1);
  if (first === 0x20 || first === 0x09 || last === 0x20 || last === 0x09) {
    return `leading or trailing whitespace in the value of ${name} (RFC 9110 §5.5)`;
  }
  return null;
}

/**
 * Why a regular (not pseudo-header) field breaks the rules every HTTP/2 and
 * HTTP/3 section shares, or null: its name and value, no connection-specific
 * field (RFC 9113 §8.2.2, RFC 9114 §4.2), `te` only as `trailers`.
 */
export function regularFieldError(name: string, value: string): string | null {
  const why = fieldNameError(name) ?? fieldValueError(name, value);
  if (why !== null) return why;
  if (CONNECTION_SPECIFIC.has(name)) {
    return `connection-specific field ${name} (RFC 9113 §8.2.2, RFC 9114 §4.2)`;
  }
  if (name === "te" && value.toLowerCase() !== "trailers") {
    return `TE may only be "trailers" (RFC 9113 §8.2.2, RFC 9114 §4.2)`;
  }
  return null;
}

/**
 * Folds one Content-Length field value into the running value (-1: none
 * yet). Repeated identical values, in separate fields or a comma list, are
 * one; differing or non-numeric values make the message malformed (RFC 9110
 * §8.6). Returns the value or why it is invalid.
 */
export function mergeContentLength(current: number, value: string): number | string {
  if (value.indexOf(",") < 0) return mergeOne(current, value, value);
  let result = current;
  for (const part of value.split(",")) {
    const merged = mergeOne(result, part.trim(), value);
    if (typeof merged === "string") return merged;
    result = merged;
  }
  return result;
}

function mergeOne(current: number, v: string, value: string): number | string {
  if (!DIGITS.test(v)) return `invalid content-length ${JSON.stringify(value)} (RFC 9110 §8.6)`;
  const n = Number(v);
  if (!Number.isSafeInteger(n)) return `content-length too large: ${v}`;
  if (current >= 0 && current !== n) {
    return `conflicting content-length values ${current} and ${n} (RFC 9110 §8.6)`;
  }
  return n;
}

/** The comma-separated tokens of every `name` field, lowercased. */
export function fieldTokens(fields: readonly FieldLine[], name: string): string[] {
  const out: string[] = [];
  for (const [n, v] of fields) {
    if (n !== name) continue;
    for (const t of v.split(",")) {
      const token = t.trim().toLowerCase();
      if (token.length > 0) out.push(token);
    }
  }
  return out;
}
