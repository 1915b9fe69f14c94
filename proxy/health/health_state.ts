/**
 * The pure health state machine of one backend (spec: "States and
 * transitions"). No I/O, no timers: the caller passes the time.
 *
 * @module
 */

import {
  HEALTH_CHECK_DEFAULTS,
  type HealthCheckConfig,
  type HealthStatus,
  type HealthTransition,
} from "./types.ts";

/** Thresholds of {@link HealthState}; missing fields take the spec's defaults (3, 2, 5000 ms). */
export type HealthStateOptions = Partial<
  Pick<HealthCheckConfig, "failure_threshold" | "success_threshold" | "cooldown_ms">
>;

/**
 * Health of one backend, driven by probe results.
 *
 * | state | event | condition | next |
 * |---|---|---|---|
 * | healthy | success | - | healthy (failure count reset) |
 * | healthy | failure | `failure_threshold` consecutive failures | unhealthy (time remembered) |
 * | unhealthy | any result | less than `cooldown_ms` since becoming unhealthy | unhealthy (does not count toward recovery) |
 * | unhealthy | success | after the cooldown, `success_threshold` consecutive successes | healthy |
 * | unhealthy | failure | - | unhealthy (success count reset) |
 *
 * The initial state is healthy: a new backend takes traffic at once, and its
 * first probe runs at once too. Times are milliseconds from any clock; a
 * clock that goes backwards only extends the cooldown.
 *
 * @example
 * ```ts
 * const s = new HealthState({ failure_threshold: 1, success_threshold: 1, cooldown_ms: 1000 });
 * s.recordFailure(0, "status 503"); // { from: "healthy", to: "unhealthy", at: 0, reason: "status 503" }
 * s.recordSuccess(500);             // null: still cooling down
 * s.recordSuccess(1000);            // { from: "unhealthy", to: "healthy", at: 1000 }
 * ```
 */
export class HealthState {
  readonly #failureThreshold: number;
  readonly #successThreshold: number;
  readonly #cooldownMs: number;
  #status: HealthStatus = "healthy";
  #failures = 0;
  #successes = 0;
  #unhealthySince: number | null = null;

  /**
   * Creates the state machine in state healthy.
   *
   * @throws {RangeError} when a threshold is not an integer >= 1 or the cooldown is negative.
   */
  constructor(opts: HealthStateOptions = {}) {
    this.#failureThreshold = opts.failure_threshold ?? HEALTH_CHECK_DEFAULTS.failure_threshold;
    this.#successThreshold = opts.success_threshold ?? HEALTH_CHECK_DEFAULTS.success_threshold;
    this.#cooldownMs = opts.cooldown_ms ?? HEALTH_CHECK_DEFAULTS.cooldown_ms;
    for (
      const [name, v] of [
        ["failure_threshold", this.#failureThreshold],
        ["success_threshold", this.#successThreshold],
      ] as const
    ) {
      if (!Number.isInteger(v) || v < 1) throw new RangeError(`${name} must be an integer >= 1`);
    }
    if (!(this.#cooldownMs >= 0) || !Number.isFinite(this.#cooldownMs)) {
      throw new RangeError("cooldown_ms must be a finite number >= 0");
    }
  }

  /** Current state. */
  get status(): HealthStatus {
    return this.#status;
  }

  /** Consecutive failures counted while healthy. */
  get consecutiveFailures(): number {
    return this.#failures;
  }

  /** Consecutive successes counted toward recovery (only after the cooldown). */
  get consecutiveSuccesses(): number {
    return this.#successes;
  }

  /** When the backend became unhealthy, or `null` while healthy. */
  get unhealthySince(): number | null {
    return this.#unhealthySince;
  }

  /** Whether `now` is inside the cooldown that follows becoming unhealthy. */
  inCooldown(now: number): boolean {
    return this.#unhealthySince !== null && now - this.#unhealthySince < this.#cooldownMs;
  }

  /** Records a successful probe; returns the transition it caused, if any. */
  recordSuccess(now: number): HealthTransition | null {
    if (this.#status === "healthy") {
      this.#failures = 0;
      return null;
    }
    if (this.inCooldown(now)) return null;
    this.#successes++;
    if (this.#successes < this.#successThreshold) return null;
    this.#status = "healthy";
    this.#successes = 0;
    this.#failures = 0;
    this.#unhealthySince = null;
    return { from: "unhealthy", to: "healthy", at: now };
  }

  /** Records a failed probe; returns the transition it caused, if any. */
  recordFailure(now: number, reason?: string): HealthTransition | null {
    if (this.#status === "unhealthy") {
      this.#successes = 0;
      return null;
    }
    this.#failures++;
    if (this.#failures < this.#failureThreshold) return null;
    this.#status = "unhealthy";
    this.#failures = 0;
    this.#successes = 0;
    this.#unhealthySince = now;
    return reason === undefined
      ? { from: "healthy", to: "unhealthy", at: now }
      : { from: "healthy", to: "unhealthy", at: now, reason };
  }
}
