/**
 * Phase 5, forward: one request to its pool's candidates. The upstream
 * request is built (`upstream_request.ts`), sent to the first candidate
 * and, when the request's retry plan allows (`retry/`: the pool's
 * `retries` policy, or the default rule of one retry; either way within
 * the retry rule of `upstream/outcome.ts`), again; the answer becomes the
 * client's response (`respond.ts`). What each way of ending means for the
 * client's status, passive health and the metrics is that same table.
 * Each attempt takes its backend's slot from the pool's gate and reports
 * its end to it (`circuit/`: `max_inflight`, `max_pending`, and the load
 * the `least-request` and `latency` balancers read); a pool with neither
 * has no gate. The answer the client gets keeps its slot until the
 * response is finished (its `finished`, called by the server layer once
 * the body is delivered, cut or abandoned). How the bytes travel is the
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
import { whenFinished } from "../server/response_finished.ts";
import type { IncomingRequest, OutgoingResponse } from "../server/types.ts";
import { OneRetry, pause, type RetryPlan } from "../retry/mod.ts";
import {
  outcomeOfError,
  outcomeOfStatus,
  OUTCOMES,
  type UpstreamOutcome,
} from "../upstream/outcome.ts";
import type { RequestTracing } from "../tracing/request_tracing.ts";
import type {
  UpstreamRequest,
  UpstreamResponse,
  UpstreamTransport,
} from "../upstream/transport.ts";
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
  /** Spans of the attempts (`tracing/`); absent or `null`: untraced. */
  tracing?: RequestTracing | null;
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
  const tracing = deps.tracing ?? null;
  /** One attempt (1 first) of a request to `backend`, under its span when tracing is on. */
  const exchange = (backend: BackendRef, attempt: number, request: UpstreamRequest) =>
    tracing === null
      ? transport.exchange(request)
      : tracing.exchange(transport, request, backend, attempt);

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

  /** An attempt that is retried counts against its backend; the request goes on. */
  const countRetried = (backendId: string, outcome: UpstreamOutcome): void => {
    const rule = OUTCOMES[outcome];
    if (rule.health !== null) health.report?.(backendId, rule.health);
    if (rule.counter !== null) metrics.backend(backendId).inc(rule.counter);
  };

  /** The client left while a retry waited out its backoff. */
  const clientGone = (backendId: string): OutgoingResponse =>
    failed("client_gone", backendId, failureMessage("client_gone", backendId));

  return async (req, pool, candidates, path, authority) => {
    const head = req.head;
    const headers = upstreamHeaders(req, authority, deps.isTrustedProxy, pool.requestRules);
    const sentAuthority = upstreamAuthority(authority, pool.requestRules);
    const pending = upstreamBody(req, headers);
    const body = pending instanceof Promise ? await pending : pending;
    if (candidates.length === 0) {
      return errorResponse(503, OUTCOMES.no_candidate.error, `no backend for pool ${pool.name}`);
    }
    // Send again only what has not started streaming: no body, or a body read whole.
    const plan = retryPlan(pool, candidates.length, head.method, !(body instanceof ReadableStream));
    const gate = pool.gate;
    // The slot of the attempt answered last, while its answer is looked at:
    // handed to the client's response, or given back in `finally` (a
    // release frees its slot once; calling it again does nothing).
    let slot: (() => void) | null = null;
    try {
      // The attempts: the one place a request is sent (again). The plan
      // says where and whether; the gate (load, circuit breaking) gives the slot.
      for (let n = 0;; n++) {
        let at = plan.target(n);
        if (gate !== null) {
          const admitted = gate.admit(candidates, at, req.signal, plan.waitMs());
          const taken = typeof admitted === "number" ? admitted : await admitted;
          if (taken < 0) return overloaded(req, pool, candidates[at], body);
          at = taken;
        }
        const backend = candidates[at];
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
          res = await exchange(backend, n + 1, {
            address: backend.address,
            tls: backend.tls,
            protocol: backend.protocol,
            method: head.method,
            path,
            authority: sentAuthority,
            headers,
            body,
            trailers: body === null ? undefined : req.trailers,
            timeoutMs: plan.attemptTimeoutMs(),
            connectTimeoutMs: pool.config.connect_timeout_ms,
            signal: req.signal,
          });
        } catch (err) {
          const outcome = outcomeOfError(err, requestEnd(req.signal));
          gate?.ended(backend.id, performance.now() - sent, outcome);
          const wait = plan.retry(n, outcome, err);
          const cause = describeError(err);
          if (wait < 0) {
            logFailure(outcome, backend.id, pool, cause);
            return failed(outcome, backend.id, failureMessage(outcome, backend.id));
          }
          countRetried(backend.id, outcome);
          log.info("backend {id} failed ({outcome}), retrying {method} on {next}: {error}", {
            id: backend.id,
            outcome,
            method: head.method,
            next: candidates[plan.target(n + 1)].id,
            error: cause,
          });
          if (wait > 0 && !(await pause(wait, req.signal))) return clientGone(backend.id);
          continue;
        }
        const upstreamMs = performance.now() - sent;
        const invalid = invalidResponse(res);
        const outcome = invalid === null ? outcomeOfStatus(res.status) : "invalid_response";
        if (gate !== null) slot = gate.answered(backend.id, upstreamMs, outcome);
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
        const statuses = plan.statuses;
        if (statuses !== null && statuses.has(res.status)) {
          const wait = plan.retry(n, outcome, res.status);
          if (wait >= 0) {
            if (res.body instanceof ReadableStream) res.body.cancel().catch(() => {});
            slot?.();
            slot = null;
            countRetried(backend.id, outcome);
            log.info("backend {id} answered {status}, retrying {method} on {next}", {
              id: backend.id,
              status: res.status,
              method: head.method,
              next: candidates[plan.target(n + 1)].id,
            });
            if (wait > 0 && !(await pause(wait, req.signal))) return clientGone(backend.id);
            continue;
          }
        }
        health.report?.(backend.id, OUTCOMES[outcome].health!);
        // Counted once it is finished, by the request sink (request_log.ts).
        const answer = downstreamResponse(backend.id, res, upstreamMs, pool.responseRules);
        if (slot !== null) {
          // In flight until the client has the whole body (or left, or it broke).
          whenFinished(answer, slot);
          slot = null;
        }
        return answer;
      }
    } finally {
      // An answer not handed over (invalid, or an error on the way): its slot back now.
      slot?.();
      plan.finish();
    }
  };
}

