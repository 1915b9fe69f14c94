/**
 * Admission bookkeeping of one QUIC port, without I/O: which handshakes and
 * connections are held, which one to shed when a newcomer arrives, and which
 * handshakes have outlived their deadline. The transport (`deno_transport.ts`)
 * feeds it events and closes what it names.
 *
 * Built for a spoofed-Initial flood. Deno's QUIC API has no Retry and shows a
 * newcomer's address only after `accept()` (reading it before consumes the
 * incoming connection), so spoofed Initials cannot be told apart or turned
 * away unseen: each is accepted, and a full table makes room by closing an
 * unfinished handshake rather than refusing the newcomer. A real client
 * finishes its handshake in one round trip; a spoofed one never does. So a
 * flood of R Initials per second only hurts a client whose handshake takes
 * longer than (table size) / R: with 256 slots and 1,000 Initials/s, 256 ms.
 * A handshake's deadline also shortens as the table fills.
 *
 * The per-address and per-network caps bite only under pressure, and never
 * on a group whose handshakes complete (`group_trust.ts`): many clients
 * behind one NAT, a carrier's CGNAT or a load test open hundreds of
 * handshakes from one address at once, and a handshake slowed by a dropped
 * Initial is still legitimate. Unfinished handshakes per address group and
 * per network only choose WHO is shed once the handshake table is full: a
 * group or network over its cap that does not complete its handshakes gives
 * up its own oldest first (a flood from one network sheds its own), then the
 * oldest of all. Handshakes and connections per address group are capped
 * only while the connection table is at least half full.
 *
 * @module
 */

import { addressGroup, type PrefixLengths } from "./address_group.ts";
import { GroupTrust } from "./group_trust.ts";
import type { RejectReason } from "./transport.ts";

/**
 * What one UDP port admits. A QUIC handshake costs the server state from the
 * client's first packet on, so unfinished handshakes are bounded in number
 * (globally, per address group and per network) and in time; connections in
 * number, in all and per address group.
 */
export interface AdmissionLimits {
  /**
   * A handshake not complete by then is closed (ms; default 10000). The
   * deadline shortens once the handshake table is more than half full, to a
   * tenth of this when it is full.
   */
  handshakeTimeoutMs: number;
  /** Unfinished handshakes at once; a newcomer past it sheds the oldest (default 256). */
  maxHandshakes: number;
  /** Established connections; past it newcomers are refused (default 4096). */
  maxConnections: number;
  /**
   * Handshakes and connections from one address group while the connection
   * table is at least half full; past it the group's oldest handshake is
   * shed, or the newcomer refused (default 64).
   */
  maxPerAddress: number;
  /**
   * Unfinished handshakes from one address group; once the handshake table
   * is full, a group past it that does not complete its handshakes is shed
   * from first, oldest first (default 64).
   */
  maxHandshakesPerAddress: number;
  /** The same per network (default 128). */
  maxHandshakesPerNetwork: number;
  /**
   * New handshakes accepted per second (a token bucket holding one second's
   * worth, at least `maxHandshakes`); past it Initials are ignored unseen
   * (default 2000). Accepting an Initial costs the runtime a TLS server
   * flight (about 250 µs of CPU, measured on Deno 2.9.6), ignoring one about
   * 25 µs: this bounds what a flood can take from the QUIC thread, at the
   * price of a retransmission for legitimate clients caught in it.
   */
  maxHandshakeRate: number;
  /** Prefix lengths that make one address group (default IPv4 /32, IPv6 /64). */
  addressPrefix: PrefixLengths;
  /** Prefix lengths that make one network (default IPv4 /24, IPv6 /56). */
  networkPrefix: PrefixLengths;
}

/** Defaults of {@link AdmissionLimits}. */
export const DEFAULT_ADMISSION_LIMITS: Readonly<AdmissionLimits> = Object.freeze({
  handshakeTimeoutMs: 10_000,
  maxHandshakes: 256,
  maxConnections: 4096,
  maxPerAddress: 64,
  maxHandshakesPerAddress: 64,
  maxHandshakesPerNetwork: 128,
  maxHandshakeRate: 2000,
  addressPrefix: Object.freeze({ v4: 32, v6: 64 }),
  networkPrefix: Object.freeze({ v4: 24, v6: 56 }),
});

/** One admitted handshake or connection. */
export interface AdmissionEntry<H> {
  /** The caller's handle (the connection). */
  readonly handle: H;
  /** Address group key (see `address_group.ts`). */
  readonly group: string;
  /** Network key. */
  readonly network: string;
  /** When it was admitted (the injected clock's ms). */
  readonly started: number;
  /** `handshake` until established, `open` after, `gone` once released. */
  state: "handshake" | "open" | "gone";
}

/** An entry the table let go of, and why: the caller closes its connection. */
export interface Shed<H> {
  /** The entry let go of. */
  entry: AdmissionEntry<H>;
  /** Why: the limit it was shed for. */
  reason: RejectReason;
}

/** What {@link AdmissionTable.admit} decided. */
export type AdmitResult<H> =
  | { admitted: AdmissionEntry<H>; shed: Shed<H>[] }
  | { admitted: undefined; reason: RejectReason };

