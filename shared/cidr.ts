/**
 * IP networks in CIDR notation (RFC 4632 for IPv4, RFC 4291 §2.3 for IPv6):
 * parsing with a reason for what is wrong, and membership tests. A bare
 * address is its own network (/32 or /128). Matching uses `node:net`'s
 * `BlockList`, which also matches an IPv4-mapped IPv6 address
 * (`::ffff:10.0.0.1`, as a dual-stack socket reports IPv4 peers) against
 * IPv4 networks.
 *
 * @example
 * ```ts
 * import { cidrMatcher } from "./cidr.ts";
 * const trusted = cidrMatcher(["10.0.0.0/8", "fd00::/8"]);
 * trusted("10.1.2.3"); // true
 * trusted("192.0.2.1"); // false
 * ```
 *
 * @module
 */

import { BlockList, isIPv4, isIPv6 } from "node:net";

/** One parsed network. */
export interface Cidr {
  /** The address as written (host bits may be set; they are ignored). */
  address: string;
  /** Prefix length in bits. */
  prefix: number;
  /** Address family. */
  family: "ipv4" | "ipv6";
}

/**
 * Parses `a.b.c.d[/n]` or `ipv6[/n]`; returns why it is not one as a string.
 *
 * @example
 * ```ts
 * parseCidr("10.0.0.0/8"); // { address: "10.0.0.0", prefix: 8, family: "ipv4" }
 * parseCidr("10.0.0.0/33"); // "prefix length 33 is above 32 for IPv4"
 * ```
 */
export function parseCidr(text: string): Cidr | string {
  const slash = text.indexOf("/");
  const address = slash === -1 ? text : text.slice(0, slash);
  const family = isIPv4(address) ? "ipv4" : isIPv6(address) ? "ipv6" : null;
  if (family === null) return `${JSON.stringify(address)} is not an IPv4 or IPv6 address`;
  if (family === "ipv6" && address.includes("%")) return "an IPv6 zone (%...) is not allowed";
  const max = family === "ipv4" ? 32 : 128;
  if (slash === -1) return { address, prefix: max, family };
  const digits = text.slice(slash + 1);
  if (!/^[0-9]{1,3}$/.test(digits)) {
    return `prefix length ${JSON.stringify(digits)} is not a number of bits`;
  }
  const prefix = Number(digits);
  if (prefix > max) {
    return `prefix length ${prefix} is above ${max} for ${family === "ipv4" ? "IPv4" : "IPv6"}`;
  }
  return { address, prefix, family };
}

/**
 * A membership test for a list of networks (each as {@link parseCidr}
 * accepts; throws on one it does not). An empty list matches nothing and
 * costs nothing per call.
 */
export function cidrMatcher(list: readonly string[]): (ip: string) => boolean {
  if (list.length === 0) return () => false;
  const blocks = new BlockList();
  for (const text of list) {
    const cidr = parseCidr(text);
    if (typeof cidr === "string") throw new TypeError(`${text}: ${cidr}`);
    blocks.addSubnet(cidr.address, cidr.prefix, cidr.family);
  }
  return (ip) => {
    const family = isIPv4(ip) ? "ipv4" : isIPv6(ip) ? "ipv6" : null;
    return family !== null && blocks.check(ip, family);
  };
}
