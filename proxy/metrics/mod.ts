/**
 * The proxy's metrics: request counters per outcome (globally and per
 * backend), gauges, a latency histogram, and their Prometheus text form.
 *
 * @example
 * ```ts
 * import { ProxyMetrics, renderPrometheus } from "./mod.ts";
 *
 * const metrics = new ProxyMetrics();
 * metrics.record("b1", 200);
 * metrics.latency.observe(0.012);
 * ```
 *
 * @module
 */

export { Histogram, type HistogramSnapshot, LATENCY_BUCKETS_S } from "./histogram.ts";
export {
  COUNTER_NAMES,
  type CounterName,
  CounterSet,
  ProxyMetrics,
  STATUS_CLASSES,
  type StatusClass,
  statusClass,
} from "./metrics.ts";
export {
  METRIC_FAMILIES,
  type MetricsView,
  PROMETHEUS_CONTENT_TYPE,
  renderPrometheus,
} from "./prometheus.ts";
export type { QuicSocketView, TcpListenerView } from "./views.ts";
export {
  UPSTREAM_CLOSE_REASONS,
  type UpstreamCloseReason,
  type UpstreamConnectionsView,
} from "./views.ts";
export {
  WEBSOCKET_OUTCOMES,
  WebSocketCounters,
  type WebSocketOutcome,
  type WebSocketPoolView,
} from "./websockets.ts";
