/**
 * The client address the token rate limit counts: the TCP peer, or, when the
 * peer is a trusted proxy (`--trusted-proxy CIDR`), the client it forwarded
 * for (`Forwarded: for=` or `X-Forwarded-For`, the last hop that is not
 * itself a trusted proxy). A peer outside every trusted CIDR cannot pick
 * its own bucket by sending those headers.
 *
 * @example
 * ```ts
 * const trusted = parseCidrs(["127.0.0.0/8"]);
 * const h = new Headers({ "x-forwarded-for": "203.0.113.9" });
 * rateLimitAddress("127.0.0.1", h, trusted); // "203.0.113.9"
 * rateLimitAddress("198.51.100.7", h, trusted); // "198.51.100.7"
 * ```
 *
 * @module
 */

/** A parsed CIDR block. */
export interface Cidr {
  /** 4 or 6. */
  family: 4 | 6;
  /** The network address as 4 or 16 bytes. */
  bytes: Uint8Array;
  /** Prefix length in bits. */
  prefix: number;
}

/** The 4 bytes of a dotted IPv4 address, or undefined. */
function ipv4Bytes(s: string): Uint8Array | undefined {
  const parts = s.split(".");
  if (parts.length !== 4) return undefined;
  const out = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    if (!/^[0-9]{1,3}$/.test(parts[i])) return undefined;
    const n = Number(parts[i]);
    if (n > 255) return undefined;
    out[i] = n;
  }
  return out;
}

/** The 16 bytes of an IPv6 address (with an optional embedded IPv4 tail), or undefined. */
function ipv6Bytes(s: string): Uint8Array | undefined {
  if (!s.includes(":")) return undefined;
  let tail: Uint8Array | undefined;
  const lastColon = s.lastIndexOf(":");
  if (s.slice(lastColon + 1).includes(".")) {
    tail = ipv4Bytes(s.slice(lastColon + 1));
    if (!tail) return undefined;
    s = `${s.slice(0, lastColon + 1)}0:0`;
  }
  const halves = s.split("::");
  if (halves.length > 2) return undefined;
  const parse = (h: string) => (h === "" ? [] : h.split(":"));
  const left = parse(halves[0]);
  const right = halves.length === 2 ? parse(halves[1]) : [];
  const fill = 8 - left.length - right.length;
  if (halves.length === 1 ? fill !== 0 : fill < 1) return undefined;
  const groups = [...left, ...Array(halves.length === 2 ? fill : 0).fill("0"), ...right];
  const out = new Uint8Array(16);
  for (let i = 0; i < 8; i++) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(groups[i])) return undefined;
    const n = parseInt(groups[i], 16);
    out[i * 2] = n >> 8;
    out[i * 2 + 1] = n & 0xff;
  }
  if (tail) out.set(tail, 12);
  return out;
}

/**
 * An address as bytes (IPv4-mapped IPv6 becomes IPv4; brackets, a port
 * after an IPv4 address or a bracketed IPv6 one, and a zone are dropped);
 * undefined when it is no address.
 */
export function addressBytes(address: string): Uint8Array | undefined {
  let a = address.trim();
  const bracketed = /^\[([^\]]+)\](?::[0-9]+)?$/.exec(a);
  if (bracketed) a = bracketed[1];
  else if (/^[0-9.]+:[0-9]+$/.test(a)) a = a.slice(0, a.indexOf(":"));
  a = a.replace(/%.*$/, "");
  const v4 = ipv4Bytes(a);
  if (v4) return v4;
  const v6 = ipv6Bytes(a);
  if (!v6) return undefined;
  const mapped = v6.slice(0, 10).every((b) => b === 0) && v6[10] === 0xff && v6[11] === 0xff;
  return mapped ? v6.slice(12) : v6;
}

/** Parse one CIDR (`10.0.0.0/8`, `::1/128`; a bare address is a single host); throws on junk. */
export function parseCidr(text: string): Cidr {
  const [addr, len, ...rest] = text.trim().split("/");
  const bytes = rest.length === 0 ? addressBytes(addr) : undefined;
  if (!bytes) throw new Error(`not a CIDR block: ${text}`);
  const bits = bytes.length * 8;
  const prefix = len === undefined ? bits : Number(len);
  if (!/^[0-9]+$/.test(len ?? "0") || !Number.isInteger(prefix) || prefix < 0 || prefix > bits) {
    throw new Error(`not a CIDR block: ${text}`);
  }
  return { family: bytes.length === 4 ? 4 : 6, bytes, prefix };
}

/** Parse every CIDR of a list (see {@link parseCidr}). */
export function parseCidrs(list: readonly string[]): Cidr[] {
  return list.map(parseCidr);
}

/** True when `address` lies in one of `cidrs`. */
export function inCidrs(address: string, cidrs: readonly Cidr[]): boolean {
  if (cidrs.length === 0) return false;
  const bytes = addressBytes(address);
  if (!bytes) return false;
  for (const c of cidrs) {
    if (c.bytes.length !== bytes.length) continue;
    let bits = c.prefix;
    let i = 0;
    let match = true;
    while (bits > 0) {
      const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
      if ((bytes[i] & mask) !== (c.bytes[i] & mask)) {
        match = false;
        break;
      }
      bits -= 8;
      i++;
    }
    if (match) return true;
  }
  return false;
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
  trusted: readonly Cidr[],
): string | undefined {
  if (peer === undefined || !inCidrs(peer, trusted)) return peer;
  const fwd = headers.get("forwarded");
  const hops = fwd !== null
    ? forwardedFor(fwd)
    : (headers.get("x-forwarded-for") ?? "").split(",").map((s) => s.trim()).filter((s) =>
      s !== ""
    );
  if (hops.length === 0) return peer;
  for (let i = hops.length - 1; i >= 0; i--) {
    const bytes = addressBytes(hops[i]);
    if (!bytes) return peer;
    if (!inCidrs(hops[i], trusted)) return normalized(hops[i]);
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
