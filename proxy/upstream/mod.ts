/**
 * The upstream side: how an exchange reaches a backend (an
 * {@link UpstreamTransport} on the proxy's own HTTP/2 client), what each way
 * it ends means (`outcome.ts`), and the header translation between HTTP/3
 * and HTTP/2. Forwarding a routed request to a pool's backends is a phase
 * of the request, `phases/forward.ts`.
 *
 * @example
 * ```ts
 * import { createH2Transport } from "./mod.ts";
 *
 * const transport = createH2Transport();
 * const res = await transport.exchange({
 *   address: "127.0.0.1:8080", method: "GET", path: "/", authority: "example.com",
 *   headers: [], body: null, timeoutMs: 30_000,
 * });
 * await transport.close();
 * ```
 *
 * @module
 */

export {
  type Trailers,
  UpstreamError,
  type UpstreamFailureKind,
  type UpstreamRequest,
  type UpstreamResponse,
  type UpstreamTransport,
  WebSocketUnsupported,
} from "./transport.ts";
export { createH2Transport, type H2TransportOptions } from "./h2_transport.ts";
export { createH1Transport, H1_IDLE_MS, type H1TransportOptions } from "./h1_transport.ts";
export {
  type AlpnProbe,
  alpnProbe,
  createDispatchTransport,
  type WireProtocol,
} from "./dispatch_transport.ts";
export { type BackendTls, backendTlsOf, type Connector } from "./backend_connect.ts";
export {
  type BackendTlsSetting,
  type ClientCertificate,
  clientCertificate,
  type ClientCertificateCheck,
} from "./client_certificate.ts";
export type { HealthReport } from "./outcome.ts";
export {
  type ClientContext,
  downstreamResponseFields,
  upstreamRequestHeaderList,
} from "./headers.ts";
// Types of other packages that this package's signatures use.
export type { ConnectionCredit, H2ConnectionOptions } from "../h2/mod.ts";
export type { BackendRef } from "../balancer/mod.ts";
export type { RequestHead } from "../http/mod.ts";
export type { PassiveFailureKind } from "../health/mod.ts";
export type {
  COUNTER_NAMES,
  CounterName,
  CounterSet,
  Histogram,
  HistogramSnapshot,
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
} from "../metrics/mod.ts";
export type { PeerAddr } from "../quic/mod.ts";
export type { IncomingRequest, OutgoingResponse, RequestFailure } from "../server/mod.ts";
