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
export {
  type AccessLogConfig,
  type AdminConfig,
  type BackendConfig,
  type BackendProtocol,
  type BackendTlsConfig,
  type Config,
  DEFAULT_HASH_KEY,
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
  type TlsConfig,
  type UpstreamConfig,
} from "./schema.ts";
