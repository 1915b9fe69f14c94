/**
 * A spoofed-Initial flood for tests (issue #24 item 3): properly protected QUIC
 * v1 client Initials (RFC 9000 §17.2.2, keys and header protection of
 * RFC 9001 §5) carrying a TLS 1.3 ClientHello with ALPN `h3` and QUIC
 * transport parameters, padded to 1200 bytes, each with a fresh Destination
 * Connection ID, sent from chosen 127.0.0.0/8 source addresses, bounded in
 * count and in time.
 *
 * The sending sockets stay open (and unread) until {@link InitialFlood.close}:
 * the server's replies land in their receive buffers and no ICMP "port
 * unreachable" tells the server the peer is gone, as with a spoofed source on
 * a real network. Nothing ever completes a handshake.
 *
 * A server only creates connection state for an Initial it can decrypt (quinn
 * drops one whose header protection or AEAD fails), hence the real protection
 * here rather than random bytes.
 *
 * Run as a tool:
 * ```sh
 * deno run -A tests/support/initial_flood.ts --port 8443 --rate 1000 --count 5000 --sources 250
 * ```
 *
 * @module
 */

// deno-lint-ignore-file no-console
import { createCipheriv, createHmac, randomBytes } from "node:crypto";
import { sleep } from "./wait.ts";

/** QUIC v1 initial salt (RFC 9001 §5.2). */
const INITIAL_SALT = hex("38762cf7f55934b34d179ae6a4c80cadccbb7f0a");

/** Bytes of a hex string. */
function hex(s: string): Uint8Array {
  return Uint8Array.from(s.match(/../g)!, (b) => parseInt(b, 16));
}

/** Smallest datagram that may carry a client Initial (RFC 9000 §14.1). */
const DATAGRAM_SIZE = 1200;

function hkdfExtract(salt: Uint8Array, ikm: Uint8Array): Uint8Array {
  return new Uint8Array(createHmac("sha256", salt).update(ikm).digest());
}

/** HKDF-Expand-Label of TLS 1.3 (RFC 8446 §7.1) with an empty context, up to 32 bytes. */
function expandLabel(secret: Uint8Array, label: string, length: number): Uint8Array {
  const full = new TextEncoder().encode(`tls13 ${label}`);
  const info = new Uint8Array(2 + 1 + full.length + 1 + 1);
  info[0] = length >> 8;
  info[1] = length & 0xff;
  info[2] = full.length;
  info.set(full, 3);
  info[3 + full.length] = 0; // empty context
  info[info.length - 1] = 1; // HKDF-Expand counter (one block suffices for <= 32 bytes)
  return new Uint8Array(createHmac("sha256", secret).update(info).digest()).slice(0, length);
}

/** The client's Initial keys for a Destination Connection ID (RFC 9001 §5.2). */
export function clientInitialKeys(
  dcid: Uint8Array,
): { key: Uint8Array; iv: Uint8Array; hp: Uint8Array } {
  const initial = hkdfExtract(INITIAL_SALT, dcid);
  const client = expandLabel(initial, "client in", 32);
  return {
    key: expandLabel(client, "quic key", 16),
    iv: expandLabel(client, "quic iv", 12),
    hp: expandLabel(client, "quic hp", 16),
  };
}

/** A growable byte writer (TLS vectors are length-prefixed, filled in afterwards). */
class Writer {
  bytes: number[] = [];
  u8(v: number): this {
    this.bytes.push(v & 0xff);
    return this;
  }
  u16(v: number): this {
    return this.u8(v >> 8).u8(v);
  }
  raw(b: ArrayLike<number>): this {
    for (let i = 0; i < b.length; i++) this.bytes.push(b[i]);
    return this;
  }
  /** Writes `fill` behind a big-endian length prefix of `size` bytes. */
  vec(size: 1 | 2 | 3, fill: (w: Writer) => void): this {
    const inner = new Writer();
    fill(inner);
    const n = inner.bytes.length;
    if (size === 3) this.u8(n >> 16);
    if (size >= 2) this.u8(n >> 8);
    this.u8(n);
    return this.raw(inner.bytes);
  }
  varint(v: number): this {
    if (v < 0x40) return this.u8(v);
    if (v < 0x4000) return this.u16(0x4000 | v);
    return this.u16(0x8000 | (v >> 16)).u16(v & 0xffff);
  }
}

/**
 * A TLS 1.3 ClientHello (RFC 8446 §4.1.2) as a QUIC client sends it: x25519
 * key share, ALPN, SNI, and the quic_transport_parameters extension
 * (RFC 9001 §8.2) with `initial_source_connection_id` (RFC 9000 §7.3).
 */
