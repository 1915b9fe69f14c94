/**
 * The proxy application: route → pool → balanced backend → HTTP/2 `fetch`,
 * with retries, timeouts, error statuses and counters. It knows nothing of
 * QUIC; the HTTP/3 server calls it with decoded requests.
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import { readUpTo } from "../shared/bytes.ts";
import type { Config } from "./config/schema.ts";
import {
  type BackendRef,
  type Balancer,
  type BalanceRequest,
  createBalancer,
} from "./balancer/mod.ts";
import type { ProxyMetrics } from "./metrics/metrics.ts";
import { Router } from "./router/router.ts";
import { errorResponse } from "./server/connection.ts";
import type { IncomingRequest, OutgoingResponse, RequestHandler } from "./server/types.ts";
import { downstreamResponseFields, upstreamRequestHeaderList } from "./upstream/headers.ts";

const log = getLogger(["proxy", "upstream"]);

/** Sends one request to one backend (main.ts wires a pooled h2c client per backend). */
export type BackendFetch = (
  backend: BackendRef,
  url: string,
  init: RequestInit,
) => Promise<Response>;

/** Availability of backends: active health checks and passive ejection combined. */
export interface BackendHealth {
  isAvailable(id: string): boolean;
  /**
   * Availability ignoring passive ejection: used when ejection left a pool
   * with no candidate at all (panic mode: better a suspect backend than a 503).
   */
  isAvailableIgnoringEjection?(id: string): boolean;
  /** Live traffic outcome, for passive health (outlier ejection). */
  report?(id: string, outcome: "success" | "connect" | "5xx"): void;
}

/** What the proxy application needs. */
export interface ProxyAppDeps {
  config: Config;
  fetchBackend: BackendFetch;
  health: BackendHealth;
  metrics: ProxyMetrics;
  /** Used by the `random` balancer; defaults to Math.random. */
  random?: () => number;
}

interface Pool {
  name: string;
  balancer: Balancer;
  timeoutMs: number;
}

/** Bodies up to this size with a declared length are read whole, so they keep their content-length and can be retried. */
const BUFFER_BODY_LIMIT = 64 * 1024;

class BackendTimeout extends Error {
  constructor(ms: number) {
    super(`backend did not answer within ${ms} ms`);
    this.name = "BackendTimeout";
  }
}

/**
 * Whether the request never reached the backend (so a retry is safe). Deno's
 * fetch reports these as `TypeError: fetch failed` with a cause such as
 * `client error (Connect): tcp connect error: Connection refused`.
 */
function isConnectError(err: unknown): boolean {
  const text = `${err} ${(err as Error)?.cause ?? ""}`;
  return /\(Connect\)|tcp connect error|connection refused|dns error|network is unreachable/i
    .test(text);
}

/**
 * A response body with a declared length of at most {@link BUFFER_BODY_LIMIT}
 * is read whole (one native read instead of a stream reader per chunk), so the
 * server can send HEADERS and DATA in one write. If reading it fails, the
 * result is a stream that fails at once: the server then marks the response
 * malformed exactly as for a broken streamed body. Everything else stays a
 * stream.
 */
async function smallBodyOrStream(
  res: Response,
  fields: ReadonlyArray<readonly [string, string]>,
  method: string,
): Promise<ReadableStream<Uint8Array> | Uint8Array | null> {
  if (res.body === null || method === "HEAD") return res.body;
  let declared = -1;
  for (const [name, value] of fields) {
    if (name === "content-length") {
      declared = Number(value);
      break;
    }
  }
  if (!(declared >= 0 && declared <= BUFFER_BODY_LIMIT)) return res.body;
  try {
    const bytes = await res.bytes();
    return bytes.length === 0 ? null : bytes; // no empty DATA frame, as when streamed
  } catch (err) {
    return new ReadableStream<Uint8Array>({ start: (c) => c.error(err) });
  }
}

