/**
 * `consistent-hash`: a hash ring with weighted virtual points.
 *
 * @module
 */

import { hash32, pointHash } from "./hash.ts";
import { extractHashKey, type HashKeySource, parseHashKeySource } from "./hash_key.ts";
import { RoundRobinBalancer } from "./round_robin.ts";
import {
  type BackendRef,
  type Balancer,
  BalancerConfigError,
  type BalanceRequest,
  usableBackends,
} from "./types.ts";

/** Virtual points of a backend with the default weight 100 (see {@link ConsistentHashBalancer}). */
export const DEFAULT_POINTS_PER_BACKEND = 1000;

/**
 * Upper bound on the ring size. Larger totals (only with very large weights)
 * are scaled down proportionally, which also moves points of unchanged
 * backends when the scale changes.
 */
export const MAX_RING_POINTS = 1 << 21;

const MAX_BACKENDS = 2 ** 24;

/** Options of {@link ConsistentHashBalancer}. */
export interface ConsistentHashOptions {
  /** `load_balancing.key`; defaults to `path`. */
  readonly key?: string;
  /** Virtual points of a weight-100 backend; default {@link DEFAULT_POINTS_PER_BACKEND}. */
  readonly pointsPerBackend?: number;
}

/**
 * Consistent hashing on a ring of 32-bit positions.
 *
 * - **Points.** A backend of weight `w` gets `max(1, round(P × w / 100))`
 *   virtual points, `P` = {@link DEFAULT_POINTS_PER_BACKEND} (1000): a
 *   default-weight backend has 1000 points, weight 50 has 500. The share of
 *   the ring a backend owns then deviates from its weight share by about
 *   `1/√points` (≈3 % at weight 100). Point `j` of a backend sits at
 *   {@link pointHash}(hash32(id), j): it depends on nothing but the backend's
 *   own id, so adding or removing a backend moves only the keys on its own
 *   arcs (about 1/N of them), and a weight change only moves keys near the
 *   points added or removed.
 * - **Keys.** `hash32` = FNV-1a 64 over UTF-8, folded by MurmurHash3's
 *   finaliser. The key comes from `load_balancing.key` (see
 *   {@link extractHashKey}): a header, a cookie, a query parameter or the path.
 * - **Order.** Candidates are the backends met walking clockwise from the
 *   key's position, each once, skipping unavailable ones; so when the owner
 *   of a key is down, its keys spread over the next points' owners (spread in
 *   proportion to weight), and come back when it recovers.
 * - **Fallback.** When the key is absent or empty (no such header, cookie or
 *   parameter), the request carries no affinity: it is spread by smooth
 *   weighted round-robin over the same backends rather than hashed, so that
 *   key-less traffic does not pile up on one backend.
 *
 * The constructor sorts the backends by id, so the ring does not depend on
 * the order of the configuration list. Building costs O(points) (a radix
 * sort; a few ms for 100 default-weight backends, i.e. 100,000 points), so a
 * balancer is simply rebuilt when weights change.
 */
export class ConsistentHashBalancer implements Balancer {
  readonly #backends: BackendRef[];
  /** Point positions, ascending. */
  readonly #positions: Uint32Array;
  /** Backend index owning each point of {@link #positions}. */
  readonly #owners: Uint32Array;
  readonly #key: HashKeySource;
  readonly #fallback: RoundRobinBalancer;
  // "Seen" marks reused across calls: backend i was seen in this call when
  // #seen[i] === #generation. A re-entrant call gets a fresh array.
  readonly #seen: Uint32Array;
  #generation = 0;
  #busy = false;

