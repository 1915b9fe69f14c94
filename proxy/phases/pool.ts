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

import { AuthCounters } from "../auth/counters.ts";
import {
  type Balancer,
  createBalancer,
  isLoadAware,
  type LoadBalancingConfig,
} from "../balancer/mod.ts";
import { type AttemptGate, PoolGate } from "../circuit/mod.ts";
import { NO_SECRETS } from "../config/secrets.ts";
import type { ConfigSecrets } from "../config/secrets.ts";
import type { BackendConfig, Config, UpstreamConfig } from "../config/types.ts";
import type { RateLimiter } from "../rate_limit/limiter.ts";
import { RetryBudget, RetryCounters, RetryPolicy } from "../retry/mod.ts";
import type { BackendTlsSetting } from "../upstream/client_certificate.ts";
import { compilePoolAuth, type PoolAuth } from "./authenticate.ts";
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
  /**
   * The pool's load and circuit breaking (`circuit/`): attempts in flight
   * and response times per backend (read by `least-request` and
   * `latency`), `max_inflight`, `max_pending` and the requests waiting;
   * kept across reloads so the counts stay true; `null` while the pool
   * needs none (no load-aware balancer, no `max_inflight`).
   */
  gate: PoolGate | null = null;
  /** The pool's retry budget (`retries`): its requests in flight; `null` without `retries`. */
  retryBudget: RetryBudget | null = null;
  /** Retries made by reason, and refused by the budget (`/metrics`). */
  readonly retryCounters: RetryCounters = new RetryCounters();
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
  /** The pool's `retries`, compiled; `null`: the default rule (`retry/one_retry.ts`). */
  readonly retries: RetryPolicy | null;
  /**
   * Where each attempt takes its backend slot and reports its end (load,
   * circuit breaking); `null`: nothing to track (no work per request).
   */
  readonly gate: AttemptGate | null;
  /** The pool's `auth`, compiled with its keys; `null`: none (no work per request). */
  readonly auth: PoolAuth | null;
}

/** What the files of a configuration hold, and the counters of the pools' `auth`. */
export interface PoolFilesDeps {
  /** The keys and client certificates loaded with the configuration. */
  secrets: ConfigSecrets;
  /** Decisions of each pool's `auth` (kept by `ProxyRuntime`). */
  authCounters: AuthCounters;
}

/**
 * The context of every pool of `config`; `stateOf(name)` supplies each
 * pool's lasting state, `random` the `random` balancer's source,
 * `rateLimits` the counters and clock of the pools' rate limits, `files`
 * the keys and client certificates loaded with `config` (default: none).
 */
export function buildPools(
  config: Config,
  stateOf: (pool: string) => PoolState,
  random?: () => number,
  rateLimits?: RateLimitDeps,
  files: PoolFilesDeps = { secrets: NO_SECRETS, authCounters: new AuthCounters() },
): Map<string, PoolContext> {
  const pools = new Map<string, PoolContext>();
  for (const [name, u] of Object.entries(config.upstream)) {
    const lb = u.load_balancing ?? config.load_balancing;
    const state = stateOf(name);
    const gate = gateOf(u, lb, state);
    pools.set(name, {
      name,
      config: u,
      balancer: createBalancer(
        lb,
        u.backends.map((b) => ({
          id: b.id,
          address: b.address,
          weight: b.weight,
          tls: tlsSetting(b, files.secrets),
          protocol: b.protocol,
        })),
        { random, load: gate?.table },
      ),
      ids: u.backends.map((b) => b.id),
      timeoutMs: u.request_timeout_ms,
      state,
      requestRules: compileHeaderRules(u.headers?.request),
      responseRules: compileHeaderRules(u.headers?.response),
      rateLimit: compilePoolRateLimit(config, u, state, rateLimits),
      retries: retriesOf(u, state),
      gate,
      auth: compilePoolAuth(name, u.auth, files.secrets, files.authCounters),
    });
  }
  return pools;
}

/**
 * The pool's gate, kept in `state` across reloads and given the pool's
 * current limits; `null` (and dropped) when nothing reads the load: no
 * load-aware balancer and no `max_inflight`.
 */
function gateOf(u: UpstreamConfig, lb: LoadBalancingConfig, state: PoolState): PoolGate | null {
  if (!isLoadAware(lb.type) && !u.backends.some((b) => b.max_inflight !== undefined)) {
    state.gate = null;
    return null;
  }
  state.gate ??= new PoolGate();
  state.gate.configure(u.backends, u.max_pending);
  return state.gate;
}

/** The pool's `retries`, compiled on the budget `state` keeps; `null` without them. */
function retriesOf(u: UpstreamConfig, state: PoolState): RetryPolicy | null {
  if (u.retries === undefined) {
    state.retryBudget = null;
    return null;
  }
  state.retryBudget ??= new RetryBudget();
  return new RetryPolicy(u.retries, u.request_timeout_ms, state.retryBudget, state.retryCounters);
}

/** A backend's `tls` with the client certificate loaded from its `cert` and `key`. */
export function tlsSetting(
  backend: BackendConfig,
  secrets: ConfigSecrets,
): BackendTlsSetting | undefined {
  const t = backend.tls;
  if (t === undefined || t.cert === undefined) return t;
  return {
    ca: t.ca,
    server_name: t.server_name,
    client_certificate: secrets.clientCertificates.get(backend.id),
  };
}
