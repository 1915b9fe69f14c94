/**
 * The proxy application: one decoded request through the proxy's phases,
 * each a plain function in a file named after it (`phases/`):
 *
 * 1. admit (`phases/admit.ts`): method, scheme, request target, authority;
 * 2. route (`phases/route.ts`): the pool (404, or 405 when only the method
 *    differs); then its rate limit
 *    (`phases/rate_limit.ts`: the pool's `rate_limit`, if any, answers 429),
 *    its authentication (`phases/authenticate.ts`: the pool's `auth`, if
 *    any, answers 401 or 403), then the connection's share of the pool;
 * 3. select (`phases/select.ts`): the pool's candidates (panic mode included);
 * 4. upstream request (`phases/upstream_request.ts`): fields and body for the backend;
 * 5. forward (`phases/forward.ts`): the attempts, the retry, the outcome;
 * 6. downstream response (`phases/respond.ts`): what the client is sent;
 * 7. log and count: the server layer writes the response and hands the
 *    finished request to the request sink (`request_log.ts`).
 *
 * It knows nothing of QUIC or TCP: the HTTP/3 server and the TCP fallback
 * call it with decoded requests. The handler is rebuilt on every reload
 * and admin weight change; what must outlive that is kept by `ProxyRuntime`
 * (`runtime.ts`) and handed in as each pool's {@link PoolState}.
 *
 * @module
 */

import { cidrMatcher } from "../shared/cidr.ts";
import { AuthCounters } from "./auth/counters.ts";
import type { Config } from "./config/schema.ts";
import { type ConfigSecrets, NO_SECRETS } from "./config/secrets.ts";
import type { ProxyMetrics } from "./metrics/metrics.ts";
import { admit, requestAuthority } from "./phases/admit.ts";
import { type AuthDecision, authenticate } from "./phases/authenticate.ts";
import { createForwarder } from "./phases/forward.ts";
import { createTunneler, websocketRefusal } from "./phases/tunnel.ts";
import { type PoolContext, PoolState } from "./phases/pool.ts";
import { rateLimited, takeRateLimit, withRateLimitFields } from "./phases/rate_limit.ts";
import { RateLimitCounters } from "./rate_limit/counters.ts";
import { refuse } from "./phases/respond.ts";
import { buildRoutes, claimShare, noRoute, overShare, route } from "./phases/route.ts";
import {
  availability,
  type BackendHealth,
  noCandidate,
  selectCandidates,
} from "./phases/select.ts";
import type { IncomingRequest, OutgoingResponse, RequestHandler } from "./server/types.ts";
import { REQUEST_TRACING } from "./tracing/mod.ts";
import type { UpstreamTransport } from "./upstream/transport.ts";

export type { BackendHealth } from "./phases/select.ts";
export { PoolState } from "./phases/pool.ts";

/** What the proxy application needs. */
export interface ProxyAppDeps {
  /** The configuration served. */
  config: Config;
  /** Carries requests to backends. */
  transport: UpstreamTransport;
  /** Backend availability and outcome reports. */
  health: BackendHealth;
  /** Counters. */
  metrics: ProxyMetrics;
  /** Used by the `random` balancer; defaults to Math.random. */
  random?: () => number;
  /**
   * Each pool's state that outlives this handler (`ProxyRuntime` keeps
   * them by pool name); default: a new one per pool, lost with the handler.
   */
  poolState?: (pool: string) => PoolState;
  /** Counts of the rate limits (`ProxyRuntime` keeps them); default: new ones. */
  rateLimitCounters?: RateLimitCounters;
  /** Monotonic milliseconds of the rate limits; default `performance.now`. */
  now?: () => number;
  /** What the configuration's key and certificate files hold; default: none. */
  secrets?: ConfigSecrets;
  /** Counts of the pools' `auth` (`ProxyRuntime` keeps them); default: new ones. */
  authCounters?: AuthCounters;
}

/**
 * Builds the request handler from a configuration.
 *
 * @example
 * ```ts
 * declare const config: ProxyAppDeps["config"];
 * declare const transport: ProxyAppDeps["transport"];
 * declare const health: ProxyAppDeps["health"];
 * declare const metrics: ProxyAppDeps["metrics"];
 * const handler = createProxyApp({ config, transport, health, metrics });
 * ```
 */
