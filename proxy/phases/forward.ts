/**
 * Phase 5, forward: one request to its pool's candidates. The upstream
 * request is built (`upstream_request.ts`), sent to the first candidate
 * and, when the retry rule of `upstream/outcome.ts` allows
 * ({@link maySendAgain}: any method after a failure the backend provably
 * did not process, an idempotent one once after one it may have), to the
 * next; the answer becomes the client's response (`respond.ts`). What each
 * way of ending means for the client's status, passive health and the
 * metrics is that same table. How the bytes travel is the
 * {@link UpstreamTransport}'s business.
 *
 * @example
 * ```ts
 * import type { IncomingRequest } from "../server/mod.ts";
 * import type { BackendRef } from "../balancer/mod.ts";
 * import type { PoolContext } from "./pool.ts";
 * declare const transport: ForwardDeps["transport"];
 * declare const health: ForwardDeps["health"];
 * declare const metrics: ForwardDeps["metrics"];
 * declare const req: IncomingRequest;
 * declare const pool: PoolContext;
 * declare const candidates: BackendRef[];
 * declare const path: string;
 * declare const authority: string;
 *
 * const forward = createForwarder({ transport, health, metrics });
 * const res = await forward(req, pool, candidates, path, authority);
 * ```
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import type { BackendRef } from "../balancer/mod.ts";
import type { ProxyMetrics } from "../metrics/metrics.ts";
import { errorResponse } from "../server/error_response.ts";
import { requestEnd } from "../server/request_end.ts";
import type { IncomingRequest, OutgoingResponse } from "../server/types.ts";
import {
  maySendAgain,
  outcomeOfError,
  outcomeOfStatus,
  OUTCOMES,
  type UpstreamOutcome,
} from "../upstream/outcome.ts";
import type { UpstreamResponse, UpstreamTransport } from "../upstream/transport.ts";
import type { PoolContext } from "./pool.ts";
import { downstreamResponse, failureResponse, invalidResponse } from "./respond.ts";
import type { BackendHealth } from "./select.ts";
import { upstreamAuthority, upstreamBody, upstreamHeaders } from "./upstream_request.ts";

const log = getLogger(["proxy", "upstream"]);

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

/** Sends a routed request to the first of its candidates (and the next one when the retry rule allows). */
export type Forwarder = (
  req: IncomingRequest,
  pool: PoolContext,
  candidates: readonly BackendRef[],
  path: string,
  authority: string | undefined,
) => Promise<OutgoingResponse>;

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

  /** The proxy's answer for a failed request; passive health hears of it. */
  const failed = (
    outcome: UpstreamOutcome,
    backendId: string,
    message: string,
  ): OutgoingResponse => {
    const report = OUTCOMES[outcome].health;
    if (report !== null) health.report?.(backendId, report);
    return failureResponse(outcome, backendId, message);
  };

  return async (req, pool, candidates, path, authority) => {
    const head = req.head;
    const headers = upstreamHeaders(req, authority, deps.isTrustedProxy, pool.requestRules);
    const sentAuthority = upstreamAuthority(authority, pool.requestRules);
    const pending = upstreamBody(req, headers);
    const body = pending instanceof Promise ? await pending : pending;
    // Retry only what has not started streaming: no body, or a body read whole.
    const retryable = !(body instanceof ReadableStream);
    const attempts = retryable ? candidates.slice(0, 2) : candidates.slice(0, 1);
    if (attempts.length === 0) {
      return errorResponse(503, OUTCOMES.no_candidate.error, `no backend for pool ${pool.name}`);
    }
    // A failure the backend may have processed (a reset, a protocol error),
    // on a pooled session, is retried once for an idempotent method (RFC
    // 9110 §9.2.2), as pingora retries a request that failed on a reused
    // connection: the next candidate, or the same backend when there is no
    // other. One it provably did not process
    // (`connect`) goes to the next candidate whatever the method.
    let maybeProcessedRetry = retryable;

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
          protocol: backend.protocol,
          method: head.method,
          path,
          authority: sentAuthority,
          headers,
          body,
          trailers: body === null ? undefined : req.trailers,
          timeoutMs: pool.timeoutMs,
          connectTimeoutMs: pool.config.connect_timeout_ms,
          signal: req.signal,
        });
      } catch (err) {
        const outcome = outcomeOfError(err, requestEnd(req.signal));
        const rule = OUTCOMES[outcome];
        const cause = describeError(err);
        const retry = maySendAgain(outcome, head.method) &&
          (rule.retry === "any" ? i < attempts.length - 1 : maybeProcessedRetry);
        if (retry) {
          if (rule.retry === "idempotent") {
            maybeProcessedRetry = false;
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
      return downstreamResponse(backend.id, res, performance.now() - sent, pool.responseRules);
    }
    // Unreachable: the loop always returns on its last attempt.
    return errorResponse(500, OUTCOMES.internal.error, "no attempt made");
  };
}

function failureMessage(outcome: UpstreamOutcome, id: string): string {
  switch (outcome) {
    case "timeout":
      return `backend ${id} timed out`;
    case "invalid_response":
      return `backend ${id} sent an invalid response`;
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

function logFailure(outcome: UpstreamOutcome, id: string, pool: PoolContext, cause: string): void {
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
    case "invalid_response":
      log.warn("backend {id} sent an invalid response: {error}", { id, error: cause });
      return;
    default:
      log.warn("backend {id} failed ({outcome}): {error}", { id, outcome, error: cause });
  }
}
