/**
 * `least-request`: the power of two choices over the requests in flight on
 * each backend (Envoy's `LEAST_REQUEST`).
 *
 * @module
 */

import { TwoChoicesBalancer } from "./two_choices.ts";
import type { BackendLoad } from "./load.ts";
import type { BackendRef, BalancerOptions } from "./types.ts";

/**
 * Least request: two available backends are drawn at random in proportion
 * to their weights, and the one with fewer attempts in flight per unit of
 * weight is chosen (the first drawn on a tie). Idle backends are picked in
 * proportion to their weights; under load a backend of weight 200 carries
 * about twice the requests in flight of one of weight 100, and a slow
 * backend, whose requests stay in flight longer, gets fewer new ones.
 *
 * Envoy, too, uses two choices when the weights are equal; with unequal
 * weights it schedules by `weight / (active + 1)` instead. Here the weights
 * weigh both the draw and the comparison, which keeps the choice O(1) after
 * the availability pass every balancer makes.
 *
 * The in-flight counts come from `opts.load`, which the forwarder feeds
 * (`AttemptObserver` of `load.ts`); a balancer rebuilt on a reload with the same
 * table carries on from them.
 *
 * @example
 * ```ts
 * import { LoadTable } from "./load.ts";
 * const load = new LoadTable();
 * const lb = new LeastRequestBalancer([
 *   { id: "a", address: "10.0.0.1:80", weight: 100 },
 *   { id: "b", address: "10.0.0.2:80", weight: 100 },
 * ], { load });
 * load.started("a"); // a has one request in flight
 * lb.candidates({ path: "/", header: () => null }, () => true)[0].id; // "b"
 * ```
 */
export class LeastRequestBalancer extends TwoChoicesBalancer {
  /**
   * Creates the balancer.
   *
   * @param backends the pool; drained (weight 0) and duplicate ids are dropped.
   * @param opts `load`: the pool's in-flight counts; `random`: the draws' source.
   */
  constructor(backends: readonly BackendRef[], opts: BalancerOptions = {}) {
    super(backends, inflightPerWeight, opts);
  }
}

/** Attempts in flight per unit of weight. */
function inflightPerWeight(load: BackendLoad, weight: number): number {
  return load.inflight / weight;
}