/** The retry plan of one request: the pool's `retries` policy, or the default rule. */
function retryPlan(
  pool: PoolContext,
  candidates: number,
  method: string,
  replayable: boolean,
): RetryPlan {
  return pool.retries === null
    ? new OneRetry(candidates, method, replayable, pool.timeoutMs, pool.state.retryCounters)
    : pool.retries.start(candidates, method, replayable);
}

/**
 * The 503 `overloaded` of a request refused by circuit breaking (every
 * candidate at its `max_inflight`, the pool's queue full or waited out);
 * it never reached a backend, so none is named. A client that left while
 * it waited gets nothing worth sending (counted and logged as 499).
 */
function overloaded(
  req: IncomingRequest,
  pool: PoolContext,
  wanted: BackendRef,
  body: Uint8Array | ReadableStream<Uint8Array> | null,
): OutgoingResponse {
  if (body instanceof ReadableStream) body.cancel().catch(() => {});
  if (req.signal.aborted) {
    // Counted and logged as 499, against no backend: none was asked.
    const gone = errorResponse(502, OUTCOMES.client_gone.error, "client went away");
    gone.failure = "client_gone";
    return gone;
  }
  return errorResponse(
    503,
    "overloaded",
    `pool ${pool.name} is overloaded: backend ${wanted.id} and the other candidates are at ` +
      "max_inflight and no slot freed in time (max_pending)",
  );
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
