/**
 * The QPACK static table (RFC 9204 Appendix A) with constant-time look-ups.
 *
 * @module
 */

/** The 99 entries of RFC 9204 Appendix A, indexed from 0. */
export const STATIC_TABLE: ReadonlyArray<readonly [name: string, value: string]> = Object.freeze([
  [":authority", ""],
  [":path", "/"],
  ["age", "0"],
  ["content-disposition", ""],
  ["content-length", "0"],
  ["cookie", ""],
  ["date", ""],
  ["etag", ""],
  ["if-modified-since", ""],
  ["if-none-match", ""],
  ["last-modified", ""],
  ["link", ""],
  ["location", ""],
  ["referer", ""],
  ["set-cookie", ""],
  [":method", "CONNECT"],
  [":method", "DELETE"],
  [":method", "GET"],
  [":method", "HEAD"],
  [":method", "OPTIONS"],
  [":method", "POST"],
  [":method", "PUT"],
  [":scheme", "http"],
  [":scheme", "https"],
  [":status", "103"],
  [":status", "200"],
  [":status", "304"],
  [":status", "404"],
  [":status", "503"],
  ["accept", "*/*"],
  ["accept", "application/dns-message"],
  ["accept-encoding", "gzip, deflate, br"],
  ["accept-ranges", "bytes"],
  ["access-control-allow-headers", "cache-control"],
  ["access-control-allow-headers", "content-type"],
  ["access-control-allow-origin", "*"],
  ["cache-control", "max-age=0"],
  ["cache-control", "max-age=2592000"],
  ["cache-control", "max-age=604800"],
  ["cache-control", "no-cache"],
  ["cache-control", "no-store"],
  ["cache-control", "public, max-age=31536000"],
  ["content-encoding", "br"],
  ["content-encoding", "gzip"],
  ["content-type", "application/dns-message"],
  ["content-type", "application/javascript"],
  ["content-type", "application/json"],
  ["content-type", "application/x-www-form-urlencoded"],
  ["content-type", "image/gif"],
  ["content-type", "image/jpeg"],
  ["content-type", "image/png"],
  ["content-type", "text/css"],
  ["content-type", "text/html; charset=utf-8"],
  ["content-type", "text/plain"],
  ["content-type", "text/plain;charset=utf-8"],
  ["range", "bytes=0-"],
  ["strict-transport-security", "max-age=31536000"],
  ["strict-transport-security", "max-age=31536000; includesubdomains"],
  ["strict-transport-security", "max-age=31536000; includesubdomains; preload"],
  ["vary", "accept-encoding"],
  ["vary", "origin"],
  ["x-content-type-options", "nosniff"],
  ["x-xss-protection", "1; mode=block"],
  [":status", "100"],
  [":status", "204"],
  [":status", "206"],
  [":status", "302"],
  [":status", "400"],
  [":status", "403"],
  [":status", "421"],
  [":status", "425"],
  [":status", "500"],
  ["accept-language", ""],
  ["access-control-allow-credentials", "FALSE"],
  ["access-control-allow-credentials", "TRUE"],
  ["access-control-allow-headers", "*"],
  ["access-control-allow-methods", "get"],
  ["access-control-allow-methods", "get, post, options"],
  ["access-control-allow-methods", "options"],
  ["access-control-expose-headers", "content-length"],
  ["access-control-request-headers", "content-type"],
  ["access-control-request-method", "get"],
  ["access-control-request-method", "post"],
  ["alt-svc", "clear"],
  ["authorization", ""],
  ["content-security-policy", "script-src 'none'; object-src 'none'; base-uri 'none'"],
  ["early-data", "1"],
  ["expect-ct", ""],
  ["forwarded", ""],
  ["if-range", ""],
  ["origin", ""],
  ["purpose", "prefetch"],
  ["server", ""],
  ["timing-allow-origin", "*"],
  ["upgrade-insecure-requests", "1"],
  ["user-agent", ""],
  ["x-forwarded-for", ""],
  ["x-frame-options", "deny"],
  ["x-frame-options", "sameorigin"],
].map((e) => Object.freeze(e) as readonly [string, string]));

/** Names of the static entries, by index (flat array for the decoder's hot path). */
export const STATIC_NAMES: readonly string[] = STATIC_TABLE.map((e) => e[0]);
/** Values of the static entries, by index. */
export const STATIC_VALUES: readonly string[] = STATIC_TABLE.map((e) => e[1]);

const BY_NAME = new Map<string, number>();
const BY_NAME_VALUE = new Map<string, Map<string, number>>();
for (let i = 0; i < STATIC_TABLE.length; i++) {
  const [name, value] = STATIC_TABLE[i];
  if (!BY_NAME.has(name)) BY_NAME.set(name, i);
  let values = BY_NAME_VALUE.get(name);
  if (values === undefined) BY_NAME_VALUE.set(name, values = new Map());
  if (!values.has(value)) values.set(value, i);
}

/**
 * Index of the static entry with exactly this name and value, or -1.
 *
 * @example
 * ```ts
 * staticIndexOf(":method", "GET"); // 17
 * ```
 */
export function staticIndexOf(name: string, value: string): number {
  const values = BY_NAME_VALUE.get(name);
  if (values === undefined) return -1;
  return values.get(value) ?? -1;
}

/**
 * Index of the first static entry with this name, or -1.
 *
 * @example
 * ```ts
 * staticNameIndexOf("user-agent"); // 95
 * ```
 */
export function staticNameIndexOf(name: string): number {
  return BY_NAME.get(name) ?? -1;
}

/**
 * Both look-ups at once, for the encoder: the exact match index, else the
 * name match index encoded as `-2 - index`, else -1.
 */
export function staticLookup(name: string, value: string): number {
  const values = BY_NAME_VALUE.get(name);
  if (values === undefined) return -1;
  const exact = values.get(value);
  if (exact !== undefined) return exact;
  return -2 - BY_NAME.get(name)!;
}
