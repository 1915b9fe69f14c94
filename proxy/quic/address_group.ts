/**
 * Client addresses grouped by prefix for the admission limits: one client on
 * IPv6 usually holds a whole /64 (2^64 addresses, RFC 4291 §2.5.1 interface
 * identifiers), so counting exact addresses would let it open as many
 * connections as it likes. A group is the address masked to a prefix length;
 * IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`, how a dual-stack socket
 * reports an IPv4 peer) count as IPv4.
 *
 * @module
 */

/** Prefix lengths that make one group, per address family. */
export interface PrefixLengths {
  /** IPv4 prefix length, 0-32 (32: one address per group). */
  v4: number;
  /** IPv6 prefix length, 0-128 (64: one customer LAN per group). */
  v6: number;
}

/**
 * The 4 (IPv4) or 16 (IPv6) bytes of an address, or `undefined` when `text`
 * is not an IP address. An IPv4-mapped IPv6 address gives its 4 IPv4 bytes; a
 * zone (`fe80::1%eth0`) is ignored.
 */
export function parseIp(text: string): Uint8Array | undefined {
  if (text.includes(":")) return parseIpv6(text);
  return parseIpv4(text);
}

function parseIpv4(text: string): Uint8Array | undefined {
  const parts = text.split(".");
  if (parts.length !== 4) return undefined;
  const out = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    const p = parts[i];
    if (!/^\d{1,3}$/.test(p)) return undefined;
    const n = Number(p);
    if (n > 255) return undefined;
    out[i] = n;
  }
  return out;
}

function parseIpv6(input: string): Uint8Array | undefined {
  let text = input;
  const zone = text.indexOf("%");
  if (zone !== -1) text = text.slice(0, zone);
  if (text.startsWith("[") && text.endsWith("]")) text = text.slice(1, -1);
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const words = (s: string): number[] | undefined => {
    if (s === "") return [];
    const out: number[] = [];
    const parts = s.split(":");
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i];
      if (i === parts.length - 1 && p.includes(".")) {
        const v4 = parseIpv4(p);
        if (!v4) return undefined;
        out.push((v4[0] << 8) | v4[1], (v4[2] << 8) | v4[3]);
      } else if (/^[0-9a-fA-F]{1,4}$/.test(p)) {
        out.push(parseInt(p, 16));
      } else return undefined;
    }
    return out;
  };
  const head = words(halves[0]);
  const tail = halves.length === 2 ? words(halves[1]) : [];
  if (!head || !tail) return undefined;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;
  const all = [...head, ...new Array<number>(missing).fill(0), ...tail];
  const out = new Uint8Array(16);
  for (let i = 0; i < 8; i++) {
    out[2 * i] = all[i] >> 8;
    out[2 * i + 1] = all[i] & 0xff;
  }
  // ::ffff:a.b.c.d is an IPv4 peer on a dual-stack socket.
  if (out.subarray(0, 10).every((b) => b === 0) && out[10] === 0xff && out[11] === 0xff) {
    return out.slice(12);
  }
  return out;
}

/**
 * The group key of an address: its family and the address masked to the
 * family's prefix length, e.g. `4:203.0.113.0/24` or `6:2001:db8:0:0:0:0:0:0/64`.
 * Text that is not an IP address is its own group.
 *
 * @example
 * ```ts
 * addressGroup("2001:db8::1", { v4: 32, v6: 64 }); // "6:2001:db8:0:0:0:0:0:0/64"
 * addressGroup("2001:db8::2", { v4: 32, v6: 64 }); // the same group
 * addressGroup("::ffff:192.0.2.7", { v4: 24, v6: 64 }); // "4:192.0.2.0/24"
 * ```
 */
export function addressGroup(address: string, prefix: PrefixLengths): string {
  const bytes = parseIp(address);
  if (!bytes) return `?:${address}`;
  const v4 = bytes.length === 4;
  const bits = Math.max(0, Math.min(v4 ? 32 : 128, v4 ? prefix.v4 : prefix.v6));
  const masked = bytes.slice();
  for (let i = 0; i < masked.length; i++) {
    const keep = Math.max(0, Math.min(8, bits - 8 * i));
    masked[i] &= keep === 0 ? 0 : (0xff << (8 - keep)) & 0xff;
  }
  if (v4) return `4:${masked.join(".")}/${bits}`;
  const words: string[] = [];
  for (let i = 0; i < 16; i += 2) words.push(((masked[i] << 8) | masked[i + 1]).toString(16));
  return `6:${words.join(":")}/${bits}`;
}