/** How fast a group's record of completed and failed handshakes fades (ms). */
const TRUST_HALF_LIFE_MS = 10_000;

/**
 * The held handshakes and connections of one port.
 *
 * @example
 * ```ts
 * declare const conn: Deno.QuicConn;
 *
 * const table = new AdmissionTable<Deno.QuicConn>(DEFAULT_ADMISSION_LIMITS, performance.now);
 * const r = table.admit(conn, conn.remoteAddr.hostname);
 * if (!r.admitted) conn.close(); // r.reason says why
 * else for (const s of r.shed) s.entry.handle.close();
 * ```
 */
export class AdmissionTable<H> {
  readonly #limits: AdmissionLimits;
  readonly #now: () => number;
  /** Unfinished handshakes, oldest first (a Set keeps insertion order). */
  readonly #pending = new Set<AdmissionEntry<H>>();
  readonly #pendingByGroup: PendingIndex<AdmissionEntry<H>>;
  readonly #pendingByNetwork: PendingIndex<AdmissionEntry<H>>;
  /** Which address groups and networks complete their handshakes. */
  readonly #groupTrust: GroupTrust;
  readonly #networkTrust: GroupTrust;
  /** Handshakes and connections per address group. */
  readonly #perGroup = new Map<string, number>();
  #established = 0;
  /** Handshakes the rate limit still allows now, and when it was last refilled. */
  #tokens: number;
  #refilled: number;

  /** Creates an empty table; `now` is a monotonic clock in milliseconds (injected for tests). */
  constructor(limits: AdmissionLimits, now: () => number) {
    this.#limits = limits;
    this.#now = now;
    this.#tokens = this.#burst();
    this.#refilled = now();
    this.#pendingByGroup = new PendingIndex(limits.maxHandshakesPerAddress);
    this.#pendingByNetwork = new PendingIndex(limits.maxHandshakesPerNetwork);
    const trust = { halfLifeMs: TRUST_HALF_LIFE_MS, maxGroups: limits.maxConnections };
    this.#groupTrust = new GroupTrust(trust, now);
    this.#networkTrust = new GroupTrust(trust, now);
  }

  #burst(): number {
    return Math.max(this.#limits.maxHandshakeRate, this.#limits.maxHandshakes);
  }

  /** Unfinished handshakes held. */
  get handshakes(): number {
    return this.#pending.size;
  }

  /** Established connections held. */
  get connections(): number {
    return this.#established;
  }

  /**
   * Whether a newcomer must be turned away before it is even accepted (its
   * address is not known yet): the reason, or `undefined` to accept it (which
   * takes one token of the handshake rate). `connections`: refuse it;
   * `handshake_rate`: ignore it (send nothing; a real client retransmits).
   */
  refuseUnseen(): RejectReason | undefined {
    if (this.#established >= this.#limits.maxConnections) return "connections";
    const now = this.#now();
    const elapsed = Math.max(0, now - this.#refilled);
    this.#refilled = now;
    this.#tokens = Math.min(
      this.#burst(),
      this.#tokens + (elapsed / 1000) * this.#limits.maxHandshakeRate,
    );
    if (this.#tokens < 1) return "handshake_rate";
    this.#tokens--;
    return undefined;
  }

  /**
   * Admits an accepted newcomer from `address`, shedding an unfinished
   * handshake when the handshake table is full, or turns it away when the
   * connection table is at least half full and its address group already
   * holds `maxPerAddress` established connections.
   */
  admit(handle: H, address: string): AdmitResult<H> {
    const limits = this.#limits;
    const group = addressGroup(address, limits.addressPrefix);
    const network = addressGroup(address, limits.networkPrefix);
    const shed: Shed<H>[] = [];
    if (
      this.#connectionsUnderPressure() && (this.#perGroup.get(group) ?? 0) >= limits.maxPerAddress
    ) {
      // The group's own oldest handshake makes room; with none, it holds only
      // established connections and the newcomer is the one turned away.
      const oldest = this.#pendingByGroup.oldest(group);
      if (oldest === undefined) return { admitted: undefined, reason: "per_address" };
      this.#shed(oldest, "per_address", shed);
    }
    if (this.#pending.size >= limits.maxHandshakes) {
      const [victim, reason] = this.#victim(group, network);
      this.#shed(victim, reason, shed);
    }
    const entry: AdmissionEntry<H> = {
      handle,
      group,
      network,
      started: this.#now(),
      state: "handshake",
    };
    this.#pending.add(entry);
    this.#pendingByGroup.add(group, entry);
    this.#pendingByNetwork.add(network, entry);
    this.#perGroup.set(group, (this.#perGroup.get(group) ?? 0) + 1);
    return { admitted: entry, shed };
  }

  /** Whether the per-address cap on handshakes and connections applies: the table is half full. */
  #connectionsUnderPressure(): boolean {
    return this.#established >= this.#limits.maxConnections / 2;
  }

  /**
   * The handshake to shed from a full table for a newcomer of `group` in
   * `network`: the oldest of the newcomer's own group, then network, when
   * over its cap and not trusted; else of any other such group or network;
   * else the oldest of all.
   */
  #victim(group: string, network: string): [AdmissionEntry<H>, RejectReason] {
    const groups = this.#pendingByGroup;
    const networks = this.#pendingByNetwork;
    const untrustedGroup = (key: string) => !this.#groupTrust.trusted(key);
    const untrustedNetwork = (key: string) => !this.#networkTrust.trusted(key);
    const fromGroup = groups.oldestOverCap(group, untrustedGroup);
    if (fromGroup) return [fromGroup, "address_handshakes"];
    const fromNetwork = networks.oldestOverCap(network, untrustedNetwork);
    if (fromNetwork) return [fromNetwork, "network_handshakes"];
    const elsewhereNetwork = networks.oldestOfAnyOverCap(untrustedNetwork);
    if (elsewhereNetwork) return [elsewhereNetwork, "network_handshakes"];
    const elsewhereGroup = groups.oldestOfAnyOverCap(untrustedGroup);
    if (elsewhereGroup) return [elsewhereGroup, "address_handshakes"];
    return [this.#pending.values().next().value!, "handshakes"];
  }

  #shed(entry: AdmissionEntry<H>, reason: RejectReason, into: Shed<H>[]): void {
    this.#release(entry);
    into.push({ entry, reason });
  }

