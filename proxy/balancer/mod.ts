/**
 * Load balancing: `random`, smooth weighted `round-robin` and
 * `consistent-hash`, behind one {@link Balancer} interface.
 *
 * @module
 */

export {
  type BackendRef,
  type Balancer,
  BalancerConfigError,
  type BalanceRequest,
  type BalancerOptions,
  type LoadBalancingConfig,
  type LoadBalancingType,
  usableBackends,
} from "./types.ts";
export { createBalancer } from "./create_balancer.ts";
export { RandomBalancer } from "./random.ts";
export { RoundRobinBalancer } from "./round_robin.ts";
export {
  ConsistentHashBalancer,
  type ConsistentHashOptions,
  DEFAULT_POINTS_PER_BACKEND,
  MAX_RING_POINTS,
} from "./consistent_hash.ts";
export {
  cookieValue,
  DEFAULT_HASH_KEY_SOURCE,
  extractHashKey,
  type HashKeySource,
  parseHashKeySource,
  pathOnly,
  queryValue,
} from "./hash_key.ts";
export { fmix32, fnv1a64, hash32, pointHash } from "./hash.ts";
