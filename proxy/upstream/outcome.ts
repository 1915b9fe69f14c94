/**
 * Whose fault it was, decided in one place: every way a forwarded request
 * can end ({@link UpstreamOutcome}) maps to the status the client gets, what
 * passive health is told about the backend, which backend counter moves,
 * whether the backend may have processed the request, and whether it may be
 * sent again. `phases/forward.ts` applies it and describes the result on the
 * response (`backend`, `failure`); the request sink (`request_log.ts`) counts
 * and logs it from there.
 *
 * | outcome | client status | passive health | counter (`failure`) | processed | sent again |
 * |---|---|---|---|---|---|
 * | `answered` | the backend's (< 500) | success | – | yes | no |
 * | `answered_5xx` | the backend's (500-599) | failure | – | yes | no |
 * | `connect` | 502 | failure | backend_errors | no, provably | any method |
 * | `reset` | 502 | failure | backend_errors | maybe | once, idempotent only |
 * | `protocol` | 502 | failure | backend_errors | maybe | once, idempotent only |
 * | `invalid_response` | 502 | failure | backend_errors | yes | no |
 * | `timeout` | 503 | failure | backend_timeouts | maybe | no |
 * | `client_gone` | 502 sent, counted and logged as 499 | – | – (`client_gone`) | maybe | no |
 * | `local` | 400 | – | – | no | no |
 * | `internal` | 500 | – | – | maybe | no |
 * | `shutdown` | 503 | – | – | maybe | no |
 * | `no_candidate` | 503 | – | – | no | no |
 *
 * **The retry rule** (RFC 9113 §8.7, RFC 9110 §9.2.2): a request is sent
 * again, whatever its method, only when the backend provably did not
 * process it (`processed: "no"`); one it may have processed is sent again
 * at most once, and only for an idempotent method; one it answered never.
 * Every path that sends a request again follows it: the transport's
 * immediate replay of a refused stream ({@link mayReplay}) and `forward`'s
 * next attempt ({@link maySendAgain}). "Provably not processed" is what the
 * transport reports as `connect`: nothing reached the backend (unreachable,
 * refused, no session within `connect_timeout_ms`, its queue full), or the
 * backend refused the stream before any response head (REFUSED_STREAM,
 * above a GOAWAY's last stream id). Once a response head has arrived (a 1xx
 * included) the backend processed the request: a refusal after it is a
 * `protocol` error of the backend, never `connect`.
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

import { isIdempotent } from "../http/mod.ts";
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
  /**
   * The backend provably did not process the request: nothing reached it
   * (refused, unreachable, no session within `connect_timeout_ms`), or it
   * refused the stream before any response head (REFUSED_STREAM, above a
   * GOAWAY's last stream id).
   */
  | "connect"
  /** The backend reset the stream or closed the connection before answering. */
  | "reset"
  /**
   * The backend broke HTTP/2 (a connection or stream error of RFC 9113
   * §5.4), or refused a stream it had already answered (RFC 9113 §8.7).
   */
  | "protocol"
  /** The backend answered with a head no client may be given (RFC 9113 §8.2, §8.3; RFC 9110 §15). */
  | "invalid_response"
  /** The backend took longer than `request_timeout_ms` to take the body or to answer. */
  | "timeout"
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

/**
 * Whether the backend may have processed the request, as far as the proxy
 * can prove: `no` (nothing reached it, or it refused the stream before any
 * response head), `maybe` (it may have begun: a reset, a lost connection, a
 * protocol error, a timeout), `yes` (it answered).
 */
export type Processed = "no" | "maybe" | "yes";

/**
 * May the request be sent again: `any` method (the backend provably did not
 * process it); `idempotent`: once, for an idempotent method only (it may
 * have); `no`.
 */
export type RetryRule = "any" | "idempotent" | "no";

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
  /** Whether the backend may have processed the request. */
  readonly processed: Processed;
  /**
   * May the request be sent again (a body that was streamed never is):
   * derived from `processed` by the retry rule (see the module docs), `any`
   * only when it is `no`. Where it goes is `forward`'s business (the next
   * candidate, or the same backend when it is the only one).
   */
  readonly retry: RetryRule;
  /** Whether the backend is to blame (the outcome counts against it). */
  readonly backendFault: boolean;
}

