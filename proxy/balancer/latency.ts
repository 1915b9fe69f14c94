/**
 * `latency`: the power of two choices over each backend's peak-EWMA
 * response time × (requests in flight + 1), as Finagle and linkerd balance.
 *
 * @module
 */

import { TwoChoicesBalancer } from "./two_choices.ts";
import type { BackendLoad } from "./load.ts";
import type { BackendRef, BalancerOptions } from "./types.ts";

/**
 * Latency-aware: two available backends are drawn at random in proportion
 * to their weights, and the one with the lower cost per unit of weight is
 * chosen (the first drawn on a tie). A backend's cost is its peak-EWMA
 * response time × (attempts in flight + 1) (`BackendLoad.cost`): a slow
 * answer raises the estimate at once, faster ones bring it down with a
 * time constant of 10 s, and a backend left alone decays toward zero and
 * is tried again. A failed attempt counts as twice the current estimate,
 * so a backend that fails fast does not look fast. A backend never
 * measured costs nothing while idle (it is tried) and waits for its first
 * answer once it has an attempt in flight.
 *
 * The estimates come from `opts.load`, which the forwarder feeds with the
 * time from sending each attempt to its response head; a balancer rebuilt
 * on a reload with the same table carries on from them.
 *
 * @example
 * ```ts
 * import { LoadTable } from "./load.ts";
 * const load = new LoadTable();
 * const lb = new LatencyBalancer([
 *   { id: "slow", address: "10.0.0.1:80", weight: 100 },
 *   { id: "fast", address: "10.0.0.2:80", weight: 100 },
 * ], { load });
 * load.ended(load.started("slow"), 200, "ok");
 * load.ended(load.started("fast"), 5, "ok");
 * lb.candidates({ path: "/", header: () => null }, () => true)[0].id; // "fast"
 * ```
 */
export class LatencyBalancer extends TwoChoicesBalancer {
  /**
   * Creates the balancer.
   *
   * @param backends the pool; drained (weight 0) and duplicate ids are dropped.
   * @param opts `load`: the pool's response times and in-flight counts; `random`: the draws' source.
   */
  constructor(backends: readonly BackendRef[], opts: BalancerOptions = {}) {
    super(backends, costPerWeight, opts);
  }
}

/** Peak-EWMA cost per unit of weight. */
function costPerWeight(load: BackendLoad, weight: number, now: number): number {
  return load.cost(now) / weight;
}
