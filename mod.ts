/**
 * Public API of the project's packages.
 *
 * - HTTP/3 codec (sans-IO): frames, SETTINGS, QPACK, message validation.
 * - Proxy: configuration loading, the HTTP/3 server, the proxy application,
 *   routing, load balancing, health checking, metrics.
 * - Payments: the Hono application and its server.
 * - Shared: logging setup, dev certificates, version.
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

export * as h3 from "./proxy/h3/mod.ts";
export type { RequestHead } from "./proxy/h3/mod.ts";
export * from "./proxy/config/mod.ts";
export {
  type BackendHealth,
  createProxyApp,
  type HealthReport,
  PoolState,
  type ProxyAppDeps,
} from "./proxy/mod.ts";
export * as upstream from "./proxy/upstream/mod.ts";
export {
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
export * as balancer from "./proxy/balancer/mod.ts";
export type { BackendRef } from "./proxy/balancer/mod.ts";
export * as health from "./proxy/health/mod.ts";
export {
  COUNTER_NAMES,
  type CounterName,
  CounterSet,
  ProxyMetrics,
  type QuicSocketView,
  STATUS_CLASSES,
  type StatusClass,
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
