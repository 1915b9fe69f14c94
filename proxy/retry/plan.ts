/**
 * What the forwarder asks about sending a request again: the
 * {@link RetryPlan} of one request, made by the pool's policy (`policy.ts`,
 * a pool with `retries`) or by the default rule (`one_retry.ts`, a pool
 * without). The forwarder's attempt loop stays the one place that sends;
 * the plan only answers which backend, how long, and whether (and after
 * what wait) to go again. Whether a request may be sent again at all is
 * always `upstream/outcome.ts`'s rule.
 *
 * @example
 * ```ts
 * declare const plan: RetryPlan;
 * declare const err: unknown;
 * const wait = plan.retry(0, "connect", err); // -1: answer now; else ms before the next attempt
 * plan.finish();
 * ```
 *
 * @module
 */

import type { UpstreamOutcome } from "../upstream/outcome.ts";
import { UpstreamError } from "../upstream/transport.ts";

/** One request's answers to the forwarder's questions about its attempts. */
export interface RetryPlan {
  /** Index in the request's candidates of attempt `n`'s backend (0: the first attempt). */
  target(n: number): number;
  /** The transport's `timeoutMs` for the attempt about to be sent. */
  attemptTimeoutMs(): number;
  /** How long an attempt may wait in the pool's queue for a slot (`max_pending`). */
  waitMs(): number;
  /** Backend statuses that are sent again (`retry_on` numbers); `null`: none. */
  readonly statuses: ReadonlySet<number> | null;
  /**
   * After attempt `n` ended in `outcome` (`detail`: the transport's error,
   * or the status answered): -1 to answer with it, else the milliseconds
   * to wait before the next attempt (0: at once). A retry granted is
   * counted (`RetryCounters`).
   */
  retry(n: number, outcome: UpstreamOutcome, detail: unknown): number;
  /** The request is done (its budget share is given back). */
  finish(): void;
}

/**
 * The `retry_on` reason of an attempt that ended in `outcome`: `connect`
 * (no connection, or the transport's queue full), `refused` (the backend
 * refused the stream before any response head), `reset` (a reset or an
 * HTTP/2 violation after it may have begun), `timeout`, or the status
 * answered (as text); `null` for an outcome no policy retries.
 */
export function retryReason(outcome: UpstreamOutcome, detail: unknown): string | null {
  switch (outcome) {
    case "connect":
      return detail instanceof UpstreamError && detail.refusedStream ? "refused" : "connect";
    case "reset":
    case "protocol":
      return "reset";
    case "timeout":
      return "timeout";
    case "answered":
    case "answered_5xx":
      return typeof detail === "number" ? String(detail) : null;
    default:
      return null;
  }
}
