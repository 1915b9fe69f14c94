/**
 * The per-pool context every phase after routing works with: the pool's
 * configuration, its balancer, its timeout, and its {@link PoolState}.
 *
 * Two lifetimes meet here. A {@link PoolContext} is built from the
 * configuration with the request handler, and so is rebuilt on every reload
 * and every admin weight change: whatever is derived from the configuration
 * (the balancer, a per-route header rule) belongs in it. A {@link PoolState}
 * is kept by `ProxyRuntime` by pool name and handed to every rebuilt
 * context: whatever must not reset when the handler is rebuilt (a rate
 * limiter's buckets, the panic-mode flag) belongs in it.
 *
 * @example
 * ```ts
 * import type { Config } from "../config/mod.ts";
 * declare const config: Config;
 *
 * const states = new Map<string, PoolState>();
 * const stateOf = (name: string) => states.get(name) ?? states.set(name, new PoolState()).get(name)!;
 * const pools = buildPools(config, stateOf);
 * pools.get("api")?.timeoutMs; // request_timeout_ms of pool "api"
 * ```
 *
 * @module
 */

import { type Balancer, createBalancer } from "../balancer/mod.ts";
import type { Config, UpstreamConfig } from "../config/types.ts";
import type { RateLimiter } from "../rate_limit/limiter.ts";
import { compileHeaderRules, type HeaderRules } from "./header_rules.ts";
import { compilePoolRateLimit, type PoolRateLimit, type RateLimitDeps } from "./rate_limit.ts";

/**
 * State of one pool that outlives the request handler: `ProxyRuntime`
 * keeps one per pool name across reloads and admin weight changes, and
 * drops it when a reload removes the pool.
 */
export class PoolState {
  /**
   * Whether the pool's last selection found no available backend but the
   * ejected ones and sent to those (panic mode, see `select.ts`): entering
   * and leaving it is logged once each.
   */
  panic = false;
  /**
   * The pool's rate limiter (its buckets) and the definition it was made
   * for (`rate_limit.ts`): kept across reloads while the limit's name,
   * rate, burst, key and key cap stay the same; `null` without a limit.
   */
  rateLimiter: { readonly signature: string; readonly limiter: RateLimiter } | null = null;
}

/** One pool as the phases after routing see it. */
export interface PoolContext {
  /** The pool's name (its `upstream` key). */
  readonly name: string;
  /** The pool's configuration (admin weight overrides applied). */
  readonly config: UpstreamConfig;
  /** Picks the pool's candidates. */
  readonly balancer: Balancer;
  /** Ids of the pool's backends, in configuration order. */
  readonly ids: readonly string[];
  /** `request_timeout_ms` of the pool. */
  readonly timeoutMs: number;
  /** What outlives a rebuild of the handler (kept by `ProxyRuntime`). */
  readonly state: PoolState;
  /** `headers.request`, compiled; `null` when the pool rewrites nothing it sends. */
  readonly requestRules: HeaderRules | null;
  /** `headers.response`, compiled; `null` when the pool rewrites nothing it answers. */
  readonly responseRules: HeaderRules | null;
  /** The pool's `rate_limit`, compiled; `null`: unlimited (no work per request). */
  readonly rateLimit: PoolRateLimit | null;
}

/**
 * The context of every pool of `config`; `stateOf(name)` supplies each
 * pool's lasting state, `random` the `random` balancer's source,
 * `rateLimits` the counters and clock of the pools' rate limits.
 */
export function buildPools(
  config: Config,
  stateOf: (pool: string) => PoolState,
  random?: () => number,
  rateLimits?: RateLimitDeps,
): Map<string, PoolContext> {
  const pools = new Map<string, PoolContext>();
  for (const [name, u] of Object.entries(config.upstream)) {
    const lb = u.load_balancing ?? config.load_balancing;
    const state = stateOf(name);
    pools.set(name, {
      name,
      config: u,
      balancer: createBalancer(
        lb,
        u.backends.map((b) => ({
          id: b.id,
          address: b.address,
          weight: b.weight,
          tls: b.tls,
          protocol: b.protocol,
        })),
        { random },
      ),
      ids: u.backends.map((b) => b.id),
      timeoutMs: u.request_timeout_ms,
      state,
      requestRules: compileHeaderRules(u.headers?.request),
      responseRules: compileHeaderRules(u.headers?.response),
      rateLimit: compilePoolRateLimit(config, u, state, rateLimits),
    });
  }
  return pools;
}
