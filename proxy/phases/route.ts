/**
 * Phase 2, route: which pool serves a request (the router's longest prefix
 * and host rules), and this connection's share of that pool's backend
 * streams (`limits.max_backend_streams_per_connection`, see
 * `server/stream_share.ts`).
 *
 * @example
 * ```ts
 * import type { Config } from "../config/mod.ts";
 * import { PoolState } from "./pool.ts";
 * declare const config: Config;
 *
 * const routes = buildRoutes(config, () => new PoolState());
 * const pool = route(routes, "example.com", "/api/users"); // the PoolContext, or null
 * ```
 *
 * @module
 */

import type { Config } from "../config/types.ts";
import { Router } from "../router/router.ts";
import type { IncomingRequest } from "../server/types.ts";
import { type Refusal, refusal } from "./admit.ts";
import { buildPools, type PoolContext, type PoolState } from "./pool.ts";
import type { RateLimitDeps } from "./rate_limit.ts";

/** The routes of one configuration: the router and each pool's context. */
export interface Routes {
  /** Matches authority and path to a pool name. */
  readonly router: Router;
  /** Each pool's context, by name. */
  readonly pools: ReadonlyMap<string, PoolContext>;
}

/** Builds the routes of `config` (see {@link buildPools} for `stateOf`, `random` and `rateLimits`). */
export function buildRoutes(
  config: Config,
  stateOf: (pool: string) => PoolState,
  random?: () => number,
  rateLimits?: RateLimitDeps,
): Routes {
  const router = new Router(
    Object.entries(config.upstream).map(([pool, u]) => ({
      pool,
      host: u.route.host,
      path_prefix: u.route.path_prefix,
    })),
  );
  return { router, pools: buildPools(config, stateOf, random, rateLimits) };
}

/** The pool serving `authority` and `path`, or `null` when no route matches. */
export function route(
  routes: Routes,
  authority: string | undefined,
  path: string,
): PoolContext | null {
  const name = routes.router.match(authority, path);
  return name === null ? null : routes.pools.get(name)!;
}

/** The answer when no route matches. */
export const NO_ROUTE: Refusal = refusal(404, "not_found", "no route matches this request");

/**
 * Counts the request against its connection's share of `pool`: `true` at
 * once, or (past the share) a promise of whether one of the connection's
 * own requests to the pool finished within `request_timeout_ms`; `false`:
 * answer {@link overShare}, do not forward.
 */
export function claimShare(req: IncomingRequest, pool: PoolContext): boolean | Promise<boolean> {
  return req.claimBackendStream?.(pool.name, pool.timeoutMs) ?? true;
}

/** The answer to a request refused by {@link claimShare}. */
export function overShare(pool: PoolContext): Refusal {
  return refusal(
    503,
    "backend_share_exceeded",
    `this connection has its limit of requests in flight to pool ${pool.name} ` +
      "(limits.max_backend_streams_per_connection) and none finished in time",
  );
}
