/**
 * Whose fault it was, decided in one place: every way a forwarded request
 * can end ({@link UpstreamOutcome}) maps to the status the client gets, what
 * passive health is told about the backend, which backend counter moves,
 * and whether the request may be sent again. `phases/forward.ts` applies it and
 * describes the result on the response (`backend`, `failure`); the request
 * sink (`request_log.ts`) counts and logs it from there.
 *
 * | outcome | client status | passive health | counter (`failure`) | retry |
 * |---|---|---|---|---|
 * | `answered` | the backend's (< 500) | success | – | – |
 * | `answered_5xx` | the backend's (500-599) | failure | – | – |
 * | `connect` | 502 | failure | backend_errors | next candidate, any method |
 * | `reset` | 502 | failure | backend_errors | once, idempotent only |
 * | `protocol` | 502 | failure | backend_errors | once, idempotent only |
 * | `invalid_response` | 502 | failure | backend_errors | no |
 * | `timeout` | 503 | failure | backend_timeouts | no |
 * | `worker_lost` | 502 | – | – | once, idempotent only |
 * | `client_gone` | 502 sent, counted and logged as 499 | – | – (`client_gone`) | no |
 * | `local` | 400 | – | – | no |
 * | `internal` | 500 | – | – | no |
 * | `shutdown` | 503 | – | – | no |
 * | `no_candidate` | 503 | – | – | – |
 *
 * @example
 * ```ts
 * import { requestEnd } from "../server/request_end.ts";
 * declare const err: unknown;
 * declare const signal: AbortSignal; // the client's request's
 *
 * const outcome = outcomeOfError(err, requestEnd(signal)); // e.g. "timeout"
 * OUTCOMES[outcome].status; // 503
 * OUTCOMES[outcome].health; // "timeout": counts against the backend
 * ```
 *
 * @module
 */

import type { RequestEndKind } from "../server/request_end.ts";
import type { PassiveFailureKind } from "../health/passive.ts";
import type { RequestFailure } from "../server/types.ts";
import { UpstreamError } from "./transport.ts";

/** How one forwarded request ended. */
export type UpstreamOutcome =
  /** The backend answered with a status below 500. */
  | "answered"
  /** The backend answered 500-599. */
  | "answered_5xx"
  /** Nothing reached the backend (refused, unreachable, REFUSED_STREAM, GOAWAY before it was sent). */
  | "connect"
  /** The backend reset the stream or closed the connection before answering. */
  | "reset"
  /** The backend broke HTTP/2 (a connection or stream error of RFC 9113 §5.4). */
  | "protocol"
  /** The backend answered with a head no client may be given (RFC 9113 §8.2, §8.3; RFC 9110 §15). */
  | "invalid_response"
  /** The backend took longer than `request_timeout_ms` to take the body or to answer. */
  | "timeout"
  /** The upstream worker carrying the exchange died of a cause not tied to this backend. */
  | "worker_lost"
  /** The client left (reset its stream, closed its connection) before the answer. */
  | "client_gone"
  /** The request cannot be expressed to the backend (the client's doing). */
  | "local"
  /** The proxy itself failed (a bug). */
  | "internal"
  /** The proxy is shutting down: it closed the upstream transport or the client's connection under the request. */
  | "shutdown"
  /** No backend of the pool could be picked. */
  | "no_candidate";

/**
 * What passive health is told: a success, or the kind of failure it counts
 * ({@link PassiveFailureKind}). `null` in a rule when the outcome says nothing
 * about the backend.
 */
export type HealthReport = "success" | PassiveFailureKind;

