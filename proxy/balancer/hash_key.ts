/**
 * Where a `consistent-hash` key comes from, and how it is read from a request.
 *
 * Extraction is forgiving: a malformed cookie pair is skipped, malformed
 * percent-encoding in the query is used raw, surrounding whitespace is
 * trimmed. An absent or empty value yields `null` (the caller falls back).
 *
 * @module
 */

import { isToken } from "../http/mod.ts";
import { BalancerConfigError, type BalanceRequest } from "./types.ts";

/** A parsed `load_balancing.key`. Header names are lowercase. */
export type HashKeySource =
  | { readonly source: "header"; readonly name: string }
  | { readonly source: "cookie"; readonly name: string }
  | { readonly source: "query"; readonly name: string }
  | { readonly source: "path" };

/** `load_balancing.key` of `consistent-hash` when the configuration gives none. */
export const DEFAULT_HASH_KEY = "path";

/** Key used when `load_balancing.key` is not given ({@link DEFAULT_HASH_KEY}). */
export const DEFAULT_HASH_KEY_SOURCE: HashKeySource = Object.freeze({ source: "path" });

/** What {@link parseHashKey} accepts, for error messages. */
export const HASH_KEY_FORMS = "header:<name>, cookie:<name>, query:<name> or path";

/**
 * The grammar of `load_balancing.key`, the only one: exactly `path`, or
 * `header:<name>`, `cookie:<name>` or `query:<name>` where the source word is
 * lowercase and the name is an RFC 9110 token (no spaces around either part).
 * Header names are returned lowercased (HTTP/3 field names are lowercase);
 * cookie and query names keep their case. Returns `null` for anything else.
 *
 * @example
 * ```ts
 * parseHashKey("header:X-User-Id"); // { source: "header", name: "x-user-id" }
 * parseHashKey("path");             // { source: "path" }
 * parseHashKey("header:");          // null
 * ```
 */
export function parseHashKey(key: string): HashKeySource | null {
  if (key === "path") return DEFAULT_HASH_KEY_SOURCE;
  const colon = key.indexOf(":");
  if (colon < 0) return null;
  const source = key.slice(0, colon);
  const name = key.slice(colon + 1);
  // An RFC 9110 token: header, cookie (RFC 6265 §4.1.1) and query names.
  if (!isToken(name)) return null;
  if (source === "header") return { source, name: name.toLowerCase() };
  if (source === "cookie" || source === "query") return { source, name };
  return null;
}

/**
 * Writes a key back in its canonical text form, the one {@link parseHashKey}
 * reads (`header:x-user-id`, `path`).
 *
 * @example
 * ```ts
 * formatHashKey(parseHashKey("header:X-User")!); // "header:x-user"
 * ```
 */
export function formatHashKey(src: HashKeySource): string {
  return src.source === "path" ? "path" : `${src.source}:${src.name}`;
}

/**
 * {@link parseHashKey} for the balancer factories: `undefined` means
 * {@link DEFAULT_HASH_KEY}, anything the grammar refuses throws.
 *
 * @throws {BalancerConfigError} for a key outside the grammar.
 * @example
 * ```ts
 * parseHashKeySource("header:X-User"); // { source: "header", name: "x-user" }
 * parseHashKeySource(undefined);       // { source: "path" }
 * ```
 */
export function parseHashKeySource(key: string | undefined): HashKeySource {
  if (key === undefined) return DEFAULT_HASH_KEY_SOURCE;
  const parsed = parseHashKey(key);
  if (parsed === null) {
    throw new BalancerConfigError(
      `load_balancing.key ${JSON.stringify(key)} must be ${HASH_KEY_FORMS}`,
    );
  }
  return parsed;
}

/**
 * Reads the key from a request. Returns `null` when the header, cookie or
 * query parameter is absent or empty.
 */
export function extractHashKey(src: HashKeySource, req: BalanceRequest): string | null {
  switch (src.source) {
    case "path":
      return pathOnly(req.path);
    case "header": {
      const v = req.header(src.name)?.trim();
      return v ? v : null;
    }
    case "cookie":
      return cookieValue(req.header("cookie"), src.name);
    case "query":
      return queryValue(req.path, src.name);
  }
}

/** The path without query and fragment; `"/"` when that leaves nothing. */
export function pathOnly(path: string): string {
  let end = path.length;
  const q = path.indexOf("?");
  if (q >= 0) end = q;
  const h = path.indexOf("#");
  if (h >= 0 && h < end) end = h;
  return end === 0 ? "/" : path.slice(0, end);
}

/**
 * Value of cookie `name` in a `Cookie` header (RFC 6265 §5.4 shape,
 * pairs separated by `;`). Pairs without `=` or with an empty name are
 * skipped, names and values are trimmed, one pair of surrounding double
 * quotes is removed, names compare case-sensitively, the first match wins.
 * Returns `null` when absent or when the first match is empty.
 */
export function cookieValue(header: string | null, name: string): string | null {
  if (!header) return null;
  let start = 0;
  while (start <= header.length) {
    let end = header.indexOf(";", start);
    if (end < 0) end = header.length;
    const eq = header.indexOf("=", start);
    if (eq >= 0 && eq < end && header.slice(start, eq).trim() === name) {
      let value = header.slice(eq + 1, end).trim();
      if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) {
        value = value.slice(1, -1);
      }
      return value === "" ? null : value;
    }
    start = end + 1;
  }
  return null;
}

/**
 * Value of query parameter `name` in a request target (`/p?a=1&b=2`).
 * `+` means space and percent-escapes are decoded; a name or value with malformed
 * escapes is used raw (only `+` turned into space) instead of failing. A parameter without `=` has an
 * empty value. The first match wins; `null` when absent or empty.
 */
export function queryValue(path: string, name: string): string | null {
  const q = path.indexOf("?");
  if (q < 0) return null;
  let end = path.indexOf("#", q);
  if (end < 0) end = path.length;
  let start = q + 1;
  while (start < end) {
    let amp = path.indexOf("&", start);
    if (amp < 0 || amp > end) amp = end;
    if (amp > start) {
      let eq = path.indexOf("=", start);
      if (eq < 0 || eq > amp) eq = amp;
      if (decodeComponent(path.slice(start, eq)) === name) {
        const value = eq < amp ? decodeComponent(path.slice(eq + 1, amp)) : "";
        return value === "" ? null : value;
      }
    }
    start = amp + 1;
  }
  return null;
}

/** `application/x-www-form-urlencoded` decoding that returns the raw text on bad escapes. */
function decodeComponent(raw: string): string {
  const plus = raw.includes("+") ? raw.replaceAll("+", " ") : raw;
  if (!plus.includes("%")) return plus;
  try {
    return decodeURIComponent(plus);
  } catch {
    return plus;
  }
}
