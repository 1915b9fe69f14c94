/**
 * Forwarding one request to a pool's backends: the header translation, the
 * attempt on the first candidate and the retry on the next after a connect
 * failure (or, for an idempotent request, after a reset before any answer),
 * the mapping of failures to statuses (DESIGN.md §4), and what each outcome
 * tells passive health and the metrics. How the bytes travel is the
 * {@link UpstreamTransport}'s business.
 *
 * @example
 * ```ts
 * const forward = createForwarder({ transport, health, metrics });
 * const res = await forward(req, { name: "api", timeoutMs: 30_000 }, candidates, path, authority);
 * ```
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import { readUpTo } from "../../shared/bytes.ts";
import type { BackendRef } from "../balancer/mod.ts";
import type { ProxyMetrics } from "../metrics/metrics.ts";
import { errorResponse } from "../server/error_response.ts";
import type { IncomingRequest, OutgoingResponse } from "../server/types.ts";
import { downstreamResponseFields, upstreamRequestHeaderList } from "./headers.ts";
import { UpstreamError, type UpstreamTransport } from "./transport.ts";

const log = getLogger(["proxy", "upstream"]);

/** Availability of backends: active health checks and passive ejection combined. */
export interface BackendHealth {
  /** Whether the backend may be picked: enabled, healthy and not ejected. */
  isAvailable(id: string): boolean;
  /**
   * Availability ignoring passive ejection: used when ejection left a pool
   * with no candidate at all (panic mode: better a suspect backend than a 503).
   */
  isAvailableIgnoringEjection?(id: string): boolean;
  /** Whether the backend is enabled (not disabled by the admin API); default: all are. */
  isEnabled?(id: string): boolean;
  /** Live traffic outcome, for passive health (outlier ejection). */
  report?(id: string, outcome: "success" | "connect" | "5xx"): void;
}

/** What forwarding needs. */
export interface ForwardDeps {
  /** Carries the exchanges. */
  transport: UpstreamTransport;
  /** Where outcomes are reported. */
  health: BackendHealth;
  /** Counters per backend. */
  metrics: ProxyMetrics;
  /** Whether a client address is a trusted proxy (`trusted_proxies`); default: nobody is. */
  isTrustedProxy?: (ip: string) => boolean;
}

/** The pool a request was routed to. */
export interface PoolTarget {
  name: string;
  /** `request_timeout_ms` of the pool. */
  timeoutMs: number;
}

/** Sends a routed request to the first of its candidates (and the next one after a connect failure). */
export type Forwarder = (
  req: IncomingRequest,
  pool: PoolTarget,
  candidates: readonly BackendRef[],
  path: string,
  authority: string | undefined,
) => Promise<OutgoingResponse>;

/** Methods a request may be sent twice with (RFC 9110 §9.2.2); TRACE is never forwarded. */
const IDEMPOTENT = new Set(["GET", "HEAD", "OPTIONS", "PUT", "DELETE"]);

/** Bodies up to this size with a declared length are read whole, so they keep their content-length and can be retried. */
const BUFFER_BODY_LIMIT = 64 * 1024;

/** The error's message with its causes, e.g. `backend connect error: … (connect ECONNREFUSED 127.0.0.1:1)`. */
export function describeError(err: unknown): string {
  let text = err instanceof Error ? err.message : String(err);
  let cause = err instanceof Error ? err.cause : undefined;
  for (let depth = 0; cause !== undefined && depth < 3; depth++) {
    const msg = cause instanceof Error ? cause.message : String(cause);
    if (!text.includes(msg)) text += ` (${msg})`;
    cause = cause instanceof Error ? cause.cause : undefined;
  }
  return text;
}

/**
 * Builds the forwarder.
 */