/** How an outcome is answered and counted. */
export interface OutcomeRule {
  /** Status sent to the client; `null`: the backend's own status. */
  readonly status: number | null;
  /** `error` of the JSON body the proxy answers with (when `status` is not `null`). */
  readonly error: string;
  /** What passive health hears about the backend, or `null` (not its fault, or unknown). */
  readonly health: HealthReport | null;
  /** The backend counter it moves, or `null`. */
  readonly counter: "backend_errors" | "backend_timeouts" | null;
  /**
   * How the response describes it to the request sink (`timeout` moves
   * backend_timeouts, `error` backend_errors, `client_gone` is counted and
   * logged as 499), or `undefined`.
   */
  readonly failure: RequestFailure | undefined;
  /**
   * Whether the response names the backend (`backend`), so the request is
   * counted in that backend's metrics: when it answered, was to blame, or
   * the client left while it was asked.
   */
  readonly namesBackend: boolean;
  /**
   * May the request be sent again: `next` to the next candidate whatever
   * the method (nothing reached the backend); `idempotent` once, for an
   * idempotent method whose body was not streamed (to the next candidate,
   * or the same backend when it is the only one); `no`.
   */
  readonly retry: "next" | "idempotent" | "no";
  /** Whether the backend is to blame (the outcome counts against it). */
  readonly backendFault: boolean;
}

/** The one table: each outcome's status, passive-health report, counter and retry rule. */
export const OUTCOMES: Readonly<Record<UpstreamOutcome, OutcomeRule>> = Object.freeze({
  answered: rule(null, "", "success", null, "no", false),
  answered_5xx: rule(null, "", "5xx", null, "no", true),
  connect: rule(502, "backend_error", "connect", "backend_errors", "next", true),
  reset: rule(502, "backend_error", "reset", "backend_errors", "idempotent", true),
  protocol: rule(502, "backend_error", "protocol", "backend_errors", "idempotent", true),
  invalid_response: rule(502, "invalid_response", "invalid_response", "backend_errors", "no", true),
  timeout: rule(503, "backend_timeout", "timeout", "backend_timeouts", "no", true),
  worker_lost: rule(502, "backend_error", null, null, "idempotent", false),
  // Sent as 502 (if anyone still reads it); counted and logged as 499.
  client_gone: rule(502, "client_gone", null, null, "no", false, "client_gone"),
  local: rule(400, "bad_request", null, null, "no", false),
  internal: rule(500, "internal_error", null, null, "no", false),
  shutdown: rule(503, "shutting_down", null, null, "no", false),
  no_candidate: rule(503, "no_healthy_backend", null, null, "no", false),
});

function rule(
  status: number | null,
  error: string,
  health: HealthReport | null,
  counter: OutcomeRule["counter"],
  retry: OutcomeRule["retry"],
  backendFault: boolean,
  other?: RequestFailure,
): OutcomeRule {
  const failure: RequestFailure | undefined = counter === "backend_timeouts"
    ? "timeout"
    : counter === "backend_errors"
    ? "error"
    : other;
  const namesBackend = backendFault || status === null || other === "client_gone";
  return Object.freeze({
    status,
    error,
    health,
    counter,
    failure,
    namesBackend,
    retry,
    backendFault,
  });
}

/** The outcome of a backend that answered with `status` (a valid head). */
export function outcomeOfStatus(status: number): UpstreamOutcome {
  return status >= 500 ? "answered_5xx" : "answered";
}

/**
 * The outcome of a request that ended early (its signal's
 * `RequestEnd`): the proxy shutting down is `shutdown`; every other end
 * (the client gone, its body failed, its connection closed, it took no
 * response data) is the client's doing, `client_gone`.
 */
export function outcomeOfEnd(end: RequestEndKind): UpstreamOutcome {
  return end === "shutdown" ? "shutdown" : "client_gone";
}

/**
 * The outcome of a failed exchange. How the request ended (`end`, from
 * its signal) outranks whatever the transport says (its cancel is what
 * the transport saw); an error that is not an {@link UpstreamError} is the
 * proxy's own bug.
 */
export function outcomeOfError(err: unknown, end: RequestEndKind | undefined): UpstreamOutcome {
  if (end !== undefined) return outcomeOfEnd(end);
  if (!(err instanceof UpstreamError)) return "internal";
  switch (err.kind) {
    case "connect":
    case "reset":
    case "protocol":
    case "timeout":
    case "local":
      return err.kind;
    case "worker":
      return "worker_lost";
    case "aborted":
      // Aborted without the client leaving: the transport was closed under it.
      return "shutdown";
  }
}

/** The status an outcome is counted and logged with: the one sent, 499 for a client that left. */
export function outcomeStatus(outcome: UpstreamOutcome, backendStatus?: number): number {
  if (outcome === "client_gone") return 499;
  return OUTCOMES[outcome].status ?? backendStatus ?? 502;
}
