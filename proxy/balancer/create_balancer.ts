/**
 * The factory turning a `load_balancing` config into a {@link Balancer}.
 *
 * @module
 */

import { ConsistentHashBalancer } from "./consistent_hash.ts";
import { LatencyBalancer } from "./latency.ts";
import { LeastRequestBalancer } from "./least_request.ts";
import { RandomBalancer } from "./random.ts";
import { RoundRobinBalancer } from "./round_robin.ts";
import {
  type BackendRef,
  type Balancer,
  BalancerConfigError,
  type BalancerOptions,
  LOAD_BALANCING_TYPES,
  type LoadBalancingConfig,
} from "./types.ts";

/**
 * Builds the balancer for `lb.type` over `backends`. Cheap enough to call
 * again whenever weights or the backend list change (e.g. from the admin
 * API): rebuild and swap. A rebuilt `round-robin` restarts its rotation; a
 * rebuilt `consistent-hash` keeps every key whose backend is unchanged; a
 * rebuilt `least-request` or `latency` given the same `opts.load` carries
 * on from the load observed.
 *
 * @throws {BalancerConfigError} for an unknown type or a bad `key`.
 * @example
 * ```ts
 * import type { BalanceRequest } from "./types.ts";
 * declare const req: BalanceRequest;
 * declare const checker: { isHealthy(id: string): boolean };
 *
 * const lb = createBalancer({ type: "consistent-hash", key: "cookie:sid" }, [
 *   { id: "a", address: "10.0.0.1:8080", weight: 100 },
 *   { id: "b", address: "10.0.0.2:8080", weight: 100 },
 * ]);
 * const [chosen, ...retries] = lb.candidates(req, (id) => checker.isHealthy(id));
 * ```
 */
export function createBalancer(
  lb: LoadBalancingConfig,
  backends: readonly BackendRef[],
  opts: BalancerOptions = {},
): Balancer {
  switch (lb.type) {
    case "random":
      return new RandomBalancer(backends, opts);
    case "round-robin":
      return new RoundRobinBalancer(backends);
    case "consistent-hash":
      return new ConsistentHashBalancer(backends, { key: lb.key });
    case "least-request":
      return new LeastRequestBalancer(backends, opts);
    case "latency":
      return new LatencyBalancer(backends, opts);
    default:
      throw new BalancerConfigError(
        `load_balancing.type ${JSON.stringify((lb as { type: unknown }).type)} must be one of ${
          LOAD_BALANCING_TYPES.join(", ")
        }`,
      );
  }
}
