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
export type {
  AdminToken,
  ApiKeySet,
  ClientCertificate,
  ConfigSecrets,
  JwtChecks,
  JwtClaims,
  JwtKeys,
} from "./config/mod.ts";
export type { BackendTlsSetting } from "./upstream/mod.ts";
export type {
  AuthCounters,
  AuthDecisionCount,
  AuthMethod,
  AuthResult,
  PoolAuthCounts,
} from "./auth/mod.ts";
export type { PassiveFailureKind, ProbeFetch, ProbeInit } from "./health/mod.ts";
export type { AttemptGate, OverloadLimit, PoolGate } from "./circuit/mod.ts";
export type { RetryBudget, RetryCounters, RetryPlan } from "./retry/mod.ts";
export type { RequestFields } from "./router/mod.ts";
export type {
  AttemptObserver,
  AttemptResult,
  BackendLoad,
  BackendRef,
  LoadReader,
  LoadTable,
} from "./balancer/mod.ts";
export type { UpstreamOutcome } from "./upstream/outcome.ts";
export type {
  BackendResolver,
  BackendResolverOptions,
  DnsLookup,
  FamilyAnswer,
  LookupAnswer,
  LookupFailure,
  LookupOptions,
  NamedAddress,
  NameStats,
  ResolvedName,
} from "./dns/mod.ts";
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
  UPSTREAM_CLOSE_REASONS,
  UpstreamCloseReason,
  UpstreamConnectionsView,
  WEBSOCKET_OUTCOMES,
  WebSocketCounters,
  WebSocketOutcome,
  WebSocketPoolView,
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
