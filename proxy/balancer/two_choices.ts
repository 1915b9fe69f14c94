/**
 * The power of two choices over the pool's load, shared by `least-request`
 * and `latency` (internal): two distinct available backends are drawn at
 * random with probability proportional to their weights, and the one with
 * the lower score (the balancer's measure of load, per unit of weight)
 * wins; on a tie the first drawn does. With no load at all every
 * comparison ties, so picks follow the weights exactly as `random` does.
 *
 * @module
 */

import type { BackendLoad, LoadReader } from "./load.ts";
import { LoadTable } from "./load.ts";
import {
  type BackendRef,
  type Balancer,
  type BalanceRequest,
  type BalancerOptions,
  usableBackends,
} from "./types.ts";

/** A backend's load per unit of weight at `now` (lower is better). */
export type LoadScore = (load: BackendLoad, weight: number, now: number) => number;

/**
 * Two random choices, weighted, the less loaded one first. The rest of the
 * list (the retry order) is the other choice, then the remaining available
 * backends in list order.
 */
export class TwoChoicesBalancer implements Balancer {
  readonly #backends: BackendRef[];
  readonly #loads: BackendLoad[];
  readonly #reader: LoadReader;
  readonly #score: LoadScore;
  readonly #random: () => number;

  /**
   * Creates the balancer over `backends` (drained and duplicate ids
   * dropped), reading `opts.load` (a table of its own when absent).
   */
  constructor(backends: readonly BackendRef[], score: LoadScore, opts: BalancerOptions = {}) {
    this.#backends = usableBackends(backends);
    this.#reader = opts.load ?? new LoadTable();
    this.#loads = this.#backends.map((b) => this.#reader.of(b.id));
    this.#score = score;
    this.#random = opts.random ?? Math.random;
  }

  /** See {@link Balancer.candidates}. */
  candidates(_req: BalanceRequest, isAvailable: (id: string) => boolean): BackendRef[] {
    const backends = this.#backends;
    const avail: number[] = [];
    let total = 0;
    for (let i = 0; i < backends.length; i++) {
      if (!isAvailable(backends[i].id)) continue;
      avail.push(i);
      total += backends[i].weight;
    }
    if (avail.length <= 1) return avail.map((i) => backends[i]);
    const first = this.#draw(avail, total, -1);
    const second = this.#draw(avail, total - backends[first].weight, first);
    const now = this.#reader.now();
    const score = (i: number) => this.#score(this.#loads[i], backends[i].weight, now);
    const best = score(second) < score(first) ? second : first;
    const other = best === first ? second : first;
    const out = [backends[best], backends[other]];
    for (const i of avail) if (i !== best && i !== other) out.push(backends[i]);
    return out;
  }

  /** One of `avail` but `skip`, drawn with probability weight / `total`. */
  #draw(avail: readonly number[], total: number, skip: number): number {
    const backends = this.#backends;
    let r = this.#random() * total;
    let last = -1;
    for (const i of avail) {
      if (i === skip) continue;
      last = i;
      r -= backends[i].weight;
      if (r < 0) return i;
    }
    // Rounding (or a random() of 1) can run past the end: take the last one.
    return last;
  }
}
