/**
 * Phase 2, route: which pool serves a request (the router's precedence:
 * host, longest prefix, most conditions, configuration order; a request
 * that matched a route in everything but its method is answered 405 with
 * `Allow`, any other unmatched one 404), and this connection's share of that pool's backend
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
 * const pool = route(routes, "example.com", "/api/users", "GET", []); // the PoolContext, or null
 * ```
 *
 * @module
 */

import type { Config } from "../config/types.ts";
import { type RequestFields, Router } from "../router/router.ts";
import type { IncomingRequest, OutgoingResponse } from "../server/types.ts";
import { type Refusal, refusal } from "./admit.ts";
import { buildPools, type PoolContext, type PoolFilesDeps, type PoolState } from "./pool.ts";
import type { RateLimitDeps } from "./rate_limit.ts";
import { refuse } from "./respond.ts";

/** The routes of one configuration: the router and each pool's context. */
export interface Routes {
  /** Matches authority and path to a pool name. */
  readonly router: Router;
  /** Each pool's context, by name. */
  readonly pools: ReadonlyMap<string, PoolContext>;
}

/** Builds the routes of `config` (see {@link buildPools} for `stateOf`, `random`, `rateLimits` and `files`). */
export function buildRoutes(
  config: Config,
  stateOf: (pool: string) => PoolState,
  random?: () => number,
  rateLimits?: RateLimitDeps,
  files?: PoolFilesDeps,
): Routes {
  const router = new Router(
    Object.entries(config.upstream).map(([pool, u]) => ({
      pool,
      host: u.route.host,
      path_prefix: u.route.path_prefix,
      methods: u.route.methods,
      headers: u.route.headers,
    })),
  );
  return { router, pools: buildPools(config, stateOf, random, rateLimits, files) };
}

/** The pool serving `authority`, `path`, `method` and `fields`, or `null` when no route matches. */
export function route(
  routes: Routes,
  authority: string | undefined,
  path: string,
  method: string,
  fields: RequestFields,
): PoolContext | null {
  const name = routes.router.match(authority, path, method, fields);
  return name === null ? null : routes.pools.get(name)!;
}

/** The answer when no route matches. */
export const NO_ROUTE: Refusal = refusal(404, "not_found", "no route matches this request");

/**
 * The answer to a request no route matched: 405 with `Allow` when routes
 * matched it in everything but its method (and no other route did: RFC
 * 9110 §15.5.6, the target exists, the method is not served there), else
 * 404.
 */
export function noRoute(
  req: IncomingRequest,
  routes: Routes,
  authority: string | undefined,
  path: string,
): OutgoingResponse {
  const allowed = routes.router.allowedMethods(authority, path, req.head.fields);
  if (allowed === null) return refuse(req, NO_ROUTE);
  const allow = allowed.join(", ");
  const res = refuse(
    req,
    refusal(405, "method_not_allowed", `${req.head.method} is not served here (allowed: ${allow})`),
  );
  return { ...res, headers: [...res.headers, ["allow", allow]] };
}

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
