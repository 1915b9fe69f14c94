/**
 * `round-robin`: smooth weighted round-robin (the algorithm nginx uses).
 *
 * @module
 */

import { type BackendRef, type Balancer, type BalanceRequest, usableBackends } from "./types.ts";

/**
 * Smooth weighted round-robin over the backends that are available at each
 * call. Every call adds each available backend's weight to its running
 * `current` value, picks the largest (first in list order on ties) and
 * subtracts the total available weight from the winner. Weights are honoured
 * exactly and interleaved evenly: weights 5:1:1 give `a a b a c a a`, never
 * five `a` in a row. Unavailable backends are skipped without changing their
 * state, so the rotation carries on smoothly when they come back.
 *
 * The rest of the returned list (the retry order) is the other available
 * backends in list order, starting after the chosen one and wrapping around:
 * O(n) per call, and consecutive requests retry on different backends.
 *
 * @example
 * ```ts
 * const lb = new RoundRobinBalancer([
 *   { id: "a", address: "10.0.0.1:80", weight: 200 },
 *   { id: "b", address: "10.0.0.2:80", weight: 100 },
 * ]);
 * const req = { path: "/", header: () => null };
 * [0, 1, 2].map(() => lb.candidates(req, () => true)[0].id); // ["a", "b", "a"]
 * ```
 */
export class RoundRobinBalancer implements Balancer {
  readonly #backends: BackendRef[];
  readonly #current: Float64Array;
  readonly #avail: Int32Array;
  #busy = false;

  /**
   * Creates the balancer; the rotation starts at the first backend.
   *
   * @param backends the pool; drained (weight 0) and duplicate ids are dropped.
   */
  constructor(backends: readonly BackendRef[]) {
    this.#backends = usableBackends(backends);
    this.#current = new Float64Array(this.#backends.length);
    this.#avail = new Int32Array(this.#backends.length);
  }

  /** See {@link Balancer.candidates}. */
  candidates(_req: BalanceRequest, isAvailable: (id: string) => boolean): BackendRef[] {
    const backends = this.#backends;
    const current = this.#current;
    // A re-entrant call (from isAvailable) must not clobber the scratch list.
    const reentrant = this.#busy;
    const avail = reentrant ? new Int32Array(backends.length) : this.#avail;
    this.#busy = true;
    try {
      return this.#pick(backends, current, avail, isAvailable);
    } finally {
      this.#busy = reentrant;
    }
  }

  #pick(
    backends: BackendRef[],
    current: Float64Array,
    avail: Int32Array,
    isAvailable: (id: string) => boolean,
  ): BackendRef[] {
    let count = 0;
    let total = 0;
    let best = -1;
    for (let i = 0; i < backends.length; i++) {
      const b = backends[i];
      if (!isAvailable(b.id)) continue;
      avail[count++] = i;
      current[i] += b.weight;
      total += b.weight;
      if (best < 0 || current[i] > current[best]) best = i;
    }
    if (best < 0) return [];
    current[best] -= total;
    const out = [backends[best]];
    if (count === 1) return out;
    let pos = 0;
    while (avail[pos] !== best) pos++;
    for (let k = 1; k < count; k++) {
      let at = pos + k;
      if (at >= count) at -= count;
      out.push(backends[avail[at]]);
    }
    return out;
  }
}
