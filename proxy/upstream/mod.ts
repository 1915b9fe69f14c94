/**
 * The upstream side: how an exchange reaches a backend (an
 * {@link UpstreamTransport}, in this thread or on worker threads), what
 * each way it ends means (`outcome.ts`), and the header translation
 * between HTTP/3 and HTTP/2. Forwarding a routed request to a pool's
 * backends is a phase of the request, `phases/forward.ts`.
 *
 * @example
 * ```ts
 * import { createUpstreamTransport } from "./mod.ts";
 *
 * const { transport, workers } = createUpstreamTransport("auto");
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
} from "./transport.ts";
export { createHttp2Transport, type Http2TransportOptions } from "./http2_transport.ts";
export { autoWorkers, createUpstreamTransport, type UpstreamClient } from "./create_transport.ts";
export type { HealthReport } from "./outcome.ts";
export {
  type ClientContext,
  downstreamResponseFields,
  upstreamRequestHeaderList,
} from "./headers.ts";
// Types of other packages that this package's signatures use.
export type { BackendRef } from "../balancer/mod.ts";
export type { RequestHead } from "../h3/mod.ts";
export type { PassiveFailureKind } from "../health/mod.ts";
export type {
  COUNTER_NAMES,
  CounterName,
  CounterSet,
  ProxyMetrics,
  QuicSocketView,
  STATUS_CLASSES,
  StatusClass,
} from "../metrics/mod.ts";
export type { PeerAddr } from "../quic/mod.ts";
export type { IncomingRequest, OutgoingResponse, RequestFailure } from "../server/mod.ts";
