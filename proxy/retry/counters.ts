/**
 * A pool's retries for `/metrics`: how many were made, by reason
 * (`spooky_pool_retries_total{pool,reason}`), and how many the retry
 * budget refused (`spooky_pool_retry_budget_denied_total{pool}`). Kept
 * in the pool's `PoolState`, so a reload does not reset them; counted only
 * when a retry is decided, never per request.
 *
 * @example
 * ```ts
 * const counters = new RetryCounters();
 * counters.retried("503");
 * counters.snapshot(["connect", "503"]); // [["connect", 0], ["503", 1]]
 * ```
 *
 * @module
 */

/** See the module documentation. */
export class RetryCounters {
  readonly #byReason = new Map<string, number>();
  /** Retries the budget refused. */
  budgetExhausted = 0;

  /** Counts a retry made for `reason` (a `retry_on` token, or a status as text). */
  retried(reason: string): void {
    this.#byReason.set(reason, (this.#byReason.get(reason) ?? 0) + 1);
  }

  /** Retries by reason: every one of `reasons` (shown at 0), then any other counted. */
  snapshot(reasons: readonly string[]): Array<[string, number]> {
    const out: Array<[string, number]> = reasons.map((r) => [r, this.#byReason.get(r) ?? 0]);
    for (const [r, n] of this.#byReason) if (!reasons.includes(r)) out.push([r, n]);
    return out;
  }
}