const RETRY = true;
const NO_RETRY = false;

/** The one table: each outcome's status, passive-health report, counter and retry rule. */
export const OUTCOMES: Readonly<Record<UpstreamOutcome, OutcomeRule>> = Object.freeze({
  answered: rule(null, "", "success", null, "yes", NO_RETRY, false),
  answered_5xx: rule(null, "", "5xx", null, "yes", NO_RETRY, true),
  connect: rule(502, "backend_error", "connect", "backend_errors", "no", RETRY, true),
  reset: rule(502, "backend_error", "reset", "backend_errors", "maybe", RETRY, true),
  protocol: rule(502, "backend_error", "protocol", "backend_errors", "maybe", RETRY, true),
  invalid_response: rule(
    502,
    "invalid_response",
    "invalid_response",
    "backend_errors",
    "yes",
    NO_RETRY,
    true,
  ),
  // Past the request's own deadline: no time left to try again.
  timeout: rule(503, "backend_timeout", "timeout", "backend_timeouts", "maybe", NO_RETRY, true),
  // Sent as 502 (if anyone still reads it); counted and logged as 499.
  client_gone: rule(502, "client_gone", null, null, "maybe", NO_RETRY, false, "client_gone"),
  // The request cannot be expressed: it would fail the same way again.
  local: rule(400, "bad_request", null, null, "no", NO_RETRY, false),
  internal: rule(500, "internal_error", null, null, "maybe", NO_RETRY, false),
  shutdown: rule(503, "shutting_down", null, null, "maybe", NO_RETRY, false),
  no_candidate: rule(503, "no_healthy_backend", null, null, "no", NO_RETRY, false),
});

/** The retry rule: what `processed` allows, for an outcome worth trying again at all. */
export function retryRule(processed: Processed, worthRetrying: boolean): RetryRule {
  if (!worthRetrying || processed === "yes") return "no";
  return processed === "no" ? "any" : "idempotent";
}

/**
 * Whether a request with `method` that ended in `outcome` may be sent
 * again (the retry rule, with `http/`'s idempotent methods; `forward` also
 * sends it again at most once after an `idempotent` one, and never a
 * streamed body).
 */
export function maySendAgain(outcome: UpstreamOutcome, method: string): boolean {
  const retry = OUTCOMES[outcome].retry;
  return retry === "any" || (retry === "idempotent" && isIdempotent(method));
}

/**
 * Whether a pool's `retries` policy may send again a request with `method`
 * whose attempt ended in `outcome`, for a reason its `retry_on` names: the
 * retry rule above, widened for idempotent methods only (RFC 9110 §9.2.2)
 * to what an operator opts into: a backend status (`answered`,
 * `answered_5xx`: it processed the request) and a per-try timeout
 * (`timeout`). A non-idempotent request is sent again only when the
 * backend provably did not process it (`any`). Whether it is sent again
 * more than once is the policy's `attempts`.
 */
export function maySendAgainByPolicy(outcome: UpstreamOutcome, method: string): boolean {
  const retry = OUTCOMES[outcome].retry;
  if (retry === "any") return true;
  if (!isIdempotent(method)) return false;
  return retry === "idempotent" || outcome === "answered" || outcome === "answered_5xx" ||
    outcome === "timeout";
}

/**
 * Whether the transport may replay at once, on the same backend, a request
 * that ended in `outcome`: only one the backend provably did not process,
 * whatever its method. What it may merely have processed is left to
 * `forward`'s one retry.
 */
export function mayReplay(outcome: UpstreamOutcome): boolean {
  return OUTCOMES[outcome].retry === "any";
}

function rule(
  status: number | null,
  error: string,
  health: HealthReport | null,
  counter: OutcomeRule["counter"],
  processed: Processed,
  worthRetrying: boolean,
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
    processed,
    retry: retryRule(processed, worthRetrying),
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
    case "invalid_response":
    case "timeout":
    case "local":
      return err.kind;
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
