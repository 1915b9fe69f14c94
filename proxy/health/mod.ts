/**
 * Backend health: the pure state machine, active HTTP probes and passive
 * outlier detection.
 *
 * @example
 * ```ts
 * import { HealthState } from "./mod.ts";
 *
 * const state = new HealthState({ failure_threshold: 2 });
 * state.recordFailure(performance.now(), "timeout");
 * state.recordFailure(performance.now(), "timeout"); // { to: "unhealthy", ... }
 * ```
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
export { backendsWithProbeHost } from "./probe_host.ts";
// Types of other packages that this package's signatures use.
export type {
  BackendConfig,
  BackendProtocol,
  BackendTlsConfig,
  HeaderRulesConfig,
  HeadersConfig,
  LoadBalancingConfig,
  UpstreamConfig,
  WebSocketConfig,
} from "../config/mod.ts";
export type {
  AdminRole,
  AdminTokenConfig,
  ApiKeysAuthConfig,
  AuthConfig,
  JwtAlgorithm,
  JwtAuthConfig,
  RetriesConfig,
} from "../config/types.ts";
export type { BackendTlsSetting, ClientCertificate } from "../upstream/client_certificate.ts";
export {
  type BackendWithHealth,
  HealthChecker,
  type HealthCheckerOptions,
  type HealthTransitionEvent,
  type ProbeExchange,
  type ProbeExchangeRequest,
  type ProbeFetch,
  type ProbeInit,
} from "./health_checker.ts";
export { type PassiveFailureKind, PassiveHealth, type PassiveHealthOptions } from "./passive.ts";
