/**
 * Configuration loading for the proxy: YAML → zod → deeply frozen `Config`.
 *
 * @example
 * ```ts
 * import { formatProblem, loadConfig } from "./mod.ts";
 * const result = await loadConfig("examples/proxy.yaml");
 * ```
 * @module
 */
export {
  type BackendNameWarning,
  type ConfigProblem,
  formatProblem,
  loadConfig,
  type LoadOptions,
  type LoadResult,
  parseConfigText,
  type ParseOptions,
  type TlsPairProblem,
  type TlsPem,
} from "./load.ts";
export type { PemKind } from "./_files.ts";
export { type ConfigSecrets, NO_SECRETS } from "./secrets.ts";
export type {
  AdminRole,
  AdminTokenConfig,
  ApiKeysAuthConfig,
  AuthConfig,
  JwtAlgorithm,
  JwtAuthConfig,
  RetriesConfig,
} from "./types.ts";
// Types of other packages that the signatures above use (what the files hold).
export type { AdminToken } from "../admin/roles.ts";
export type { ApiKeySet, JwtChecks, JwtClaims, JwtKeys } from "../auth/mod.ts";
export type { ClientCertificate } from "../upstream/client_certificate.ts";
export {
  type AccessLogConfig,
  type AdminConfig,
  type AdminReadyConfig,
  type BackendConfig,
  type BackendProtocol,
  type BackendTlsConfig,
  type Config,
  DEFAULT_HASH_KEY,
  type DnsConfig,
  type HeaderRulesConfig,
  type HeadersConfig,
  type HealthCheckConfig,
  type LimitsConfig,
  type ListenConfig,
  type LoadBalancingConfig,
  type LogConfig,
  parseHostPort,
  type PassiveHealthConfig,
  type RateLimitConfig,
  type RouteConfig,
  type RouteHeaderCondition,
  type TlsConfig,
  type UpstreamConfig,
  type WebSocketConfig,
} from "./schema.ts";
