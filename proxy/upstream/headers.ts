/**
 * Header translation between the client's HTTP/3 request and the backend's
 * HTTP/2 exchange: connection-specific fields dropped, `x-forwarded-*`,
 * `forwarded` (RFC 7239), `x-real-ip` and `via` (RFC 9110 §7.6.3) added.
 *
 * The forwarding fields a client sends are believed only from a trusted
 * proxy (`trusted_proxies`), as Caddy and Envoy do: from anyone else they
 * are replaced by the proxy's own values, so that a backend reading the
 * first hop of `x-forwarded-for` cannot be told an address the client made
 * up.
 *
 * @module
 */

import { PRODUCT } from "../../shared/version.ts";
import { HOP_BY_HOP, isToken } from "../http/mod.ts";

/** What the proxy knows about the client side of a request. */
export interface ClientContext {
  /** Client IP address (no port). */
  ip: string;
  /** `:authority` (or Host) of the request. */
  authority: string | undefined;
  /**
   * The client is a trusted proxy (its address is in `trusted_proxies`):
   * its forwarding fields are kept and ours appended. Otherwise they are
   * replaced.
   */
  trusted?: boolean;
}

/** The forwarding fields a client may only set when it is a trusted proxy. */
const FORWARDING = new Set([
  "x-forwarded-for",
  "x-forwarded-proto",
  "x-forwarded-host",
  "forwarded",
  "x-real-ip",
]);

function forwardedNode(ip: string): string {
  return ip.includes(":") ? `"[${ip}]"` : ip;
}

function forwardedValue(v: string): string {
  return isToken(v) ? v : `"${v.replace(/["\\]/g, "\\$&")}"`;
}

const isOws = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;

/** Trims HTTP whitespace at both ends, as `Headers` does with every value. */
function trimOws(v: string): string {
  // Almost every value has none: no regular expression for those.
  if (v.length === 0 || (!isOws(v.charCodeAt(0)) && !isOws(v.charCodeAt(v.length - 1)))) return v;
  return v.replace(/^[\t\n\r ]+|[\t\n\r ]+$/g, "");
}

/**
 * Builds the backend request's regular fields from the client's: hop-by-hop
 * fields dropped (but a client's `te: trailers` is sent as ours), `host`
 * dropped (the authority travels as HTTP/2's `:authority` or as the
 * HTTP/1.1 `Host` the codec writes: sending both, nginx answers 400
 * "duplicate host header"), repeated names combined with `, ` and values trimmed (RFC 9110 §5.3),
 * split cookie fields joined with `; ` (RFC 9114 §4.2.1), and the
 * forwarding fields set: `x-forwarded-for`, `x-forwarded-proto`,
 * `x-forwarded-host`, `forwarded` (RFC 7239), `x-real-ip` and `via`
 * (RFC 9110 §7.6.3). From an untrusted client its own values of the first
 * five are dropped and replaced. From a trusted proxy the client address is
 * appended to its `x-forwarded-for` and its `forwarded` gets our element
 * appended, while its `x-forwarded-proto`, `x-forwarded-host` and
 * `x-real-ip`, which describe the original request, are kept (set when
 * absent). Nothing else is added: no user agent, no accept fields.
 *
 * @example
 * ```ts
 * const list = upstreamRequestHeaderList([["accept", "*\/*"]], { ip: "::1", authority: "a.test" });
 * ```
 */
export function upstreamRequestHeaderList(
  fields: ReadonlyArray<readonly [string, string]>,
  client: ClientContext,
): Array<[string, string]> {
  const out = new Map<string, string>();
  const trusted = client.trusted === true;
  let cookies: string | undefined;
  for (const [name, value] of fields) {
    // `te: trailers` is this hop's own: the proxy forwards trailers, so it
    // says so to the backend too (gRPC servers look for it; RFC 9113 §8.2.2).
    if (name === "te" && /\btrailers\b/i.test(value)) out.set("te", "trailers");
    // content-length is the transport's: it states what is actually sent.
    if (HOP_BY_HOP.has(name) || name === "host" || name === "content-length") continue;
    if (!trusted && FORWARDING.has(name)) continue;
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
    if (!out.get("x-forwarded-host")) out.set("x-forwarded-host", trimOws(authority));
  }
  // Untrusted: none of these survived the loop, so each is set afresh.
  const xff = out.get("x-forwarded-for");
  out.set("x-forwarded-for", xff ? `${xff}, ${client.ip}` : client.ip);
  if (!out.get("x-forwarded-proto")) out.set("x-forwarded-proto", "https");
  if (!out.get("x-real-ip")) out.set("x-real-ip", client.ip);
  let fwd = `for=${forwardedNode(client.ip)};proto=https`;
  if (authority !== undefined) fwd += `;host=${forwardedValue(authority)}`;
  const prior = out.get("forwarded");
  out.set("forwarded", prior ? `${prior}, ${fwd}` : fwd);
  const via = out.get("via");
  out.set("via", via ? `${via}, 3 ${PRODUCT}` : `3 ${PRODUCT}`);
  return [...out];
}

/**
 * The backend response's fields as HTTP/3 fields: hop-by-hop fields dropped,
 * `via` appended (RFC 9110 §7.6.3). Everything else, `content-encoding` and
 * `content-length` included, passes as the backend sent it: the body is not
 * decoded on the way.
 *
 * @example
 * ```ts
 * downstreamResponseFields([["connection", "close"], ["x-a", "1"]]); // [["x-a", "1"], ["via", "2 spooky"]]
 * ```
 */
export function downstreamResponseFields(
  fields: ReadonlyArray<readonly [string, string]>,
): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  let via: string | null = null;
  for (const [name, value] of fields) {
    if (HOP_BY_HOP.has(name)) continue;
    if (name === "via") {
      via = via === null ? value : `${via}, ${value}`;
      continue;
    }
    out.push([name, value]);
  }
  out.push(["via", via ? `${via}, 2 ${PRODUCT}` : `2 ${PRODUCT}`]);
  return out;
}