export function createForwarder(deps: ForwardDeps): Forwarder {
  const { transport, health, metrics } = deps;
  return async (req, pool, candidates, path, authority) => {
    const head = req.head;
    const ip = req.remote.hostname;
    const trusted = deps.isTrustedProxy?.(ip) ?? false;
    const headers = upstreamRequestHeaderList(head.fields, { ip, authority, trusted });
    let body: Uint8Array | ReadableStream<Uint8Array> | null = req.body;
    if (
      req.body !== null && head.contentLength !== undefined &&
      head.contentLength <= BUFFER_BODY_LIMIT
    ) {
      body = await readUpTo(req.body, head.contentLength);
      if (body === null) throw new Error("body larger than declared");
    }
    if (body instanceof Uint8Array) headers.push(["content-length", String(body.length)]);
    else if (body !== null && head.contentLength !== undefined) {
      headers.push(["content-length", String(head.contentLength)]);
    }
    // Retry only what has not started streaming: no body, or a body read whole.
    const retryable = !(body instanceof ReadableStream);
    const attempts = retryable ? candidates.slice(0, 2) : candidates.slice(0, 1);
    // A stream reset before any answer, on a pooled session, is retried once
    // for an idempotent method (RFC 9110 §9.2.2), as pingora retries a
    // request that failed on a reused connection: the next candidate, or
    // the same backend when there is no other.
    let resetRetry = retryable && IDEMPOTENT.has(head.method);

    for (let i = 0; i < attempts.length; i++) {
      const backend = attempts[i];
      metrics.recordPick(backend.id);
      if (log.isEnabledFor("debug")) {
        log.debug("routing to backend {id} ({method} {path})", {
          id: backend.id,
          method: head.method,
          path,
        });
      }
      const sent = performance.now();
      try {
        const res = await transport.exchange({
          address: backend.address,
          method: head.method,
          path,
          authority,
          headers,
          body,
          timeoutMs: pool.timeoutMs,
          signal: req.signal,
        });
        health.report?.(backend.id, res.status >= 500 ? "5xx" : "success");
        // Counted once it is finished, by the request sink (request_log.ts).
        return {
          status: res.status,
          headers: downstreamResponseFields(res.headers),
          body: res.body,
          backend: backend.id,
          upstreamMs: performance.now() - sent,
        };
      } catch (err) {
        const e = err instanceof UpstreamError
          ? err
          : new UpstreamError("local", describeError(err), { cause: err });
        const cause = describeError(e);
        switch (e.kind) {
          case "timeout":
            log.warn("backend {id} timed out after {ms} ms", {
              id: backend.id,
              ms: pool.timeoutMs,
            });
            return {
              ...errorResponse(503, "backend_timeout", `backend ${backend.id} timed out`),
              backend: backend.id,
              failure: "timeout",
            };
          case "aborted":
            if (log.isEnabledFor("debug")) {
              log.debug("client went away during the request to {id}: {reason}", {
                id: backend.id,
                reason: cause,
              });
            }
            return {
              ...errorResponse(502, "client_gone", "client went away"),
              backend: backend.id,
              failure: "client_gone",
            };
          case "local":
            // The request could not be expressed to the backend: the client's
            // doing, not the backend's; nothing is counted against it.
            log.info("request not forwarded to {id}: {error}", { id: backend.id, error: cause });
            return errorResponse(400, "bad_request", "the request cannot be forwarded");
        }
        health.report?.(backend.id, e.kind === "connect" ? "connect" : "5xx");
        if (e.kind === "reset" && resetRetry) {
          resetRetry = false;
          if (i === attempts.length - 1) attempts.push(backend);
          log.info("backend {id} reset the stream, retrying {method} on {next}: {error}", {
            id: backend.id,
            method: head.method,
            next: attempts[i + 1].id,
            error: cause,
          });
          metrics.backend(backend.id).inc("backend_errors");
          continue;
        }
        if (e.kind === "connect" && i < attempts.length - 1) {
          log.info("backend {id} unreachable, retrying on {next}: {error}", {
            id: backend.id,
            next: attempts[i + 1].id,
            error: cause,
          });
          metrics.backend(backend.id).inc("backend_errors");
          continue;
        }
        log.warn("backend {id} failed: {error}", { id: backend.id, error: cause });
        return {
          ...errorResponse(502, "backend_error", `backend ${backend.id} failed`),
          backend: backend.id,
          failure: "error",
        };
      }
    }
    // Unreachable: the loop always returns on its last attempt.
    return errorResponse(500, "internal_error", "no attempt made");
  };
}
