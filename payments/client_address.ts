/**
 * The client address the token rate limit counts: the TCP peer, or, when the
 * peer is a trusted proxy (`--trusted-proxy CIDR`), the client it forwarded
 * for (`Forwarded: for=` or `X-Forwarded-For`, the last hop that is not
 * itself a trusted proxy). A peer outside every trusted CIDR cannot pick
 * its own bucket by sending those headers.
 *
 * @example
 * ```ts
 * const trusted = trustedPeers(["127.0.0.0/8"]);
 * const h = new Headers({ "x-forwarded-for": "203.0.113.9" });
 * rateLimitAddress("127.0.0.1", h, trusted); // "203.0.113.9"
 * rateLimitAddress("198.51.100.7", h, trusted); // "198.51.100.7"
 * ```
 *
 * @module
 */

import { isIP } from "node:net";
import { cidrMatcher } from "../shared/cidr.ts";

/** Whether an address (bare, no brackets or port) lies in a trusted network. */
export type TrustedPeers = (address: string) => boolean;

/** The trusted networks of `--trusted-proxy` (each as `shared/cidr.ts` `parseCidr` accepts). */
export function trustedPeers(list: readonly string[]): TrustedPeers {
  return cidrMatcher(list);
}

/** The `for=` addresses of a `Forwarded` header (RFC 7239), in order; obfuscated ones are kept as given. */
export function forwardedFor(value: string): string[] {
  const out: string[] = [];
  for (const element of value.split(",")) {
    for (const pair of element.split(";")) {
      const eq = pair.indexOf("=");
      if (eq < 0 || pair.slice(0, eq).trim().toLowerCase() !== "for") continue;
      out.push(pair.slice(eq + 1).trim().replace(/^"|"$/g, ""));
    }
  }
  return out;
}

/**
 * The address whose bucket a request takes: `peer` unless it is in
 * `trusted`; then the nearest hop named by `Forwarded` (preferred) or
 * `X-Forwarded-For` that is not itself trusted, read from the right (the
 * proxy appends the address it saw; hops to the left are what the client
 * claimed). When every named hop is trusted, the leftmost one; when the
 * proxy named none, or a hop is no address, the peer.
 */
export function rateLimitAddress(
  peer: string | undefined,
  headers: Headers,
  trusted: TrustedPeers,
): string | undefined {
  if (peer === undefined || !trusted(normalized(peer))) return peer;
  const fwd = headers.get("forwarded");
  const hops = fwd !== null
    ? forwardedFor(fwd)
    : (headers.get("x-forwarded-for") ?? "").split(",").map((s) => s.trim()).filter((s) =>
      s !== ""
    );
  if (hops.length === 0) return peer;
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = normalized(hops[i]);
    if (isIP(hop) === 0) return peer;
    if (!trusted(hop)) return hop;
  }
  return normalized(hops[0]);
}

/** A hop as the rate limiter keys it: no brackets, port or zone. */
function normalized(hop: string): string {
  let a = hop.trim();
  const bracketed = /^\[([^\]]+)\](?::[0-9]+)?$/.exec(a);
  if (bracketed) a = bracketed[1];
  else if (/^[0-9.]+:[0-9]+$/.test(a)) a = a.slice(0, a.indexOf(":"));
  return a.replace(/%.*$/, "");
}
