/**
 * Types of the health package, shaped like the YAML config (snake_case keys).
 *
 * @module
 */

/** The two health states of a backend. */
export type HealthStatus = "healthy" | "unhealthy";

/** `health_check` of a backend. Times are milliseconds. */
export interface HealthCheckConfig {
  /** Probe path, default `/health`. */
  readonly path: string;
  /** Time between probe starts, default 5000. */
  readonly interval: number;
  /** Maximum wait for a probe response, default 1000. */
  readonly timeout_ms: number;
  /** Consecutive failures that mark a healthy backend unhealthy, default 3. */
  readonly failure_threshold: number;
  /** Consecutive successes (after the cooldown) that mark it healthy again, default 2. */
  readonly success_threshold: number;
  /** Time after becoming unhealthy during which probe results do not count toward recovery, default 5000. */
  readonly cooldown_ms: number;
  /** HTTP method of the probe, default `GET`. */
  readonly method: string;
}

/** The spec's defaults for every {@link HealthCheckConfig} field. */
export const HEALTH_CHECK_DEFAULTS: Readonly<HealthCheckConfig> = Object.freeze({
  path: "/health",
  interval: 5000,
  timeout_ms: 1000,
  failure_threshold: 3,
  success_threshold: 2,
  cooldown_ms: 5000,
  method: "GET",
});

/** Fills the missing fields of a (possibly partial) `health_check` with the spec's defaults. */
export function withHealthDefaults(hc: Partial<HealthCheckConfig> = {}): HealthCheckConfig {
  const out: Record<string, unknown> = { ...HEALTH_CHECK_DEFAULTS };
  for (const [k, v] of Object.entries(hc)) if (v !== undefined) out[k] = v;
  return out as unknown as HealthCheckConfig;
}

/** A health state change. */
export interface HealthTransition {
  /** State before. */
  readonly from: HealthStatus;
  /** State after. */
  readonly to: HealthStatus;
  /** Clock time of the probe result that caused it (ms). */
  readonly at: number;
  /** For `to: "unhealthy"`: the reason of the last failure. */
  readonly reason?: string;
}

/** A clock in milliseconds. */
export interface Clock {
  /** Current time in ms (any epoch, but monotonic is best). */
  now(): number;
}

/** The default clock: `performance.now()`, monotonic. */
export const MONOTONIC_CLOCK: Clock = Object.freeze({ now: () => performance.now() });
