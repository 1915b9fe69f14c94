/**
 * A pool's `retries`, compiled: how many times a request may be sent again
 * (`attempts`), for which reasons (`retry_on`: `connect`, `refused`,
 * `reset`, `timeout`, backend statuses), each attempt's bound
 * (`per_try_timeout_ms`), the wait between attempts (exponential backoff
 * with full jitter, `backoff.ts`) and the pool's retry budget
 * (`budget.ts`). Whether a request may be sent again at all stays
 * `upstream/outcome.ts`'s rule ({@link maySendAgainByPolicy}): a backend
 * status or a per-try timeout is retried for idempotent methods only, and
 * a non-idempotent request only when the backend provably did not process
 * it.
 *
 * With `retries`, `request_timeout_ms` bounds the whole request (every
 * attempt, every wait between them, and a wait for a slot): Envoy's route
 * timeout; `per_try_timeout_ms` bounds each attempt. A backoff that would
 * end past the deadline is not waited: the last answer is given instead.
 *
 * @example
 * ```ts
 * import { RetryBudget } from "./budget.ts";
 * import { RetryCounters } from "./counters.ts";
 * const policy = new RetryPolicy({
 *   attempts: 2,
 *   per_try_timeout_ms: 500,
 *   retry_on: ["connect", "refused", 503],
 *   budget_percent: 20,
 *   min_retries_per_second: 3,
 *   backoff_base_ms: 25,
 *   backoff_max_ms: 250,
 * }, 5000, new RetryBudget(), new RetryCounters());
 * const plan = policy.start(2, "GET", true);
 * plan.retry(0, "answered_5xx", 503); // ms to wait, or -1
 * plan.finish();
 * ```
 *
 * @module
 */

import type { RetriesConfig } from "../config/types.ts";
import { maySendAgainByPolicy, type UpstreamOutcome } from "../upstream/outcome.ts";
import { backoffDelay } from "./backoff.ts";
import type { RetryBudget } from "./budget.ts";
import type { RetryCounters } from "./counters.ts";
import { type RetryPlan, retryReason } from "./plan.ts";

/** What the policy reads the time and draws its jitter from (tests inject them). */
export interface RetryPolicyDeps {
  /** Monotonic milliseconds; default `performance.now`. */
  readonly now?: () => number;
  /** Uniform numbers in [0, 1) for the jitter; default `Math.random`. */
  readonly random?: () => number;
}

/** A pool's `retries`, compiled once per configuration generation. */
export class RetryPolicy {
  /** Times a request may be sent again. */
  readonly attempts: number;
  /** Bound of each attempt, ms; `null`: the request's deadline only. */
  readonly perTryTimeoutMs: number | null;
  /** The failures retried (`connect`, `refused`, `reset`, `timeout`). */
  readonly failures: ReadonlySet<string>;
  /** The backend statuses retried; `null` when none. */
  readonly statuses: ReadonlySet<number> | null;
  /** Every `retry_on` reason as the metrics label it (statuses as text). */
  readonly reasons: readonly string[];
  /** `request_timeout_ms`: the whole request's deadline. */
  readonly requestTimeoutMs: number;
  /** `backoff_base_ms` / `backoff_max_ms`. */
  readonly backoffBaseMs: number;
  /** See {@link backoffBaseMs}. */
  readonly backoffMaxMs: number;
  /** The pool's budget (kept across reloads). */
  readonly budget: RetryBudget;
  /** The pool's retry counters (kept across reloads). */
  readonly counters: RetryCounters;
  readonly #now: () => number;
  readonly #random: () => number;

