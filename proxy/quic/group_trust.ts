/**
 * Which client address groups (or networks) finish their QUIC handshakes, for
 * the admission limits (`admission.ts`): a real client completes its
 * handshake within a round trip, a spoofed Initial never does. Each group
 * keeps a count of completed and of failed handshakes (closed, shed or timed
 * out before completing) that halves every `halfLifeMs`; a group is trusted
 * while it has completed some and at least as many as failed. A group that
 * never completed a handshake has no record at all (a flood of spoofed
 * sources creates none), and the records are bounded in number, least
 * recently completed dropped first.
 *
 * Pure: the clock is injected.
 *
 * @module
 */

/** Decayed counts of one group. */
interface GroupRecord {
  completed: number;
  failed: number;
  /** When the counts were last decayed (the clock's ms). */
  at: number;
}

/** Below this many (decayed) completions a record is forgotten. */
const FORGOTTEN = 0.1;

/** Options of {@link GroupTrust}. */
export interface GroupTrustOptions {
  /** The counts halve over this many ms. */
  halfLifeMs: number;
  /** Groups remembered at most (least recently completed dropped first). */
  maxGroups: number;
}

/**
 * Completion records of address groups.
 *
 * @example
 * ```ts
 * const trust = new GroupTrust({ halfLifeMs: 10_000, maxGroups: 4096 }, performance.now);
 * trust.completed("4:192.0.2.1/32");
 * trust.trusted("4:192.0.2.1/32"); // true
 * trust.failed("4:192.0.2.1/32");
 * trust.failed("4:192.0.2.1/32");
 * trust.trusted("4:192.0.2.1/32"); // false: more failed than completed
 * ```
 */
export class GroupTrust {
  readonly #opts: GroupTrustOptions;
  readonly #now: () => number;
  /** Records, least recently completed first (a Map keeps insertion order). */
  readonly #records = new Map<string, GroupRecord>();

  /** Creates an empty record set; `now` is a monotonic clock in milliseconds. */
  constructor(opts: GroupTrustOptions, now: () => number) {
    this.#opts = opts;
    this.#now = now;
  }

  /** Groups remembered now. */
  get size(): number {
    return this.#records.size;
  }

  /** A handshake of `key` completed. */
  completed(key: string): void {
    const record = this.#current(key) ?? { completed: 0, failed: 0, at: this.#now() };
    record.completed++;
    this.#records.delete(key);
    this.#records.set(key, record);
    if (this.#records.size > this.#opts.maxGroups) {
      this.#records.delete(this.#records.keys().next().value!);
    }
  }

  /** A handshake of `key` ended without completing (counted only for a group with a record). */
  failed(key: string): void {
    const record = this.#current(key);
    if (record) record.failed++;
  }

  /** Whether `key` recently completed handshakes, at least as many as failed. */
  trusted(key: string): boolean {
    const record = this.#current(key);
    return record !== undefined && record.completed >= record.failed;
  }

  /** The record of `key` decayed to now, or `undefined` (forgotten once it decays away). */
  #current(key: string): GroupRecord | undefined {
    const record = this.#records.get(key);
    if (!record) return undefined;
    const now = this.#now();
    if (now > record.at) {
      const factor = 2 ** (-(now - record.at) / this.#opts.halfLifeMs);
      record.completed *= factor;
      record.failed *= factor;
      record.at = now;
    }
    if (record.completed < FORGOTTEN) {
      this.#records.delete(key);
      return undefined;
    }
    return record;
  }
}
