/**
 * Public API of the project's packages, each symbol exported once.
 *
 * - Proxy: configuration loading, the HTTP/3 server, the proxy application,
 *   the upstream transport's types, routing, metrics.
 * - Payments (`payments`): the Hono application and its server.
 * - Shared: logging setup, dev certificates, version.
 *
 * The proxy's inner packages have their own entry points, with the rest of
 * their surface: `proxy/h3/mod.ts` (the sans-IO HTTP/3 codec and QPACK),
 * `proxy/upstream/mod.ts`, `proxy/balancer/mod.ts`, `proxy/health/mod.ts`.
 *
 * @example
 * ```ts
 * import { loadConfig, setupLogging } from "./mod.ts";
 *
 * await setupLogging({ service: "spooky", level: "info" });
 * const loaded = await loadConfig("examples/proxy.yaml");
 * ```
 *
 * @module
 */

export type { RequestHead } from "./proxy/http/mod.ts";
export * from "./proxy/config/mod.ts";
// Types the signatures of the exports below use.
export type {
  AttemptGate,
  AttemptObserver,
  AttemptResult,
  AuthCounters,
  AuthDecisionCount,
  AuthMethod,
  AuthResult,
  BackendLoad,
  BackendRef,
  BackendTlsSetting,
  LoadReader,
  LoadTable,
  OverloadLimit,
  PoolAuthCounts,
  PoolGate,
  RequestFields,
  RetryBudget,
  RetryCounters,
  RetryPlan,
  UPSTREAM_CLOSE_REASONS,
  UpstreamCloseReason,
  UpstreamConnectionsView,
  UpstreamOutcome,
} from "./proxy/mod.ts";
export {
  type BackendHealth,
  createProxyApp,
  type HealthReport,
  type PassiveFailureKind,
  PoolState,
  type ProxyAppDeps,
} from "./proxy/mod.ts";
export {
  type Trailers,
  UpstreamError,
  type UpstreamFailureKind,
  type UpstreamRequest,
  type UpstreamResponse,
  type UpstreamTransport,
} from "./proxy/upstream/mod.ts";
export {
  type ConnectionHooks,
  type ConnectionInfo,
  type ConnectionOptions,
  H3Connection,
  H3Server,
  type H3ServerOptions,
  type IdleReclaimOptions,
  type IncomingRequest,
  type ListenerKind,
  type OutgoingResponse,
  RequestEnd,
  type RequestEndKind,
  type RequestFailure,
  type RequestHandler,
  type RequestRecord,
  type StreamContext,
} from "./proxy/server/mod.ts";
export type {
  BidiStream,
  CloseInfo,
  PeerAddr,
  QuicConnection,
  QuicServerTransport,
  ReceiveStream,
  SendStream,
} from "./proxy/quic/transport.ts";
export { checkRequestTarget, Router } from "./proxy/router/mod.ts";
export {
  GcraLimiter,
  type GcraOptions,
  type LimitCounts,
  type RateDecision,
  RateLimitCounters,
  type RateLimiter,
} from "./proxy/rate_limit/mod.ts";
export {
  COUNTER_NAMES,
  type CounterName,
  CounterSet,
  type Histogram,
  type HistogramSnapshot,
  ProxyMetrics,
  type QuicSocketView,
  STATUS_CLASSES,
  type StatusClass,
  type TcpListenerView,
  WEBSOCKET_OUTCOMES,
  WebSocketCounters,
  type WebSocketOutcome,
  type WebSocketPoolView,
} from "./proxy/metrics/mod.ts";
export * as payments from "./payments/mod.ts";
export { type LoggingOptions, setupLogging, teardownLogging } from "./shared/logging.ts";
export {
  type DevCertFiles,
  type DevCerts,
  ensureDevCerts,
  type EnsureDevCertsOptions,
  generateDevCerts,
} from "./shared/certs/mod.ts";
export { PRODUCT, VERSION } from "./shared/version.ts";
