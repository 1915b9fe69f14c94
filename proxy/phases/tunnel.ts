/**
 * Phase 5 for a WebSocket (a request whose head is an extended CONNECT with
 * `:protocol websocket`, RFC 8441 / RFC 9220; the TCP fallback's HTTP/1.1
 * `Upgrade: websocket` arrives in that form too): instead of `forward.ts`,
 * the handshake goes to the pool's candidates through the transport's
 * `websocket` (extended CONNECT to an HTTP/2 backend, `Upgrade` to an
 * HTTP/1.1 one), and a 2xx opens a {@link TunnelSession} relaying the bytes
 * both ways under the pool's `websocket` limits.
 *
 * - A pool with `websocket.enabled: false` answers **501**
 *   `websocket_disabled` ({@link websocketRefusal}, checked before a backend
 *   is chosen).
 * - The handshake is sent again only when nothing reached the backend
 *   (`connect`, or an HTTP/2 backend that does not enable extended CONNECT):
 *   to the next candidate, once. Nothing of the client's side is ever read
 *   before a backend switched, so such a retry sends nothing twice.
 * - The backend's refusal (any final status outside 2xx) is the client's
 *   answer, as any response; its failures are answered as `forward.ts`
 *   answers them (502, 503), by the outcome table.
 * - Each attempt is counted once in `spooky_pool_websocket_sessions_total`
 *   by how it ended; an open tunnel in `spooky_pool_websockets_open`.
 *
 * @example
 * ```ts
 * import type { IncomingRequest } from "../server/mod.ts";
 * import type { BackendRef } from "../balancer/mod.ts";
 * import type { PoolContext } from "./pool.ts";
 * declare const deps: TunnelDeps;
 * declare const req: IncomingRequest;
 * declare const pool: PoolContext;
 * declare const candidates: BackendRef[];
 *
 * if (isWebSocket(req.head)) {
 *   const refused = websocketRefusal(pool, deps.metrics.websockets); // 501 when the pool has WebSockets off
 *   const res = refused ?? await createTunneler(deps)(req, pool, candidates, "/chat", "example.com");
 * }
 * ```
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import type { BackendRef } from "../balancer/mod.ts";
import type { WebSocketConfig } from "../config/types.ts";
import { type RequestHead, WEBSOCKET_PROTOCOL } from "../http/mod.ts";
import type { ProxyMetrics } from "../metrics/metrics.ts";
import type { WebSocketCounters } from "../metrics/websockets.ts";
import { errorResponse } from "../server/error_response.ts";
import { requestEnd } from "../server/request_end.ts";
import type { IncomingRequest, OutgoingResponse } from "../server/types.ts";
import {
  outcomeOfError,
  outcomeOfStatus,
  OUTCOMES,
  type UpstreamOutcome,
} from "../upstream/outcome.ts";
import {
  type UpstreamRequest,
  type UpstreamResponse,
  type UpstreamTransport,
  WebSocketUnsupported,
} from "../upstream/transport.ts";
import { type Refusal, refusal } from "./admit.ts";
import type { PoolContext } from "./pool.ts";
import { downstreamResponse, failureResponse, invalidResponse } from "./respond.ts";
import type { BackendHealth } from "./select.ts";
import { TunnelSession } from "./tunnel_session.ts";
import { upstreamAuthority, upstreamHeaders } from "./upstream_request.ts";

const log = getLogger(["proxy", "websocket"]);

/** A pool's `websocket` when it has none: on, 5 minutes idle, no total limit. */
export const WEBSOCKET_DEFAULTS: Readonly<WebSocketConfig> = Object.freeze({
  enabled: true,
  idle_timeout_ms: 300_000,
});

/** Whether a request head opens a WebSocket (an extended CONNECT with `:protocol websocket`). */
export function isWebSocket(head: RequestHead): boolean {
  return head.protocol === WEBSOCKET_PROTOCOL && head.method === "CONNECT";
}

/**
 * The answer to a WebSocket for `pool` when it has WebSockets off (501,
 * counted `disabled` in `counters`), or `null`.
 */
export function websocketRefusal(pool: PoolContext, counters: WebSocketCounters): Refusal | null {
  if (pool.config.websocket?.enabled ?? true) return null;
  counters.ended(pool.name, "disabled");
  return refusal(
    501,
    "websocket_disabled",
    `WebSockets are disabled for pool ${pool.name} (upstream.${pool.name}.websocket.enabled)`,
  );
}

/** What the tunnel phase needs (as `forward.ts`). */
export interface TunnelDeps {
  /** Carries the handshakes and the tunnels. */
  transport: UpstreamTransport;
  /** Where outcomes are reported. */
  health: BackendHealth;
  /** Counters per backend, and the WebSockets of each pool. */
  metrics: ProxyMetrics;
  /** Whether a client address is a trusted proxy (`trusted_proxies`); default: nobody is. */
  isTrustedProxy?: (ip: string) => boolean;
}

