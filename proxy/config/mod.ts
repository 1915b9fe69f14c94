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
  type LoadResult,
  parseConfigText,
  type ParseOptions,
} from "./load.ts";
export {
  type AdminConfig,
  type BackendConfig,
  type Config,
  ConfigSchema,
  DEFAULT_HASH_KEY,
  type HashKey,
  type HealthCheckConfig,
  type LimitsConfig,
  type ListenConfig,
  type LoadBalancingConfig,
  type LogConfig,
  parseHashKey,
  parseHostPort,
  type RouteConfig,
  type StandardLogLevel,
  type TlsConfig,
  toStandardLogLevel,
  type UpstreamConfig,
} from "./schema.ts";
