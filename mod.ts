/**
 * Public API of the project's packages.
 *
 * - HTTP/3 codec (sans-IO): frames, SETTINGS, QPACK, message validation.
 * - Proxy: configuration loading, the HTTP/3 server, the proxy application,
 *   routing, load balancing, health checking, metrics.
 * - Payments: the Hono application and its server.
 * - Shared: logging setup, dev certificates, version.
 *
 * @module
 */

export * as h3 from "./proxy/h3/mod.ts";
export * from "./proxy/config/mod.ts";
export { createProxyApp, type ProxyAppDeps } from "./proxy/app.ts";
export { H3Server, type H3ServerOptions } from "./proxy/server/server.ts";
export { H3Connection } from "./proxy/server/connection.ts";
export type { IncomingRequest, OutgoingResponse, RequestHandler } from "./proxy/server/types.ts";
export type { QuicConnection, QuicServerTransport } from "./proxy/quic/transport.ts";
export { Router } from "./proxy/router/router.ts";
export * as balancer from "./proxy/balancer/mod.ts";
export * as health from "./proxy/health/mod.ts";
export { ProxyMetrics } from "./proxy/metrics/metrics.ts";
export * as payments from "./payments/mod.ts";
export { setupLogging, teardownLogging } from "./shared/logging.ts";
export { ensureDevCerts, generateDevCerts } from "./shared/certs/generate.ts";
export { PRODUCT, VERSION } from "./shared/version.ts";