/**
 * Builds the request handler from a configuration.
 *
 * @example
 * ```ts
 * const handler = createProxyApp({ config, fetchBackend, health, metrics });
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
        u.backends.map((b) => ({ id: b.id, address: b.address, weight: b.weight })),
        { random: deps.random },
      ),
      timeoutMs: u.request_timeout_ms,
    });
  }
  const isAvailable = (id: string) => health.isAvailable(id);

  return async (req: IncomingRequest): Promise<OutgoingResponse> => {
    const head = req.head;
    const path = head.path ?? "/";
    const authority = head.authority ?? head.fields.find(([n]) => n === "host")?.[1];
    const poolName = router.match(authority, path);
    if (poolName === null) {
      metrics.record(null, 404);
      req.body?.cancel().catch(() => {});
      return errorResponse(404, "not_found", "no route matches this request");
    }
    const pool = pools.get(poolName)!;
    const balanceReq: BalanceRequest = {
      path,
      header(name: string): string | null {
        const values = head.fields.filter(([n]) => n === name).map(([, v]) => v);
        if (values.length === 0) return null;
        return values.join(name === "cookie" ? "; " : ", ");
      },
    };
    let candidates = pool.balancer.candidates(balanceReq, isAvailable);
    if (candidates.length === 0 && health.isAvailableIgnoringEjection) {
      candidates = pool.balancer.candidates(
        balanceReq,
        (id) => health.isAvailableIgnoringEjection!(id),
      );
    }
    if (candidates.length === 0) {
      metrics.record(null, 503);
      req.body?.cancel().catch(() => {});
      return errorResponse(503, "no_healthy_backend", `no healthy backend in pool ${pool.name}`);
    }

    const headers = upstreamRequestHeaderList(head.fields, {
      ip: req.remote.hostname,
      authority,
    });
    let body: BodyInit | null = req.body;
    if (
      req.body !== null && head.contentLength !== undefined &&
      head.contentLength <= BUFFER_BODY_LIMIT
    ) {
      body = await readUpTo(req.body, head.contentLength);
      if (body === null) throw new Error("body larger than declared");
    }
    // Retry only what has not started streaming: no body, or a body read whole.
    const retryable = body === null || body instanceof Uint8Array;
    const attempts = retryable ? candidates.slice(0, 2) : candidates.slice(0, 1);

    for (let i = 0; i < attempts.length; i++) {
      const backend = attempts[i];
      const last = i === attempts.length - 1;
      metrics.recordPick(backend.id);
      log.debug("routing to backend {id} ({method} {path})", {
        id: backend.id,
        method: head.method,
        path,
      });
      const ctl = new AbortController();
      const onClientGone = () => ctl.abort(req.signal.reason);
      req.signal.addEventListener("abort", onClientGone, { once: true });
      // request_timeout_ms bounds the wait for the backend's answer once the
      // request is fully sent: a streamed upload starts the clock when its
      // last byte has been handed to the backend, so a long upload is not cut.
      let timer: ReturnType<typeof setTimeout> | undefined;
      const startClock = () => {
        timer ??= setTimeout(() => ctl.abort(new BackendTimeout(pool.timeoutMs)), pool.timeoutMs);
      };
      let sent: BodyInit | null = body;
      if (body instanceof ReadableStream) {
        sent = body.pipeThrough(new TransformStream<Uint8Array, Uint8Array>({ flush: startClock }));
      } else {
        startClock();
      }
      try {
        const init: RequestInit & { duplex?: string } = {
          method: head.method,
          headers,
          body: sent,
          signal: ctl.signal,
          redirect: "manual",
        };
        if (sent instanceof ReadableStream) init.duplex = "half";
        const res = await deps.fetchBackend(backend, `http://${backend.address}${path}`, init);
        clearTimeout(timer);
        health.report?.(backend.id, res.status >= 500 ? "5xx" : "success");
        metrics.record(backend.id, res.status);
        const fields = downstreamResponseFields(res.headers);
        return {
          status: res.status,
          headers: fields,
          body: await smallBodyOrStream(res, fields, head.method),
        };
      } catch (err) {
        clearTimeout(timer);
        if (ctl.signal.aborted && ctl.signal.reason instanceof BackendTimeout) {
          log.warn("backend {id} timed out after {ms} ms", { id: backend.id, ms: pool.timeoutMs });
          metrics.record(backend.id, 503, "timeout");
          return errorResponse(503, "backend_timeout", `backend ${backend.id} timed out`);
        }
        if (req.signal.aborted) {
          log.debug("client went away during the request to {id}: {reason}", {
            id: backend.id,
            reason: String(req.signal.reason),
          });
          metrics.record(backend.id, 499, "error");
          return errorResponse(502, "client_gone", "client went away");
        }
        const connect = isConnectError(err);
        health.report?.(backend.id, connect ? "connect" : "5xx");
        if (connect && !last) {
          log.info("backend {id} unreachable, retrying on {next}: {error}", {
            id: backend.id,
            next: attempts[i + 1].id,
            error: String(err),
          });
          metrics.backend(backend.id).inc("backend_errors");
          continue;
        }
        log.warn("backend {id} failed: {error}", { id: backend.id, error: String(err) });
        metrics.record(backend.id, 502, "error");
        return errorResponse(502, "backend_error", `backend ${backend.id} failed`);
      } finally {
        req.signal.removeEventListener("abort", onClientGone);
      }
    }
    // Unreachable: the loop always returns on its last attempt.
    metrics.record(null, 500);
    return errorResponse(500, "internal_error", "no attempt made");
  };
}
