/**
 * Types of the health package, shaped like the YAML config (snake_case keys).
 *
 * @module
 */

import { type HealthCheckConfig, HealthCheckConfigSchema } from "../config/schema.ts";

/** The two health states of a backend. */
export type HealthStatus = "healthy" | "unhealthy";

/** `health_check` of a backend, every field set (the config schema's type). */
export type { HealthCheckConfig };

/**
 * The defaults of every {@link HealthCheckConfig} field, taken from the
 * config schema (one source for the YAML and for checkers built in code).
 */
export const HEALTH_CHECK_DEFAULTS: Readonly<HealthCheckConfig> = Object.freeze(
  HealthCheckConfigSchema.parse({}),
);

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