export function clientHello(scid: Uint8Array, serverName: string, alpn = "h3"): Uint8Array {
  const ext = (w: Writer, type: number, fill: (w: Writer) => void) => w.u16(type).vec(2, fill);
  const name = new TextEncoder().encode(serverName);
  const alpnBytes = new TextEncoder().encode(alpn);
  const body = new Writer()
    .u16(0x0303) // legacy_version
    .raw(randomBytes(32))
    .u8(0) // empty legacy_session_id (QUIC, RFC 9001 §8.4)
    .vec(2, (w) => w.u16(0x1301).u16(0x1302).u16(0x1303))
    .vec(1, (w) => w.u8(0))
    .vec(2, (w) => {
      ext(w, 0, (s) => s.vec(2, (l) => l.u8(0).vec(2, (n) => n.raw(name)))); // server_name
      ext(w, 10, (s) => s.vec(2, (l) => l.u16(0x001d).u16(0x0017))); // supported_groups
      ext(w, 13, (s) => s.vec(2, (l) => l.u16(0x0403).u16(0x0804).u16(0x0807).u16(0x0401)));
      ext(w, 16, (s) => s.vec(2, (l) => l.vec(1, (p) => p.raw(alpnBytes)))); // ALPN
      ext(w, 43, (s) => s.vec(1, (l) => l.u16(0x0304))); // supported_versions: TLS 1.3
      ext(w, 45, (s) => s.vec(1, (l) => l.u8(1))); // psk_key_exchange_modes: psk_dhe_ke
      ext(w, 51, (s) => s.vec(2, (l) => l.u16(0x001d).vec(2, (k) => k.raw(randomBytes(32)))));
      ext(w, 0x39, (s) => {
        // initial_source_connection_id, max_idle_timeout 30 s, initial_max_data 1 MiB
        s.varint(0x0f).varint(scid.length).raw(scid);
        s.varint(0x01).varint(4).u16(0x8000).u16(30_000);
        s.varint(0x04).varint(4).u16(0x8010).u16(0);
      });
    });
  return Uint8Array.from(new Writer().u8(1).vec(3, (w) => w.raw(body.bytes)).bytes);
}

/**
 * One protected client Initial (RFC 9000 §17.2.2, RFC 9001 §5.3-5.4) with a
 * CRYPTO frame holding `hello`, padded to a 1200-byte datagram.
 */
export function protectedInitial(
  dcid: Uint8Array,
  scid: Uint8Array,
  hello: Uint8Array,
  packetNumber = 0,
): Uint8Array {
  const pnLength = 4;
  const tagLength = 16;
  const header = new Writer()
    .u8(0xc0 | (pnLength - 1)) // long header, fixed bit, Initial, 4-byte packet number
    .u16(0).u16(1) // version 1
    .u8(dcid.length).raw(dcid)
    .u8(scid.length).raw(scid)
    .varint(0); // no token
  // The Length field is always 2 bytes here (a payload near 1,150 bytes).
  const lengthFieldAt = header.bytes.length;
  const payloadLength = DATAGRAM_SIZE - lengthFieldAt - 2 - pnLength - tagLength;
  header.u16(0x4000 | (pnLength + payloadLength + tagLength));
  const pnOffset = header.bytes.length;
  header.u16(packetNumber >>> 16).u16(packetNumber & 0xffff);
  const frame = new Writer().u8(0x06).varint(0).varint(hello.length).raw(hello).bytes;
  if (frame.length > payloadLength) throw new Error("ClientHello does not fit one Initial");
  const plain = new Uint8Array(payloadLength); // zeros after the frame are PADDING frames
  plain.set(frame);
  const keys = clientInitialKeys(dcid);
  const nonce = keys.iv.slice();
  for (let i = 0; i < 4; i++) nonce[8 + i] ^= (packetNumber >>> (24 - 8 * i)) & 0xff;
  const aad = Uint8Array.from(header.bytes);
  const gcm = createCipheriv("aes-128-gcm", keys.key, nonce);
  gcm.setAAD(aad);
  const body = gcm.update(plain);
  const tail = gcm.final();
  const tag = gcm.getAuthTag();
  const packet = new Uint8Array(aad.length + body.length + tail.length + tag.length);
  packet.set(aad);
  packet.set(body, aad.length);
  packet.set(tail, aad.length + body.length);
  packet.set(tag, aad.length + body.length + tail.length);
  // Header protection: the sample starts 4 bytes after the packet number's start.
  const sample = packet.subarray(pnOffset + 4, pnOffset + 20);
  const ecb = createCipheriv("aes-128-ecb", keys.hp, null);
  const mask = new Uint8Array(ecb.update(sample));
  packet[0] ^= mask[0] & 0x0f;
  for (let i = 0; i < pnLength; i++) packet[pnOffset + i] ^= mask[1 + i];
  return packet;
}

