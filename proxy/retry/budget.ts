/**
 * The retry budget of one pool, Envoy-style: retries in flight may be at
 * most `budget_percent` of the pool's requests in flight on their first
 * attempt, and at least `min_retries_per_second` retries a second are
 * allowed whatever the percentage (a quiet pool, where 20 % of one request
 * is none, can still retry). Under load the backends thus see at most
 * (1 + `budget_percent`/100) times the clients' requests, however many of
 * them fail: a slow or failing backend is not buried under retries.
 *
 * A request counts from its start to its end: on its first attempt until
 * it is granted a retry, then as a retry until it ends (backoff included).
 * The budget is kept in the pool's `PoolState`, so a reload keeps its
 * counts (requests of the old generation end on it) and applies new
 * figures with {@link RetryBudget.configure}.
 *
 * @example
 * ```ts
 * const budget = new RetryBudget();
 * budget.configure(20, 3);
 * budget.requestStarted();
 * const granted = budget.tryRetry(false, performance.now()); // true: the floor allows 3 a second
 * budget.requestEnded(granted);
 * ```
 *
 * @module
 */

/** Default `budget_percent`. */
export const DEFAULT_BUDGET_PERCENT = 20;
/** Default `min_retries_per_second`. */
export const DEFAULT_MIN_RETRIES_PER_SECOND = 3;

/** See the module documentation. */
export class RetryBudget {
  #first = 0;
  #retrying = 0;
  #percent = DEFAULT_BUDGET_PERCENT;
  /** Times (ms) of the last `min_retries_per_second` retries granted, a ring. */
  #recent = new Float64Array(DEFAULT_MIN_RETRIES_PER_SECOND);
  #next = 0;
  #filled = 0;

  /** Sets `budget_percent` (0-100) and `min_retries_per_second` (an integer ≥ 0). */
  configure(percent: number, minPerSecond: number): void {
    this.#percent = percent;
    if (minPerSecond !== this.#recent.length) {
      this.#recent = new Float64Array(minPerSecond);
      this.#next = 0;
      this.#filled = 0;
    }
  }

  /** Requests in flight on their first attempt. */
  get active(): number {
    return this.#first;
  }

  /** Requests in flight on a retry. */
  get retrying(): number {
    return this.#retrying;
  }

  /** A request of the pool starts (its first attempt). */
  requestStarted(): void {
    this.#first++;
  }

  /** A request ends; `retrying`: whether it had been granted a retry. */
  requestEnded(retrying: boolean): void {
    if (retrying) this.#retrying--;
    else this.#first--;
  }

  /**
   * Asks for a retry at `now` (ms) for a request on its first attempt
   * (`retrying` false) or already on a retry; `true`: granted, and the
   * request counts as a retry from now on.
   */
  tryRetry(retrying: boolean, now: number): boolean {
    const retries = retrying ? this.#retrying : this.#retrying + 1;
    const first = retrying ? this.#first : this.#first - 1;
    if (retries * 100 > this.#percent * first && !this.#floorAllows(now)) return false;
    this.#record(now);
    if (!retrying) {
      this.#first--;
      this.#retrying++;
    }
    return true;
  }

  /** Whether fewer than `min_retries_per_second` retries were granted in the last second. */
  #floorAllows(now: number): boolean {
    const size = this.#recent.length;
    if (size === 0) return false;
    return this.#filled < size || this.#recent[this.#next] <= now - 1000;
  }

  #record(now: number): void {
    const size = this.#recent.length;
    if (size === 0) return;
    this.#recent[this.#next] = now;
    this.#next = (this.#next + 1) % size;
    if (this.#filled < size) this.#filled++;
  }
}
