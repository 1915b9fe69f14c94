/**
 * `random`: weighted random choice.
 *
 * @module
 */

import {
  type BackendRef,
  type Balancer,
  type BalanceRequest,
  type BalancerOptions,
  usableBackends,
} from "./types.ts";

/**
 * Weighted random balancer. The first candidate is backend `i` with
 * probability `weight_i / Σ weight` over the available backends; the rest of
 * the list continues the same weighted sampling without replacement, so a
 * retry also prefers heavier backends. Uses one random number per available
 * backend (minus one) and O(n log n) time (a Fenwick tree of weights).
 *
 * @example
 * ```ts
 * const lb = new RandomBalancer([{ id: "a", address: "10.0.0.1:80", weight: 100 }]);
 * lb.candidates({ path: "/", header: () => null }, () => true)[0].id; // "a"
 * ```
 */
export class RandomBalancer implements Balancer {
  readonly #backends: BackendRef[];
  readonly #random: () => number;
  // Scratch space reused across calls (allocating typed arrays costs more than
  // the sampling itself); a re-entrant call gets fresh arrays.
  readonly #tree: Float64Array;
  readonly #taken: Uint8Array;
  #busy = false;

  /**
   * Creates the balancer.
   *
   * @param backends the pool; drained (weight 0) and duplicate ids are dropped.
   * @param opts `random` to inject a random source (tests).
   */
  constructor(backends: readonly BackendRef[], opts: BalancerOptions = {}) {
    this.#backends = usableBackends(backends);
    this.#random = opts.random ?? Math.random;
    this.#tree = new Float64Array(this.#backends.length + 1);
    this.#taken = new Uint8Array(this.#backends.length);
  }

  /** See {@link Balancer.candidates}. */
  candidates(_req: BalanceRequest, isAvailable: (id: string) => boolean): BackendRef[] {
    const pool: BackendRef[] = [];
    for (const b of this.#backends) if (isAvailable(b.id)) pool.push(b);
    const m = pool.length;
    if (m <= 1) return pool;
    const reentrant = this.#busy;
    this.#busy = true;
    try {
      return this.#sample(pool, reentrant);
    } finally {
      this.#busy = reentrant;
    }
  }

  #sample(pool: BackendRef[], reentrant: boolean): BackendRef[] {
    const m = pool.length;
    // Fenwick tree of the remaining weights: each draw and removal is O(log m).
    const tree = reentrant ? new Float64Array(m + 1) : this.#tree;
    const taken = reentrant ? new Uint8Array(m) : this.#taken;
    if (!reentrant) {
      tree.fill(0, 0, m + 1);
      taken.fill(0, 0, m);
    }
    let total = 0;
    for (let i = 1; i <= m; i++) {
      const w = pool[i - 1].weight;
      total += w;
      tree[i] += w;
      const j = i + (i & -i);
      if (j <= m) tree[j] += tree[i];
    }
    let top = 1;
    while (top * 2 <= m) top *= 2;
    const out: BackendRef[] = [];
    for (let left = m; left > 1; left--) {
      let r = this.#random() * total;
      let pos = 0;
      for (let step = top; step > 0; step >>= 1) {
        const next = pos + step;
        if (next <= m && tree[next] <= r) {
          pos = next;
          r -= tree[next];
        }
      }
      // Rounding (or a random() of 1) can run past the end: take the last one left.
      if (pos >= m || taken[pos] === 1) {
        pos = m - 1;
        while (taken[pos] === 1) pos--;
      }
      taken[pos] = 1;
      const w = pool[pos].weight;
      out.push(pool[pos]);
      total -= w;
      for (let i = pos + 1; i <= m; i += i & -i) tree[i] -= w;
    }
    for (let i = 0; i < m; i++) if (taken[i] === 0) out.push(pool[i]);
    return out;
  }
}
