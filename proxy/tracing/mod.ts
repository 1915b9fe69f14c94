/**
 * Traces of the proxy's requests through Deno's built-in OpenTelemetry
 * (`OTEL_DENO=true`): a SERVER span per request on every listener, a
 * CLIENT span per upstream attempt, W3C trace context to the backends, the
 * client's `traceparent` honoured only from `trusted_proxies`. Off, the
 * request path pays at most a null check: {@link REQUEST_TRACING} is
 * `null` (see `docs/operations.md`, "Tracing").
 *
 * @example
 * ```ts
 * import { REQUEST_TRACING } from "./mod.ts";
 *
 * REQUEST_TRACING; // null unless the process runs with OTEL_DENO=true
 * ```
 *
 * @module
 */

export { REQUEST_TRACING, type RequestTracing } from "./request_tracing.ts";
export { OtelRequestTracing } from "./otel_request_tracing.ts";
export { singleField, TRACEPARENT, TRACESTATE, withTraceContext } from "./trace_fields.ts";
export type {
  IncomingRequest,
  OutgoingResponse,
  PeerAddr,
  RequestFailure,
  RequestHandler,
  RequestHead,
} from "../server/mod.ts";
export type {
  BackendTlsSetting,
  ClientCertificate,
  Trailers,
  UPSTREAM_CLOSE_REASONS,
  UpstreamCloseReason,
  UpstreamConnectionsView,
  UpstreamRequest,
  UpstreamResponse,
  UpstreamTransport,
} from "../upstream/mod.ts";
export type { BackendRef } from "../balancer/types.ts";