/** A fresh client Initial for a new connection attempt (random 8-byte CIDs). */
export function randomInitial(serverName = "localhost"): Uint8Array {
  const dcid = new Uint8Array(randomBytes(8));
  const scid = new Uint8Array(randomBytes(8));
  return protectedInitial(dcid, scid, clientHello(scid, serverName));
}

/**
 * `n` distinct loopback source addresses spread over many /24 (and /16)
 * prefixes: 127.X.Y.Z with X from 100 on, so they never meet 127.0.0.1 nor
 * one /24 twice until n > 250 × 100.
 */
export function spreadSources(n: number): string[] {
  return Array.from({ length: n }, (_, i) => `127.${100 + (i % 100)}.${Math.floor(i / 100)}.7`);
}

/** Options of {@link floodInitials}. */
export interface FloodOptions {
  /** Where the Initials go. */
  hostname: string;
  port: number;
  /** Source addresses (each gets one socket, bound to port 0). */
  sources: string[];
  /** Initials to send in all (each a new connection attempt). */
  count: number;
  /** Initials per second (paced in 10 ms slices). */
  rate: number;
  /** Stop sending after this long even if `count` is not reached (default 60 s). */
  maxDurationMs?: number;
  /** SNI of the ClientHello (default `localhost`). */
  serverName?: string;
}

/** A flood under way (or finished): its sockets stay open until closed. */
export interface InitialFlood {
  /** Settles when sending stops, with what was sent and how long it took. */
  readonly done: Promise<{ sent: number; elapsedMs: number; sendErrors: number }>;
  /** Initials sent so far. */
  readonly sent: number;
  /** Stops sending (if still sending) and closes every source socket. */
  close(): Promise<void>;
}

/**
 * Prepares `count` Initials (before the clock starts, so pacing is not held
 * back by crypto), then sends them round-robin over the source addresses at
 * `rate` per second.
 */
export function floodInitials(opts: FloodOptions): InitialFlood {
  if (opts.sources.length === 0) throw new Error("floodInitials: no source address");
  const packets = Array.from(
    { length: opts.count },
    () => randomInitial(opts.serverName ?? "localhost"),
  );
  const sockets = opts.sources.map((hostname) =>
    Deno.listenDatagram({ transport: "udp", hostname, port: 0 })
  );
  const target: Deno.NetAddr = { transport: "udp", hostname: opts.hostname, port: opts.port };
  let sent = 0;
  let sendErrors = 0;
  let stopped = false;
  const run = async () => {
    const start = performance.now();
    const deadline = start + (opts.maxDurationMs ?? 60_000);
    const sends: Promise<unknown>[] = [];
    while (!stopped && sent < packets.length && performance.now() < deadline) {
      const elapsed = performance.now() - start;
      const due = Math.min(packets.length, Math.floor((elapsed / 1000) * opts.rate) + 1);
      while (sent < due) {
        const socket = sockets[sent % sockets.length];
        sends.push(socket.send(packets[sent], target).catch(() => sendErrors++));
        sent++;
      }
      if (sends.length > 256) await Promise.all(sends.splice(0));
      await sleep(10);
    }
    await Promise.all(sends);
    return { sent, elapsedMs: performance.now() - start, sendErrors };
  };
  const done = run();
  return {
    done,
    get sent() {
      return sent;
    },
    async close() {
      stopped = true;
      await done.catch(() => {});
      for (const s of sockets) {
        try {
          s.close();
        } catch {
          // already closed
        }
      }
    },
  };
}

if (import.meta.main) {
  const { parseArgs } = await import("node:util");
  const { values } = parseArgs({
    options: {
      host: { type: "string", default: "127.0.0.1" },
      port: { type: "string" },
      rate: { type: "string", default: "1000" },
      count: { type: "string", default: "5000" },
      sources: { type: "string", default: "250" },
      "hold-ms": { type: "string", default: "0" },
    },
  });
  if (!values.port) {
    console.error(
      "usage: initial_flood.ts --port N [--host H] [--rate R] [--count N] [--sources N]",
    );
    Deno.exit(2);
  }
  const flood = floodInitials({
    hostname: values.host!,
    port: Number(values.port),
    sources: spreadSources(Number(values.sources)),
    count: Number(values.count),
    rate: Number(values.rate),
  });
  const r = await flood.done;
  console.log(
    `sent ${r.sent} Initials in ${r.elapsedMs.toFixed(0)} ms (${
      (r.sent / (r.elapsedMs / 1000)).toFixed(0)
    }/s), ${r.sendErrors} send errors`,
  );
  await sleep(Number(values["hold-ms"]));
  await flood.close();
}
