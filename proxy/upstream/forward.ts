/**
 * Forwarding one request to a pool's backends: the header translation, the
 * attempt on the first candidate and the retry on the next after a connect
 * failure (or, for an idempotent request, after a reset, protocol error or
 * lost worker before any answer), the validation of the backend's response
 * head, and what each outcome means for the client's status, passive health
 * and the metrics: one table, `outcome.ts`. How the bytes travel is the
 * {@link UpstreamTransport}'s business.
 *
 * @example
 * ```ts
 * import type { IncomingRequest } from "../server/mod.ts";
 * import type { BackendRef } from "../balancer/mod.ts";
 * declare const transport: ForwardDeps["transport"];
 * declare const health: ForwardDeps["health"];
 * declare const metrics: ForwardDeps["metrics"];
 * declare const req: IncomingRequest;
 * declare const candidates: BackendRef[];
 * declare const path: string;
 * declare const authority: string;
 *
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
import { MalformedMessageError } from "../h3/errors.ts";
import { validateResponseHead } from "../h3/message.ts";
import { errorResponse } from "../server/error_response.ts";
import type { IncomingRequest, OutgoingResponse } from "../server/types.ts";
import { downstreamResponseFields, upstreamRequestHeaderList } from "./headers.ts";
import {
  type HealthReport,
  outcomeOfError,
  outcomeOfStatus,
  OUTCOMES,
  type UpstreamOutcome,
} from "./outcome.ts";
import type { UpstreamResponse, UpstreamTransport } from "./transport.ts";

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
  /** Live traffic outcome, for passive health (outlier ejection); see `outcome.ts`. */
  report?(id: string, outcome: HealthReport): void;
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
  /** The pool's name (`upstream` key). */
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
 * Checks the backend's response head (RFC 9113 §8.2, §8.3, RFC 9110 §15);
 * returns why it may not be forwarded, or `null`.
 */
export function invalidResponse(res: UpstreamResponse): string | null {
  try {
    validateResponseHead(res.status, res.headers);
    return null;
  } catch (err) {
    if (err instanceof MalformedMessageError) return err.message;
    throw err;
  }
}

/**
 * Builds the forwarder.
 */
export function createForwarder(deps: ForwardDeps): Forwarder {
  const { transport, health, metrics } = deps;

  /** The proxy's answer for a failed request, described for the request sink. */
  const failed = (
    outcome: UpstreamOutcome,
    backendId: string,
    message: string,
  ): OutgoingResponse => {
    const rule = OUTCOMES[outcome];
    if (rule.health !== null) health.report?.(backendId, rule.health);
    const res: OutgoingResponse = errorResponse(rule.status!, rule.error, message);
    if (rule.namesBackend) res.backend = backendId;
    if (rule.failure !== undefined) res.failure = rule.failure;
    return res;
  };

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
    if (attempts.length === 0) {
      return errorResponse(503, OUTCOMES.no_candidate.error, `no backend for pool ${pool.name}`);
    }
    // A failure before any answer that may have reached the backend (a
    // reset, a protocol error, a lost worker), on a pooled session, is
    // retried once for an idempotent method (RFC 9110 §9.2.2), as pingora
    // retries a request that failed on a reused connection: the next
    // candidate, or the same backend when there is no other.
    let idempotentRetry = retryable && IDEMPOTENT.has(head.method);

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
      let res: UpstreamResponse;
      try {
        res = await transport.exchange({
          address: backend.address,
          tls: backend.tls,
          method: head.method,
          path,
          authority,
          headers,
          body,
          timeoutMs: pool.timeoutMs,
          signal: req.signal,
        });
      } catch (err) {
        const outcome = outcomeOfError(err, req.signal.aborted);
        const rule = OUTCOMES[outcome];
        const cause = describeError(err);
        const retry = (rule.retry === "next" && i < attempts.length - 1) ||
          (rule.retry === "idempotent" && idempotentRetry);
        if (retry) {
          if (rule.retry === "idempotent") {
            idempotentRetry = false;
            if (i === attempts.length - 1) attempts.push(backend);
          }
          // The attempt counts against the backend; the request goes on.
          if (rule.health !== null) health.report?.(backend.id, rule.health);
          if (rule.counter !== null) metrics.backend(backend.id).inc(rule.counter);
          log.info("backend {id} failed ({outcome}), retrying {method} on {next}: {error}", {
            id: backend.id,
            outcome,
            method: head.method,
            next: attempts[i + 1].id,
            error: cause,
          });
          continue;
        }
        logFailure(outcome, backend.id, pool, cause);
        return failed(outcome, backend.id, failureMessage(outcome, backend.id));
      }
      const invalid = invalidResponse(res);
      if (invalid !== null) {
        if (res.body instanceof ReadableStream) res.body.cancel().catch(() => {});
        log.warn("backend {id} sent an invalid response: {error}", {
          id: backend.id,
          error: invalid,
        });
        return failed(
          "invalid_response",
          backend.id,
          `backend ${backend.id} sent an invalid response`,
        );
      }
      health.report?.(backend.id, OUTCOMES[outcomeOfStatus(res.status)].health!);
      // Counted once it is finished, by the request sink (request_log.ts).
      return {
        status: res.status,
        headers: downstreamResponseFields(res.headers),
        body: res.body,
        backend: backend.id,
        upstreamMs: performance.now() - sent,
      };
    }
    // Unreachable: the loop always returns on its last attempt.
    return errorResponse(500, OUTCOMES.internal.error, "no attempt made");
  };
}

function failureMessage(outcome: UpstreamOutcome, id: string): string {
  switch (outcome) {
    case "timeout":
      return `backend ${id} timed out`;
    case "client_gone":
      return "client went away";
    case "local":
      return "the request cannot be forwarded";
    case "internal":
      return "internal proxy error";
    case "shutdown":
      return "the proxy is shutting down";
    default:
      return `backend ${id} failed`;
  }
}

function logFailure(outcome: UpstreamOutcome, id: string, pool: PoolTarget, cause: string): void {
  switch (outcome) {
    case "timeout":
      log.warn("backend {id} timed out after {ms} ms", { id, ms: pool.timeoutMs });
      return;
    case "client_gone":
    case "shutdown":
      if (log.isEnabledFor("debug")) {
        log.debug("request to {id} ended ({outcome}): {reason}", { id, outcome, reason: cause });
      }
      return;
    case "local":
      // The request could not be expressed to the backend: the client's
      // doing, not the backend's; nothing is counted against it.
      log.info("request not forwarded to {id}: {error}", { id, error: cause });
      return;
    case "internal":
      log.error("forwarding to {id} failed inside the proxy: {error}", { id, error: cause });
      return;
    default:
      log.warn("backend {id} failed ({outcome}): {error}", { id, outcome, error: cause });
  }
}
