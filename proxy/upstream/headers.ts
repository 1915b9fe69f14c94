/**
 * Header translation between the client's HTTP/3 request and the backend's
 * HTTP/2 exchange: connection-specific fields dropped, `x-forwarded-*`,
 * `forwarded` (RFC 7239) and `via` (RFC 9110 §7.6.3) added.
 *
 * @module
 */

import { PRODUCT } from "../../shared/version.ts";

/** Fields never forwarded in either direction (RFC 9110 §7.6.1, RFC 9114 §4.2). */
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "upgrade",
  "te",
  "trailer",
  "proxy-authenticate",
  "proxy-authorization",
]);

/** What the proxy knows about the client side of a request. */
export interface ClientContext {
  /** Client IP address (no port). */
  ip: string;
  /** `:authority` (or Host) of the request. */
  authority: string | undefined;
}

function forwardedNode(ip: string): string {
  return ip.includes(":") ? `"[${ip}]"` : ip;
}

function forwardedValue(v: string): string {
  return /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(v) ? v : `"${v.replace(/["\\]/g, "\\$&")}"`;
}

/** Trims HTTP whitespace at both ends, as `Headers` does with every value. */
function trimOws(v: string): string {
  return v.replace(/^[\t\n\r ]+|[\t\n\r ]+$/g, "");
}

/**
 * Builds the backend request's header list from the client's regular fields:
 * the fields that `new Headers()` built by {@link upstreamRequestHeaders}
 * iterates to (sorted by name, repeated names combined with `, `, values
 * trimmed), but as a plain array, which `fetch` converts several times faster
 * than a `Headers` object. `host` carries the client's authority (the fetch
 * client is created with `allowHost`). Cookie fields, which HTTP/3 may split,
 * are joined with `; ` (RFC 9114 §4.2.1).
 *
 * @example
 * ```ts
 * const list = upstreamRequestHeaderList([["accept", "*\/*"]], { ip: "::1", authority: "a.test" });
 * await fetch("http://127.0.0.1:8080/", { headers: list });
 * ```
 */
export function upstreamRequestHeaderList(
  fields: ReadonlyArray<readonly [string, string]>,
  client: ClientContext,
): Array<[string, string]> {
  const out = new Map<string, string>();
  let cookies: string | undefined;
  for (const [name, value] of fields) {
    if (HOP_BY_HOP.has(name) || name === "host") continue;
    if (name === "cookie") {
      cookies = cookies === undefined ? value : `${cookies}; ${value}`;
      continue;
    }
    const v = trimOws(value);
    const prior = out.get(name);
    out.set(name, prior === undefined ? v : `${prior}, ${v}`);
  }
  if (cookies !== undefined) out.set("cookie", trimOws(cookies));
  const authority = client.authority ?? fields.find(([n]) => n === "host")?.[1];
  if (authority !== undefined) {
    out.set("host", trimOws(authority));
    out.set("x-forwarded-host", trimOws(authority));
  }
  const xff = out.get("x-forwarded-for");
  out.set("x-forwarded-for", xff ? `${xff}, ${client.ip}` : client.ip);
  out.set("x-forwarded-proto", "https");
  let fwd = `for=${forwardedNode(client.ip)};proto=https`;
  if (authority !== undefined) fwd += `;host=${forwardedValue(authority)}`;
  const prior = out.get("forwarded");
  out.set("forwarded", prior ? `${prior}, ${fwd}` : fwd);
  const via = out.get("via");
  out.set("via", via ? `${via}, 3 ${PRODUCT}` : `3 ${PRODUCT}`);
  return [...out].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

/**
 * Builds the backend request's headers from the client's regular fields, as a
 * `Headers` object (see {@link upstreamRequestHeaderList}, which the proxy
 * uses on its hot path).
 */
export function upstreamRequestHeaders(
  fields: ReadonlyArray<readonly [string, string]>,
  client: ClientContext,
): Headers {
  return new Headers(upstreamRequestHeaderList(fields, client));
}

/** Content codings that Deno's fetch decodes on its own (measured on 2.9.6). */
const DECODED_BY_FETCH = new Set(["gzip", "x-gzip", "br"]);

/**
 * The backend response's headers as HTTP/3 fields: hop-by-hop fields dropped,
 * `via` appended. When fetch has already decoded the body (gzip, br), the
 * `content-encoding` and `content-length` that described the encoded bytes are
 * dropped too, so the client never gets decoded bytes labelled as compressed.
 */
export function downstreamResponseFields(headers: Headers): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  const coding = headers.get("content-encoding")?.trim().toLowerCase();
  const decoded = coding !== undefined && DECODED_BY_FETCH.has(coding);
  let via: string | null = null;
  for (const [name, value] of headers) {
    if (HOP_BY_HOP.has(name)) continue;
    if (decoded && (name === "content-encoding" || name === "content-length")) continue;
    if (name === "via") {
      via = value;
      continue;
    }
    out.push([name, value]);
  }
  out.push(["via", via ? `${via}, 2 ${PRODUCT}` : `2 ${PRODUCT}`]);
  return out;
}