export function createProxyApp(deps: ProxyAppDeps): RequestHandler {
  const { config, health } = deps;
  const routes = buildRoutes(config, deps.poolState ?? (() => new PoolState()), deps.random, {
    counters: deps.rateLimitCounters ?? new RateLimitCounters(),
    now: deps.now,
  }, {
    secrets: deps.secrets ?? NO_SECRETS,
    authCounters: deps.authCounters ?? new AuthCounters(),
  });
  const available = availability(health);
  // Deno's OpenTelemetry when it exports traces, else null: the untraced handler.
  const tracing = REQUEST_TRACING;
  const isTrustedProxy = cidrMatcher(config.trusted_proxies ?? []);
  const forward = createForwarder({
    transport: deps.transport,
    health,
    metrics: deps.metrics,
    isTrustedProxy,
    tracing,
  });
  const openTunnel = createTunneler({
    transport: deps.transport,
    health,
    metrics: deps.metrics,
    isTrustedProxy,
  });

  /** Phases 3 to 6 of a WebSocket (an extended CONNECT, `phases/tunnel.ts`). */
  const tunnel = (
    req: IncomingRequest,
    pool: PoolContext,
    path: string,
    authority: string | undefined,
  ): Promise<OutgoingResponse> => {
    const off = websocketRefusal(pool, deps.metrics.websockets);
    if (off !== null) return Promise.resolve(refuse(req, off));
    const candidates = selectCandidates(pool, available, req.head, path);
    if (candidates.length === 0) {
      deps.metrics.websockets.ended(pool.name, "failed");
      return Promise.resolve(refuse(req, noCandidate(pool, health)));
    }
    return openTunnel(req, pool, candidates, path, authority);
  };

  /** Phases 3 to 6, once the request has its pool. */
  const proxy = (
    req: IncomingRequest,
    pool: PoolContext,
    path: string,
    authority: string | undefined,
  ): Promise<OutgoingResponse> => {
    if (req.head.protocol !== undefined) return tunnel(req, pool, path, authority);
    // 3. select
    const candidates = selectCandidates(pool, available, req.head, path);
    if (candidates.length === 0) return Promise.resolve(refuse(req, noCandidate(pool, health)));
    // 4. upstream request, 5. forward, 6. downstream response (phases/forward.ts calls 4 and 6)
    return forward(req, pool, candidates, path, authority);
  };

  /** The connection's share of the pool, then phases 3 to 6. */
  const claimAndProxy = (
    req: IncomingRequest,
    pool: PoolContext,
    path: string,
    authority: string | undefined,
  ): Promise<OutgoingResponse> => {
    const claimed = claimShare(req, pool);
    if (claimed === true) return proxy(req, pool, path, authority);
    if (claimed === false) return Promise.resolve(refuse(req, overShare(pool)));
    return claimed.then((ok) =>
      ok ? proxy(req, pool, path, authority) : refuse(req, overShare(pool))
    );
  };

  /** The pool's authentication (no work for a pool without `auth`), then the share and phases 3 to 6. */
  const authenticateAndProxy = (
    req: IncomingRequest,
    pool: PoolContext,
    path: string,
    authority: string | undefined,
  ): Promise<OutgoingResponse> => {
    const auth = pool.auth;
    if (auth === null) return claimAndProxy(req, pool, path, authority);
    const admitted = (d: AuthDecision) =>
      d.ok ? claimAndProxy(d.req, pool, path, authority) : Promise.resolve(d.response);
    const decided = authenticate(req, auth);
    return decided instanceof Promise ? decided.then(admitted) : admitted(decided);
  };

  // 7. log and count: the server layer, once the response is written (request_log.ts).
  const handle = (req: IncomingRequest): Promise<OutgoingResponse> => {
    const head = req.head;
    const path = head.path ?? "/";
    const authority = requestAuthority(head);
    // 1. admit
    const refused = admit(head, path, authority);
    if (refused !== null) return Promise.resolve(refuse(req, refused));
    // 2. route, and the connection's share of the pool
    // A WebSocket's extended CONNECT is routed as the GET it stands for (RFC 8441 §5).
    const method = head.protocol === undefined ? head.method : "GET";
    const pool = route(routes, authority, path, method, head.fields);
    if (pool === null) return Promise.resolve(noRoute(req, routes, authority, path));
    if (tracing !== null) tracing.routed(pool.name);
    // 2b. rate limit: nothing at all for a pool without one; 2c. authenticate
    const limit = pool.rateLimit;
    if (limit === null) return authenticateAndProxy(req, pool, path, authority);
    const decision = takeRateLimit(req, limit);
    if (!decision.allowed) return Promise.resolve(rateLimited(req, limit, decision));
    const res = authenticateAndProxy(req, pool, path, authority);
    return limit.responseFields ? res.then((r) => withRateLimitFields(r, limit, decision)) : res;
  };
  // Traced, each request runs under its SERVER span (`tracing/`); untraced, as it is.
  if (tracing === null) return handle;
  return (req) => tracing.serve(req, isTrustedProxy(req.remote.hostname), handle);
}
