/**
 * Sending a request again: a pool's `retries` policy (attempts, reasons,
 * per-try timeout, exponential backoff with full jitter, an Envoy-style
 * retry budget) and the default rule of a pool without one, both behind
 * the {@link RetryPlan} the forwarder asks. Whether a request may be sent
 * again at all is `upstream/outcome.ts`'s rule.
 *
 * @example
 * ```ts
 * import { OneRetry, RetryCounters } from "./mod.ts";
 * const plan = new OneRetry(2, "GET", true, 30_000, new RetryCounters());
 * plan.retry(0, "reset", undefined); // 0: once more, at once
 * ```
 *
 * @module
 */

export { backoffDelay, pause } from "./backoff.ts";
export { DEFAULT_BUDGET_PERCENT, DEFAULT_MIN_RETRIES_PER_SECOND, RetryBudget } from "./budget.ts";
export { RetryCounters } from "./counters.ts";
export { OneRetry } from "./one_retry.ts";
export { type RetryPlan, retryReason } from "./plan.ts";
export { RETRY_ON_FAILURES, type RetryOnFailure } from "./retry_on.ts";
export { RetryPolicy, type RetryPolicyDeps } from "./policy.ts";
export type { UpstreamOutcome } from "../upstream/outcome.ts";
