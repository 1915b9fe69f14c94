/**
 * Backend health: the pure state machine, active HTTP probes and passive
 * outlier detection.
 *
 * @module
 */

export {
  type Clock,
  HEALTH_CHECK_DEFAULTS,
  type HealthCheckConfig,
  type HealthStatus,
  type HealthTransition,
  MONOTONIC_CLOCK,
  withHealthDefaults,
} from "./types.ts";
export { HealthState, type HealthStateOptions } from "./health_state.ts";
export {
  type BackendWithHealth,
  HealthChecker,
  type HealthCheckerOptions,
  type HealthTransitionEvent,
  type ProbeFetch,
  type ProbeInit,
} from "./health_checker.ts";
export { type PassiveFailureKind, PassiveHealth, type PassiveHealthOptions } from "./passive.ts";
