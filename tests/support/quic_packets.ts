/**
 * Names the QUIC packets a datagram carries from their unprotected headers
 * (RFC 9000 §17): no keys needed, so a relay can tell a client's first flight
 * (Initial + 0-RTT) from its Finished (a Handshake packet) and from 1-RTT
 * traffic. QUIC version 1 only.
 *
 * @module
 */

/** A QUIC packet type as its header shows it. */
export type QuicPacketType = "initial" | "0rtt" | "handshake" | "retry" | "1rtt" | "other";

const LONG_TYPES: QuicPacketType[] = ["initial", "0rtt", "handshake", "retry"];

/**
 * The packets coalesced in one datagram, in order (RFC 9000 §12.2): long
 * header packets carry their length; a short header (1-RTT) packet runs to
 * the end of the datagram.
 *
 * @example
 * ```ts
 * quicPacketTypes(datagram); // e.g. ["initial", "0rtt"] for a resuming client's first flight
 * ```
 */
export function quicPacketTypes(datagram: Uint8Array): QuicPacketType[] {
  const out: QuicPacketType[] = [];
  let at = 0;
  while (at < datagram.length) {
    const first = datagram[at];
    if ((first & 0x80) === 0) {
      out.push("1rtt");
      break;
    }
    const version = readUint32(datagram, at + 1);
    if (version !== 1) {
      out.push("other");
      break;
    }
    const type = LONG_TYPES[(first & 0x30) >> 4];
    out.push(type);
    if (type === "retry") break;
    const end = longPacketEnd(datagram, at, type);
    if (end === undefined) break;
    at = end;
  }
  return out;
}

/** Where a long header packet starting at `at` ends, or undefined when truncated. */
function longPacketEnd(d: Uint8Array, at: number, type: QuicPacketType): number | undefined {
  let p = at + 5;
  const dcidLength = d[p];
  p += 1 + dcidLength;
  const scidLength = d[p];
  p += 1 + scidLength;
  if (type === "initial") {
    const token = readVarint(d, p);
    if (token === undefined) return undefined;
    p = token.next + token.value;
  }
  const length = readVarint(d, p);
  if (length === undefined) return undefined;
  const end = length.next + length.value;
  return end <= d.length ? end : undefined;
}

function readUint32(d: Uint8Array, p: number): number {
  if (p + 4 > d.length) return -1;
  return ((d[p] << 24) | (d[p + 1] << 16) | (d[p + 2] << 8) | d[p + 3]) >>> 0;
}

function readVarint(d: Uint8Array, p: number): { value: number; next: number } | undefined {
  if (p >= d.length) return undefined;
  const size = 1 << (d[p] >> 6);
  if (p + size > d.length) return undefined;
  let value = d[p] & 0x3f;
  for (let i = 1; i < size; i++) value = value * 256 + d[p + i];
  return { value, next: p + size };
}
