/**
 * The edge proxy: the request handler ({@link createProxyApp}) and the live
 * runtime around it ({@link ProxyRuntime}: routes, balancers, health checks,
 * backend clients, metrics, reloads). The packages below (`h3/`, `server/`,
 * `config/`, `balancer/`, …) each have their own `mod.ts`; `main.ts` wires
 * them to real sockets.
 *
 * @example
 * ```ts
 * import { ProxyRuntime, type RuntimeOptions } from "./mod.ts";
 * import { loadConfig } from "./config/mod.ts";
 * import { USER_AGENT } from "../shared/version.ts";
 * declare const transport: RuntimeOptions["transport"];
 * declare const probeFetch: RuntimeOptions["probeFetch"];
 *
 * const loaded = await loadConfig("examples/proxy.yaml");
 * if (loaded.ok) {
 *   const options = { userAgent: USER_AGENT, transport, probeFetch };
 *   const runtime = new ProxyRuntime(loaded.config, options);
 *   runtime.start();
 * }
 * ```
 *
 * @module
 */

export { type BackendHealth, createProxyApp, PoolState, type ProxyAppDeps } from "./app.ts";
export { type BackendInfo, ProxyRuntime, type RuntimeOptions } from "./runtime.ts";
// Types of the packages below that the signatures above use.
export type * from "./config/types.ts";
export type { PassiveFailureKind, ProbeFetch, ProbeInit } from "./health/mod.ts";
export type {
  COUNTER_NAMES,
  CounterName,
  CounterSet,
  Histogram,
  HistogramSnapshot,
  MetricsView,
  ProxyMetrics,
  QuicSocketView,
  STATUS_CLASSES,
  StatusClass,
  TcpListenerView,
} from "./metrics/mod.ts";
export type {
  LimitCounts,
  RateDecision,
  RateLimitCounters,
  RateLimiter,
} from "./rate_limit/mod.ts";
export type {
  IncomingRequest,
  OutgoingResponse,
  PeerAddr,
  RequestFailure,
  RequestHandler,
  RequestHead,
} from "./server/mod.ts";
export type {
  HealthReport,
  Trailers,
  UpstreamRequest,
  UpstreamResponse,
  UpstreamTransport,
} from "./upstream/mod.ts";