/** Opens a WebSocket of a routed request on the first candidate that takes it. */
export type Tunneler = (
  req: IncomingRequest,
  pool: PoolContext,
  candidates: readonly BackendRef[],
  path: string,
  authority: string | undefined,
) => Promise<OutgoingResponse>;

/** Builds the tunnel phase. */
export function createTunneler(deps: TunnelDeps): Tunneler {
  const { transport, health, metrics } = deps;
  const counters = metrics.websockets;

  /** The proxy's answer for a handshake that failed with `outcome`; passive health hears of it. */
  const failed = (outcome: UpstreamOutcome, backend: BackendRef, why: string): OutgoingResponse => {
    const report = OUTCOMES[outcome].health;
    if (report !== null) health.report?.(backend.id, report);
    log.warn("WebSocket to backend {id} failed ({outcome}): {error}", {
      id: backend.id,
      outcome,
      error: why,
    });
    return failureResponse(outcome, backend.id, `WebSocket to backend ${backend.id} failed`);
  };

  return async (req, pool, candidates, path, authority) => {
    const limits = pool.config.websocket ?? WEBSOCKET_DEFAULTS;
    const session = new TunnelSession({
      pool: pool.name,
      idleTimeoutMs: limits.idle_timeout_ms,
      maxDurationMs: limits.max_duration_ms,
      counters,
      signal: req.signal,
    });
    const open = transport.websocket?.bind(transport);
    if (open === undefined || req.body === null) {
      session.end("failed");
      return errorResponse(500, OUTCOMES.internal.error, "this proxy cannot open WebSockets");
    }
    const headers = upstreamHeaders(req, authority, deps.isTrustedProxy, pool.requestRules);
    const clientSide = session.clientSide(req.body);
    const attempts = candidates.slice(0, 2);
    for (let i = 0; i < attempts.length; i++) {
      const backend = attempts[i];
      metrics.recordPick(backend.id);
      const sent = performance.now();
      const upstream: UpstreamRequest = {
        address: backend.address,
        tls: backend.tls,
        protocol: backend.protocol,
        method: "CONNECT",
        path,
        authority: upstreamAuthority(authority, pool.requestRules),
        headers,
        body: clientSide,
        timeoutMs: pool.timeoutMs,
        connectTimeoutMs: pool.config.connect_timeout_ms,
        signal: req.signal,
      };
      let res: UpstreamResponse;
      try {
        res = await open(upstream);
      } catch (err) {
        const unsent = err instanceof WebSocketUnsupported;
        const outcome = unsent ? "connect" : outcomeOfError(err, requestEnd(req.signal));
        if (outcome === "connect" && i < attempts.length - 1) {
          if (!unsent) health.report?.(backend.id, OUTCOMES.connect.health!);
          log.info("WebSocket to backend {id} not sent ({error}), trying {next}", {
            id: backend.id,
            error: String(err),
            next: attempts[i + 1].id,
          });
          continue;
        }
        session.end(outcome === "client_gone" ? "client_gone" : "failed");
        clientSide.cancel().catch(() => {});
        if (unsent) {
          // A configuration mismatch, not a failure of the backend: not counted against it.
          log.warn("{error}", { error: (err as Error).message });
          const res = errorResponse(
            502,
            "backend_error",
            `backend ${backend.id} cannot take WebSockets`,
          );
          res.backend = backend.id;
          return res;
        }
        return failed(outcome, backend, String(err));
      }
      return answered(req, pool, backend, res, performance.now() - sent, session, clientSide);
    }
    session.end("failed");
    return errorResponse(503, OUTCOMES.no_candidate.error, `no backend for pool ${pool.name}`);
  };

  /** The backend answered the handshake: a tunnel, or its refusal. */
  function answered(
    req: IncomingRequest,
    pool: PoolContext,
    backend: BackendRef,
    res: UpstreamResponse,
    upstreamMs: number,
    session: TunnelSession,
    clientSide: ReadableStream<Uint8Array>,
  ): OutgoingResponse {
    const invalid = invalidResponse(res);
    if (invalid !== null) {
      if (res.body instanceof ReadableStream) res.body.cancel().catch(() => {});
      clientSide.cancel().catch(() => {});
      session.end("failed");
      return failed("invalid_response", backend, invalid);
    }
    health.report?.(backend.id, OUTCOMES[outcomeOfStatus(res.status)].health!);
    const body = res.body;
    if (res.status < 200 || res.status > 299 || !(body instanceof ReadableStream)) {
      // Refused (or a 2xx that ended at once): the client's side is not wanted.
      clientSide.cancel().catch(() => {});
      session.end(res.status >= 200 && res.status < 300 ? "closed" : "refused");
      return downstreamResponse(backend.id, res, upstreamMs, pool.responseRules);
    }
    session.opened();
    const out = downstreamResponse(
      backend.id,
      { status: res.status, headers: res.headers, body: session.backendSide(body) },
      upstreamMs,
      pool.responseRules,
    );
    out.trailers = undefined;
    if (log.isEnabledFor("debug")) {
      log.debug("WebSocket open to backend {id} ({path})", { id: backend.id, path: req.head.path });
    }
    return out;
  }
}