  /**
   * Compiles `config` for a pool whose `request_timeout_ms` is
   * `requestTimeoutMs`, configuring `budget` with its figures.
   */
  constructor(
    config: RetriesConfig,
    requestTimeoutMs: number,
    budget: RetryBudget,
    counters: RetryCounters,
    deps: RetryPolicyDeps = {},
  ) {
    this.attempts = config.attempts;
    this.perTryTimeoutMs = config.per_try_timeout_ms ?? null;
    const statuses = config.retry_on.filter((r): r is number => typeof r === "number");
    this.failures = new Set(config.retry_on.filter((r) => typeof r === "string"));
    this.statuses = statuses.length === 0 ? null : new Set(statuses);
    this.reasons = config.retry_on.map(String);
    this.requestTimeoutMs = requestTimeoutMs;
    this.backoffBaseMs = config.backoff_base_ms;
    this.backoffMaxMs = config.backoff_max_ms;
    budget.configure(config.budget_percent, config.min_retries_per_second);
    this.budget = budget;
    this.counters = counters;
    this.#now = deps.now ?? (() => performance.now());
    this.#random = deps.random ?? Math.random;
  }

  /**
   * The plan of one request with `method` over `candidates` backends
   * (`replayable`: its body can be sent again): it counts in the budget
   * until {@link RetryPlan.finish}.
   */
  start(candidates: number, method: string, replayable: boolean): RetryPlan {
    return new PolicyRetries(this, candidates, method, replayable, this.#now, this.#random);
  }

  /** Whether `retry_on` names `reason` (a failure, or a status as text). */
  names(reason: string, outcome: UpstreamOutcome, detail: unknown): boolean {
    if (outcome === "answered" || outcome === "answered_5xx") {
      return this.statuses !== null && this.statuses.has(detail as number);
    }
    return this.failures.has(reason);
  }
}

/** One request under a {@link RetryPolicy}. */
class PolicyRetries implements RetryPlan {
  readonly statuses: ReadonlySet<number> | null;
  readonly #policy: RetryPolicy;
  readonly #candidates: number;
  readonly #method: string;
  readonly #replayable: boolean;
  readonly #deadline: number;
  readonly #now: () => number;
  readonly #random: () => number;
  #retries = 0;
  #retrying = false;

  constructor(
    policy: RetryPolicy,
    candidates: number,
    method: string,
    replayable: boolean,
    now: () => number,
    random: () => number,
  ) {
    this.#policy = policy;
    this.#candidates = candidates;
    this.#method = method;
    this.#replayable = replayable;
    this.#now = now;
    this.#random = random;
    this.#deadline = now() + policy.requestTimeoutMs;
    this.statuses = replayable ? policy.statuses : null;
    policy.budget.requestStarted();
  }

  target(n: number): number {
    return n % this.#candidates;
  }

  attemptTimeoutMs(): number {
    // A streamed body is sent once: the transport's own bound, as without retries.
    if (!this.#replayable) return this.#policy.requestTimeoutMs;
    const left = Math.max(1, Math.ceil(this.#deadline - this.#now()));
    const perTry = this.#policy.perTryTimeoutMs;
    return perTry === null ? left : Math.min(perTry, left);
  }

  waitMs(): number {
    return Math.max(0, this.#deadline - this.#now());
  }

  retry(n: number, outcome: UpstreamOutcome, detail: unknown): number {
    const policy = this.#policy;
    if (!this.#replayable || n >= policy.attempts) return -1;
    const reason = retryReason(outcome, detail);
    if (reason === null || !policy.names(reason, outcome, detail)) return -1;
    if (!maySendAgainByPolicy(outcome, this.#method)) return -1;
    const now = this.#now();
    // A timeout with no time left was the request's deadline, not a per-try bound.
    const left = this.#deadline - now;
    const wait = backoffDelay(
      this.#retries,
      policy.backoffBaseMs,
      policy.backoffMaxMs,
      this.#random,
    );
    if (left < 1 || wait >= left) return -1;
    if (!policy.budget.tryRetry(this.#retrying, now)) {
      policy.counters.budgetExhausted++;
      return -1;
    }
    this.#retrying = true;
    this.#retries++;
    policy.counters.retried(reason);
    return wait;
  }

  finish(): void {
    this.#policy.budget.requestEnded(this.#retrying);
  }
}
