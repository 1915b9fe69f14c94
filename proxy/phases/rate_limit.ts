/**
 * Phase 2b, rate limit: a pool's `rate_limit` applied to each request it
 * is routed, after routing (the limit is the pool's) and before the
 * connection's share of the pool is claimed and a backend selected. A
 * request over the limit is answered here, 429 with `Retry-After` and the
 * IETF `RateLimit-Policy` / `RateLimit` fields (`rate_limit/fields.ts`),
 * and reaches no backend; its response names the limit for the access log.
 *
 * The limit is compiled per configuration generation into the pool's
 * {@link PoolRateLimit}; its buckets live in the pool's `PoolState` and
 * outlive a reload while the limit's name, rate, burst, key and `max_keys`
 * are unchanged (a changed limit starts with full buckets). Each pool
 * naming a limit has buckets of its own. A pool without a limit has
 * `rateLimit: null` and its requests do no work here.
 *
 * @example
 * ```ts
 * import type { IncomingRequest } from "../server/types.ts";
 * import type { PoolContext } from "./pool.ts";
 * declare const req: IncomingRequest;
 * declare const pool: PoolContext;
 *
 * const limit = pool.rateLimit;
 * if (limit !== null) {
 *   const decision = takeRateLimit(req, limit);
 *   if (!decision.allowed) rateLimited(req, limit, decision); // the 429
 * }
 * ```
 *
 * @module
 */

import { cidrMatcher } from "../../shared/cidr.ts";
import type { Config, RateLimitConfig, UpstreamConfig } from "../config/types.ts";
import { type LimitCounts, RateLimitCounters } from "../rate_limit/counters.ts";
import { policyField, rateLimitField } from "../rate_limit/fields.ts";
import { compileKey, type KeyFunction } from "../rate_limit/key.ts";
import { GcraLimiter, type RateDecision, type RateLimiter } from "../rate_limit/limiter.ts";
import { errorResponse } from "../server/error_response.ts";
import type { IncomingRequest, OutgoingResponse } from "../server/types.ts";
import type { PoolState } from "./pool.ts";

/** What the pools' rate limits share: their counters and clock. */
export interface RateLimitDeps {
  /** Allowed and limited counts by limit name (kept by `ProxyRuntime`). */
  counters: RateLimitCounters;
  /** Monotonic milliseconds; default `performance.now`. */
  now?: () => number;
}

/** A pool's rate limit, compiled. */
export interface PoolRateLimit {
  /** The limit's name (`rate_limits[].name`). */
  readonly name: string;
  /** The pool's buckets. */
  readonly limiter: RateLimiter;
  /** The request's key. */
  readonly keyOf: KeyFunction;
  /** `RateLimit-Policy` value. */
  readonly policy: string;
  /** Whether responses under the limit carry the fields too (`response_headers`). */
  readonly responseFields: boolean;
  /** The limit's counts. */
  readonly counts: LimitCounts;
  /** Monotonic milliseconds. */
  readonly now: () => number;
}

/**
 * Compiles `pool`'s `rate_limit` (`null` without one), reusing the buckets
 * `state` holds when the definition is unchanged.
 */
export function compilePoolRateLimit(
  config: Config,
  pool: UpstreamConfig,
  state: PoolState,
  deps: RateLimitDeps = { counters: new RateLimitCounters() },
): PoolRateLimit | null {
  const def = pool.rate_limit === undefined
    ? undefined
    : (config.rate_limits ?? []).find((l) => l.name === pool.rate_limit);
  if (def === undefined) {
    state.rateLimiter = null;
    return null;
  }
  return {
    name: def.name,
    limiter: limiterFor(state, def),
    keyOf: compileKey(def.key, {
      trusted: cidrMatcher(config.trusted_proxies ?? []),
      prefix: { v4: config.limits.address_prefix_v4, v6: config.limits.address_prefix_v6 },
    }),
    policy: policyField(def.name, def.requests_per_second, def.burst),
    responseFields: def.response_headers,
    counts: deps.counters.of(def.name),
    now: deps.now ?? (() => performance.now()),
  };
}

/** The limiter `state` keeps for `def`: the same one while the definition is unchanged. */
function limiterFor(state: PoolState, def: RateLimitConfig): RateLimiter {
  const signature = JSON.stringify([
    def.name,
    def.requests_per_second,
    def.burst,
    def.key,
    def.max_keys,
  ]);
  const kept = state.rateLimiter;
  if (kept !== null && kept.signature === signature) return kept.limiter;
  const limiter = new GcraLimiter({
    requestsPerSecond: def.requests_per_second,
    burst: def.burst,
    maxKeys: def.max_keys,
  });
  state.rateLimiter = { signature, limiter };
  return limiter;
}

/** Decides `req` against `limit` and counts the decision. */
export function takeRateLimit(req: IncomingRequest, limit: PoolRateLimit): RateDecision {
  const decision = limit.limiter.take(limit.keyOf(req), limit.now());
  if (decision.allowed) limit.counts.allowed++;
  else limit.counts.limited++;
  return decision;
}

/**
 * The 429 for a request `limit` refused: JSON like the proxy's other
 * errors, `Retry-After`, `RateLimit-Policy` and `RateLimit`; the client's
 * body, if any, is not wanted.
 */
export function rateLimited(
  req: IncomingRequest,
  limit: PoolRateLimit,
  decision: RateDecision,
): OutgoingResponse {
  req.body?.cancel().catch(() => {});
  const res = errorResponse(
    429,
    "rate_limited",
    `rate limit ${limit.name} exceeded; retry after ${decision.retryAfterSeconds} s`,
  );
  res.headers = [
    ...res.headers,
    ["retry-after", String(decision.retryAfterSeconds)],
    ["ratelimit-policy", limit.policy],
    ["ratelimit", rateLimitField(limit.name, decision)],
  ];
  res.rateLimit = limit.name;
  return res;
}

/** `res` with `RateLimit-Policy` and `RateLimit` appended (`response_headers: true`). */
export function withRateLimitFields(
  res: OutgoingResponse,
  limit: PoolRateLimit,
  decision: RateDecision,
): OutgoingResponse {
  res.headers = [
    ...res.headers,
    ["ratelimit-policy", limit.policy],
    ["ratelimit", rateLimitField(limit.name, decision)],
  ];
  return res;
}
