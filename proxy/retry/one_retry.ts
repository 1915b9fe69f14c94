/**
 * The retry rule of a pool without `retries` (what the proxy always did,
 * unchanged): a request the backend provably did not process goes to the
 * next candidate whatever its method; one it may have processed (a reset,
 * an HTTP/2 violation) goes once more, idempotent methods only, to the
 * next candidate or the same backend when there is no other; nothing else
 * is sent again, a streamed body never, and there is no wait, budget or
 * status retry. Decided by `upstream/outcome.ts` ({@link maySendAgain}).
 *
 * @example
 * ```ts
 * import { RetryCounters } from "./counters.ts";
 * const plan = new OneRetry(2, "GET", true, 30_000, new RetryCounters());
 * plan.retry(0, "connect", undefined); // 0: at once, on candidate plan.target(1) = 1
 * ```
 *
 * @module
 */

import { maySendAgain, OUTCOMES, type UpstreamOutcome } from "../upstream/outcome.ts";
import type { RetryCounters } from "./counters.ts";
import { type RetryPlan, retryReason } from "./plan.ts";

/** See the module documentation. */
export class OneRetry implements RetryPlan {
  /** Default rule: no status is retried. */
  readonly statuses: null = null;
  readonly #method: string;
  readonly #timeoutMs: number;
  readonly #counters: RetryCounters;
  /** The first attempts, one per candidate: two when the body can be sent again, else one. */
  readonly #firsts: number;
  /** Attempts planned so far: {@link #firsts}, plus one when a maybe-processed failure is retried on the last. */
  #planned: number;
  #maybeProcessedRetry: boolean;

  /**
   * The plan of a request with `method` over `candidates` backends;
   * `replayable`: its body can be sent again (none, or read whole);
   * `timeoutMs`: `request_timeout_ms`, every attempt's.
   */
  constructor(
    candidates: number,
    method: string,
    replayable: boolean,
    timeoutMs: number,
    counters: RetryCounters,
  ) {
    this.#method = method;
    this.#timeoutMs = timeoutMs;
    this.#counters = counters;
    this.#firsts = Math.min(candidates, replayable ? 2 : 1);
    this.#planned = this.#firsts;
    this.#maybeProcessedRetry = replayable;
  }

  /** See {@link RetryPlan.target}: the next candidate, then the last one again. */
  target(n: number): number {
    return n < this.#firsts ? n : this.#firsts - 1;
  }

  /** See {@link RetryPlan.attemptTimeoutMs}. */
  attemptTimeoutMs(): number {
    return this.#timeoutMs;
  }

  /** See {@link RetryPlan.waitMs}. */
  waitMs(): number {
    return this.#timeoutMs;
  }

  /** See {@link RetryPlan.retry}: 0 (at once) or -1. */
  retry(n: number, outcome: UpstreamOutcome, detail: unknown): number {
    const rule = OUTCOMES[outcome].retry;
    const again = maySendAgain(outcome, this.#method) &&
      (rule === "any" ? n < this.#planned - 1 : this.#maybeProcessedRetry);
    if (!again) return -1;
    if (rule === "idempotent") {
      // Once only; on the same backend when it was the last planned.
      this.#maybeProcessedRetry = false;
      if (n === this.#planned - 1) this.#planned++;
    }
    this.#counters.retried(retryReason(outcome, detail) ?? outcome);
    return 0;
  }

  /** See {@link RetryPlan.finish}: nothing to give back. */
  finish(): void {}
}
