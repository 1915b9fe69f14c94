/**
 * The proxy application: the proxy's own rules on a decoded request
 * (scheme, request target, methods it will not forward), then route → pool
 * → balanced candidates → {@link Forwarder}. It knows nothing of QUIC; the
 * HTTP/3 server calls it with decoded requests.
 *
 * @module
 */

import { cidrMatcher } from "../shared/cidr.ts";
import type { Config } from "./config/schema.ts";
import {
  type BackendRef,
  type Balancer,
  type BalanceRequest,
  createBalancer,
} from "./balancer/mod.ts";
import type { ProxyMetrics } from "./metrics/metrics.ts";
import { checkAuthority, checkRequestTarget } from "./router/request_target.ts";
import { Router } from "./router/router.ts";
import { errorResponse } from "./server/error_response.ts";
import type { IncomingRequest, OutgoingResponse, RequestHandler } from "./server/types.ts";
import { type BackendHealth, createForwarder, type PoolTarget } from "./upstream/forward.ts";
import type { UpstreamTransport } from "./upstream/transport.ts";

export type { BackendHealth } from "./upstream/forward.ts";

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
}

interface Pool extends PoolTarget {
  balancer: Balancer;
  /** Ids of the pool's backends. */
  ids: string[];
}

/**
 * Methods the proxy answers itself, never forwarding them: TRACE and TRACK
 * would echo the request, cookies and credentials included, back to a page
 * (cross-site tracing), and CONNECT asks for a tunnel, which the proxy does
 * not offer. 501: not supported here (RFC 9110 §15.6.2).
 */
const NOT_FORWARDED = new Set(["TRACE", "TRACK", "CONNECT"]);

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
  const { config, metrics, health } = deps;
  const router = new Router(
    Object.entries(config.upstream).map(([pool, u]) => ({
      pool,
      host: u.route.host,
      path_prefix: u.route.path_prefix,
    })),
  );
  const pools = new Map<string, Pool>();
  for (const [name, u] of Object.entries(config.upstream)) {
    const lb = u.load_balancing ?? config.load_balancing;
    pools.set(name, {
      name,
      balancer: createBalancer(
        lb,
        u.backends.map((b) => ({ id: b.id, address: b.address, weight: b.weight, tls: b.tls })),
        { random: deps.random },
      ),
      timeoutMs: u.request_timeout_ms,
      ids: u.backends.map((b) => b.id),
    });
  }
  const isAvailable = (id: string) => health.isAvailable(id);
  const forward = createForwarder({
    transport: deps.transport,
    health,
    metrics,
    isTrustedProxy: cidrMatcher(config.trusted_proxies ?? []),
  });

  // Counted and logged once finished, by the request sink (request_log.ts).
  const refuse = (req: IncomingRequest, status: number, error: string, message: string) => {
    req.body?.cancel().catch(() => {});
    return errorResponse(status, error, message);
  };

  /** Balances a request over its pool's candidates and forwards it. */
  const route = (
    req: IncomingRequest,
    pool: Pool,
    path: string,
    authority: string | undefined,
  ): Promise<OutgoingResponse> => {
    const head = req.head;
    const balanceReq: BalanceRequest = {
      path,
      header(name: string): string | null {
        const values = head.fields.filter(([n]) => n === name).map(([, v]) => v);
        if (values.length === 0) return null;
        return values.join(name === "cookie" ? "; " : ", ");
      },
    };
    let candidates: readonly BackendRef[] = pool.balancer.candidates(balanceReq, isAvailable);
    if (candidates.length === 0 && health.isAvailableIgnoringEjection) {
      candidates = pool.balancer.candidates(
        balanceReq,
        (id) => health.isAvailableIgnoringEjection!(id),
      );
    }
    if (candidates.length === 0) {
      // Backends disabled by the admin API are not unhealthy: say which it is.
      const ids = pool.ids;
      const enabled = health.isEnabled ? ids.filter((id) => health.isEnabled!(id)) : ids;
      if (enabled.length === 0) {
        return Promise.resolve(
          refuse(
            req,
            503,
            "no_enabled_backend",
            `no enabled backend in pool ${pool.name} (all disabled by the admin API)`,
          ),
        );
      }
      return Promise.resolve(
        refuse(req, 503, "no_healthy_backend", `no healthy backend in pool ${pool.name}`),
      );
    }
    return forward(req, pool, candidates, path, authority);
  };

  return (req: IncomingRequest): Promise<OutgoingResponse> => {
    const head = req.head;
    if (NOT_FORWARDED.has(head.method.toUpperCase())) {
      return Promise.resolve(
        refuse(req, 501, "not_implemented", `the proxy does not forward ${head.method} requests`),
      );
    }
    // HTTP/3 carries https URIs here: the proxy is their origin's front
    // (RFC 9114 §3.1); anything else would be forwarded under a false scheme.
    if (head.scheme !== "https") {
      return Promise.resolve(
        refuse(req, 400, "bad_request", `unsupported :scheme ${JSON.stringify(head.scheme)}`),
      );
    }
    const path = head.path ?? "/";
    const ambiguous = checkRequestTarget(path);
    if (ambiguous !== null) return Promise.resolve(refuse(req, 400, "bad_request", ambiguous));
    const authority = head.authority ?? head.fields.find(([n]) => n === "host")?.[1];
    // An authority no origin can have (port 99999) would fail at the backend
    // and be counted against it: the client's fault, answered here.
    const badAuthority = authority === undefined ? null : checkAuthority(authority);
    if (badAuthority !== null) {
      return Promise.resolve(refuse(req, 400, "bad_request", badAuthority));
    }
    const poolName = router.match(authority, path);
    if (poolName === null) {
      return Promise.resolve(refuse(req, 404, "not_found", "no route matches this request"));
    }
    const pool = pools.get(poolName)!;
    // One client connection may hold only so many of the pool's backend
    // streams: past it a request waits (up to request_timeout_ms) for one
    // of the connection's own to finish, or is refused, never sent.
    const claimed = req.claimBackendStream?.(pool.name, pool.timeoutMs) ?? true;
    if (claimed !== true) {
      const overShare = () =>
        refuse(
          req,
          503,
          "backend_share_exceeded",
          `this connection has its limit of requests in flight to pool ${pool.name} ` +
            "(limits.max_backend_streams_per_connection) and none finished in time",
        );
      if (claimed === false) return Promise.resolve(overShare());
      return claimed.then((ok) => ok ? route(req, pool, path, authority) : overShare());
    }
    return route(req, pool, path, authority);
  };
}
