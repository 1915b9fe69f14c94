/**
 * Load balancing: `random`, smooth weighted `round-robin`,
 * `consistent-hash`, and the load-aware `least-request` and `latency`
 * (which read the pool's {@link LoadTable}, fed by the forwarder), behind
 * one {@link Balancer} interface. The balancer
 * also owns the `load_balancing` vocabulary the configuration schema uses
 * ({@link LoadBalancingConfig}, {@link parseHashKey}).
 *
 * @example
 * ```ts
 * import { createBalancer } from "./mod.ts";
 *
 * const lb = createBalancer({ type: "consistent-hash", key: "header:x-user" }, [
 *   { id: "a", address: "10.0.0.1:8080", weight: 100 },
 *   { id: "b", address: "10.0.0.2:8080", weight: 100 },
 * ]);
 * const req = { path: "/", header: (name: string) => (name === "x-user" ? "u1" : null) };
 * const [chosen, ...retries] = lb.candidates(req, () => true);
 * ```
 *
 * @module
 */

export {
  type BackendRef,
  type Balancer,
  BalancerConfigError,
  type BalanceRequest,
  type BalancerOptions,
  isLoadAware,
  LOAD_BALANCING_TYPES,
  type LoadBalancingConfig,
  type LoadBalancingType,
  usableBackends,
} from "./types.ts";
export { createBalancer } from "./create_balancer.ts";
export { RandomBalancer } from "./random.ts";
export { RoundRobinBalancer } from "./round_robin.ts";
export { type LoadScore, TwoChoicesBalancer } from "./two_choices.ts";
export { LeastRequestBalancer } from "./least_request.ts";
export { LatencyBalancer } from "./latency.ts";
export {
  type AttemptObserver,
  type AttemptResult,
  BackendLoad,
  LATENCY_DECAY_MS,
  type LoadReader,
  LoadTable,
  UNMEASURED_PENALTY,
} from "./load.ts";
export {
  ConsistentHashBalancer,
  type ConsistentHashOptions,
  DEFAULT_POINTS_PER_BACKEND,
  MAX_RING_POINTS,
} from "./consistent_hash.ts";
export {
  cookieValue,
  DEFAULT_HASH_KEY,
  DEFAULT_HASH_KEY_SOURCE,
  extractHashKey,
  formatHashKey,
  HASH_KEY_FORMS,
  type HashKeySource,
  parseHashKey,
  parseHashKeySource,
  pathOnly,
  queryValue,
} from "./hash_key.ts";
export { fmix32, fnv1a64, hash32, pointHash } from "./hash.ts";
// Types of other packages that this package's signatures use.
export type { BackendTlsSetting, ClientCertificate } from "../upstream/client_certificate.ts";