  /**
   * The entry's handshake completed: it becomes an established connection.
   * False when it was shed or released meanwhile (the caller must not serve it).
   */
  established(entry: AdmissionEntry<H>): boolean {
    if (entry.state !== "handshake") return false;
    this.#unpend(entry);
    this.#groupTrust.completed(entry.group);
    this.#networkTrust.completed(entry.network);
    entry.state = "open";
    this.#established++;
    return true;
  }

  /** The entry's connection closed: its slots are free. */
  closed(entry: AdmissionEntry<H>): void {
    this.#release(entry);
  }

  /**
   * The deadline of an unfinished handshake now: `handshakeTimeoutMs` while
   * the table is at most half full, then shorter, down to a tenth when full.
   */
  deadlineMs(): number {
    const fill = this.#pending.size / this.#limits.maxHandshakes;
    const scale = Math.min(1, Math.max(0.1, 2 * (1 - fill)));
    return this.#limits.handshakeTimeoutMs * scale;
  }

  /** Sheds every unfinished handshake older than {@link deadlineMs}, oldest first. */
  sweep(): Shed<H>[] {
    const now = this.#now();
    const shed: Shed<H>[] = [];
    for (const entry of this.#pending) {
      if (now - entry.started <= this.deadlineMs()) break; // the rest are younger
      this.#shed(entry, "handshake_timeout", shed);
    }
    return shed;
  }

  #unpend(entry: AdmissionEntry<H>): void {
    this.#pending.delete(entry);
    this.#pendingByGroup.remove(entry.group, entry);
    this.#pendingByNetwork.remove(entry.network, entry);
  }

  #release(entry: AdmissionEntry<H>): void {
    if (entry.state === "gone") return;
    if (entry.state === "handshake") {
      // Ended before completing: shed, timed out, or closed by the peer.
      this.#unpend(entry);
      this.#groupTrust.failed(entry.group);
      this.#networkTrust.failed(entry.network);
    } else this.#established--;
    entry.state = "gone";
    const n = (this.#perGroup.get(entry.group) ?? 1) - 1;
    if (n === 0) this.#perGroup.delete(entry.group);
    else this.#perGroup.set(entry.group, n);
  }
}

/**
 * Unfinished handshakes by key (address group or network), oldest first per
 * key, with the keys holding at least `cap` of them indexed.
 */
class PendingIndex<V> {
  readonly #cap: number;
  readonly #byKey = new Map<string, Set<V>>();
  /** Keys holding at least `cap` values. */
  readonly #overCap = new Set<string>();

  constructor(cap: number) {
    this.#cap = cap;
  }

  add(key: string, value: V): void {
    let set = this.#byKey.get(key);
    if (!set) this.#byKey.set(key, set = new Set());
    set.add(value);
    if (set.size >= this.#cap) this.#overCap.add(key);
  }

  remove(key: string, value: V): void {
    const set = this.#byKey.get(key);
    if (!set) return;
    set.delete(value);
    if (set.size < this.#cap) this.#overCap.delete(key);
    if (set.size === 0) this.#byKey.delete(key);
  }

  /** The oldest value of `key`. */
  oldest(key: string): V | undefined {
    return this.#byKey.get(key)?.values().next().value;
  }

  /** The oldest value of `key` when it is at its cap and `eligible`. */
  oldestOverCap(key: string, eligible: (key: string) => boolean): V | undefined {
    return this.#overCap.has(key) && eligible(key) ? this.oldest(key) : undefined;
  }

  /** The oldest value of the first key at its cap that is `eligible`. */
  oldestOfAnyOverCap(eligible: (key: string) => boolean): V | undefined {
    for (const key of this.#overCap) if (eligible(key)) return this.oldest(key);
    return undefined;
  }
}