  /**
   * Builds the ring.
   *
   * @param backends the pool; drained (weight 0) and duplicate ids are dropped.
   * @throws {BalancerConfigError} for a bad key or 2^24 backends or more.
   */
  constructor(backends: readonly BackendRef[], opts: ConsistentHashOptions = {}) {
    this.#key = parseHashKeySource(opts.key);
    const list = usableBackends(backends).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    if (list.length >= MAX_BACKENDS) {
      throw new BalancerConfigError(`consistent-hash supports fewer than ${MAX_BACKENDS} backends`);
    }
    this.#backends = list;
    this.#fallback = new RoundRobinBalancer(list);
    this.#seen = new Uint32Array(list.length);
    const perBackend = opts.pointsPerBackend ?? DEFAULT_POINTS_PER_BACKEND;
    if (!(perBackend >= 1) || !Number.isFinite(perBackend)) {
      throw new BalancerConfigError(`pointsPerBackend must be >= 1, got ${perBackend}`);
    }
    const counts = list.map((b) => Math.max(1, Math.round((perBackend * b.weight) / 100)));
    let total = counts.reduce((s, c) => s + c, 0);
    if (total > MAX_RING_POINTS) {
      const scale = MAX_RING_POINTS / total;
      for (let i = 0; i < counts.length; i++) {
        counts[i] = Math.max(1, Math.floor(counts[i] * scale));
      }
      total = counts.reduce((s, c) => s + c, 0);
    }
    let positions = new Uint32Array(total);
    let owners = new Uint32Array(total);
    let k = 0;
    for (let i = 0; i < list.length; i++) {
      const seed = hash32(list[i].id);
      for (let j = 0; j < counts[i]; j++) {
        positions[k] = pointHash(seed, j);
        owners[k++] = i;
      }
    }
    // LSD radix sort by position, 4 passes of 8 bits. It is stable and the
    // points were written in backend order, so equal positions (rare) are
    // ordered by backend index: deterministic.
    let tmpPos = new Uint32Array(total);
    let tmpOwn = new Uint32Array(total);
    const bucket = new Uint32Array(256);
    for (let shift = 0; shift < 32; shift += 8) {
      bucket.fill(0);
      for (let p = 0; p < total; p++) bucket[(positions[p] >>> shift) & 0xff]++;
      let sum = 0;
      for (let b = 0; b < 256; b++) {
        const c = bucket[b];
        bucket[b] = sum;
        sum += c;
      }
      for (let p = 0; p < total; p++) {
        const at = bucket[(positions[p] >>> shift) & 0xff]++;
        tmpPos[at] = positions[p];
        tmpOwn[at] = owners[p];
      }
      [positions, tmpPos] = [tmpPos, positions];
      [owners, tmpOwn] = [tmpOwn, owners];
    }
    this.#positions = positions;
    this.#owners = owners;
  }

  /** Number of virtual points on the ring. */
  get ringSize(): number {
    return this.#positions.length;
  }

  /** See {@link Balancer.candidates}. */
  candidates(req: BalanceRequest, isAvailable: (id: string) => boolean): BackendRef[] {
    const key = extractHashKey(this.#key, req);
    if (key === null) return this.#fallback.candidates(req, isAvailable);
    return this.candidatesForKey(key, isAvailable);
  }

  /** Ordered candidates for an already extracted key (no fallback). */
  candidatesForKey(key: string, isAvailable: (id: string) => boolean): BackendRef[] {
    const backends = this.#backends;
    const owners = this.#owners;
    const size = owners.length;
    const n = backends.length;
    const out: BackendRef[] = [];
    if (n === 0) return out;
    let at = lowerBound(this.#positions, hash32(key));
    const reentrant = this.#busy;
    const seen = reentrant ? new Uint32Array(n) : this.#seen;
    let mark = 1;
    if (!reentrant) {
      if (this.#generation === 0xffffffff) {
        seen.fill(0);
        this.#generation = 0;
      }
      mark = ++this.#generation;
    }
    this.#busy = true;
    try {
      let seenCount = 0;
      for (let k = 0; k < size && seenCount < n; k++, at++) {
        if (at === size) at = 0;
        const idx = owners[at];
        if (seen[idx] === mark) continue;
        seen[idx] = mark;
        seenCount++;
        if (isAvailable(backends[idx].id)) out.push(backends[idx]);
      }
    } finally {
      this.#busy = reentrant;
    }
    return out;
  }
}

/** First index whose value is >= `x` (`a.length` when none). */
function lowerBound(a: Uint32Array, x: number): number {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
