/**
 * Prometheus text exposition (format 0.0.4) of the proxy's metrics: the
 * spec's counters with a common prefix and a status-class label, the same per
 * backend, health and weight gauges, load-balancer picks, a request latency
 * histogram, active connections and streams, and process figures. Every
 * family is listed in {@link METRIC_FAMILIES} and documented in docs/operations.md.
 *
 * @module
 */

import { type CounterSet, STATUS_CLASSES, type StatusClass } from "./metrics.ts";
import { REJECT_REASONS } from "../quic/transport.ts";
import type { HistogramSnapshot } from "./histogram.ts";
import type { QuicSocketView, TcpListenerView } from "./views.ts";

/** Everything the exposition shows, gathered by the caller. */
export interface MetricsView {
  /** Proxy-wide request counters. */
  global: CounterSet;
  /** One entry per configured backend. */
  backends: Array<{
    id: string;
    pool: string;
    counters: CounterSet;
    healthy: boolean;
    enabled: boolean;
    weight: number;
    picks: number;
  }>;
  /** Request latency histogram, in seconds. */
  latency: HistogramSnapshot;
  /** Open HTTP/3 connections. */
  activeConnections: number;
  /** Open HTTP/3 request streams. */
  activeStreams: number;
  /** Connections turned away by the admission limits, by reason. */
  rejectedConnections?: ReadonlyMap<string, number>;
  /** The QUIC socket: held handshakes and the kernel's UDP receive-buffer figures. */
  quic?: QuicSocketView;
  /** The TCP listeners (TCP fallback, admin), each with its connection counters. */
  tcpListeners?: ReadonlyArray<TcpListenerView>;
  /** Each configured rate limit's allowed and limited requests (`rate_limits`). */
  rateLimits?: ReadonlyArray<{ limit: string; allowed: number; limited: number }>;
  /** Product version, the `version` label of `build_info`. */
  version: string;
  /** Seconds since the process started. */
  uptimeSeconds: number;
  /** Process start, seconds since the epoch. */
  startTimeSeconds: number;
  /** Resident memory in bytes. */
  residentBytes: number;
}

/** Content type of the text exposition format. */
export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/**
 * The families, in the order they are rendered, with their help texts. Names
 * follow one rule: a family whose name starts with `spooky_backend_` has one
 * series per backend, labelled `backend` and `pool`; no other family carries
 * those labels. Request counters are also labelled by status class
 * (`code="2xx"` …). The spec's proxy-wide `backend_timeouts` and
 * `backend_errors` are the sums of the per-backend families (every timeout and
 * error has a backend).
 */
export const METRIC_FAMILIES: Readonly<Record<string, { type: string; help: string }>> = {
  requests_total: { type: "counter", help: "Requests answered, by status class of the response." },
  requests_success_total: { type: "counter", help: "Requests completed with a 2xx response." },
  requests_failure_total: {
    type: "counter",
    help: "Requests that failed or returned an error response.",
  },
  backend_requests_total: {
    type: "counter",
    help: "Requests sent to the backend, by status class of the response.",
  },
  backend_requests_success_total: {
    type: "counter",
    help: "Requests to the backend completed with a 2xx response.",
  },
  backend_requests_failure_total: {
    type: "counter",
    help: "Requests to the backend that failed or returned an error response.",
  },
  backend_timeouts_total: {
    type: "counter",
    help: "Requests that timed out waiting for the backend.",
  },
  backend_errors_total: {
    type: "counter",
    help: "Connection or communication errors with the backend.",
  },
  backend_healthy: { type: "gauge", help: "1 when the backend passes its health checks." },
  backend_enabled: { type: "gauge", help: "1 unless the backend was disabled by the admin API." },
  backend_weight: { type: "gauge", help: "Current load-balancing weight of the backend." },
  backend_lb_picks_total: { type: "counter", help: "Times the load balancer chose the backend." },
  request_duration_seconds: {
    type: "histogram",
    help: "Time from a request to its response headers.",
  },
  active_connections: { type: "gauge", help: "Open QUIC connections." },
  active_streams: { type: "gauge", help: "Requests being served." },
  connections_rejected_total: {
    type: "counter",
    help: "Connections turned away by the admission limits, by reason.",
  },
  quic_handshakes: { type: "gauge", help: "Unfinished QUIC handshakes held." },
  quic_receive_buffer_bytes: {
    type: "gauge",
    help: "Receive buffer of the QUIC socket (raised at startup, lowered while Initials are shed).",
  },
  udp_receive_buffer_errors_total: {
    type: "counter",
    help: "UDP datagrams the host dropped at a full socket receive buffer (all sockets).",
  },
  quic_socket_drops_total: { type: "counter", help: "Datagrams the QUIC socket dropped." },
  tcp_connections_open: { type: "gauge", help: "Open connections of a TCP listener." },
  tcp_connections_rejected_total: {
    type: "counter",
    help:
      "TCP connections closed at once, not taken, or shed for a newcomer, by listener and reason.",
  },
  tcp_connections_timeouts_total: {
    type: "counter",
    help: "TCP connections closed by a timeout, by listener and reason.",
  },
  rate_limit_decisions_total: {
    type: "counter",
    help: "Requests a rate limit let through (allowed) or refused with 429 (limited), by limit.",
  },
  uptime_seconds: { type: "gauge", help: "Seconds since the proxy started." },
  build_info: { type: "gauge", help: "Build information; the value is always 1." },
};

/** Process families, named as Prometheus client libraries name them (no prefix). */
const PROCESS_FAMILIES: Readonly<Record<string, { type: string; help: string }>> = {
  process_resident_memory_bytes: { type: "gauge", help: "Resident memory size in bytes." },
  process_start_time_seconds: {
    type: "gauge",
    help: "Start time of the process since the Unix epoch in seconds.",
  },
};

/** Classes always shown (with 0), so a rate over a class exists before its first request. */
const SHOWN_CLASSES: readonly StatusClass[] = ["2xx", "3xx", "4xx", "5xx"];

function escapeLabel(v: string): string {
  return v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
}

function num(v: number | bigint): string {
  if (typeof v === "bigint") return v.toString();
  if (v === Infinity) return "+Inf";
  if (v === -Infinity) return "-Inf";
  if (Number.isNaN(v)) return "NaN";
  return String(v);
}

/** The status classes of a counter set to render: 2xx-5xx always, others when counted. */
function classesOf(set: CounterSet): StatusClass[] {
  return STATUS_CLASSES.filter((c) => SHOWN_CLASSES.includes(c) || set.getClass(c) > 0n);
}

/**
 * Renders the exposition text.
 *
 * @example
 * ```ts
 * declare const view: MetricsView;
 * const text = renderPrometheus(view); // "# HELP spooky_requests_total ..."
 * ```
 */
export function renderPrometheus(view: MetricsView, prefix = "spooky_"): string {
  const out: string[] = [];
  const family = (name: string) => {
    const f = METRIC_FAMILIES[name] ?? PROCESS_FAMILIES[name];
    const full = name in METRIC_FAMILIES ? `${prefix}${name}` : name;
    out.push(`# HELP ${full} ${f.help}`, `# TYPE ${full} ${f.type}`);
    return full;
  };
  const g = view.global;
  let name = family("requests_total");
  for (const c of classesOf(g)) out.push(`${name}{code="${c}"} ${num(g.getClass(c))}`);
  name = family("requests_success_total");
  out.push(`${name} ${num(g.get("requests_success"))}`);
  name = family("requests_failure_total");
  out.push(`${name} ${num(g.get("requests_failure"))}`);

  type Backend = MetricsView["backends"][number];
  const labels = (b: Backend) => `backend="${escapeLabel(b.id)}",pool="${escapeLabel(b.pool)}"`;
  const perBackend = (base: string, value: (b: Backend) => number | bigint) => {
    const full = family(base);
    for (const b of view.backends) out.push(`${full}{${labels(b)}} ${num(value(b))}`);
  };
  name = family("backend_requests_total");
  for (const b of view.backends) {
    for (const c of classesOf(b.counters)) {
      out.push(`${name}{${labels(b)},code="${c}"} ${num(b.counters.getClass(c))}`);
    }
  }
  perBackend("backend_requests_success_total", (b) => b.counters.get("requests_success"));
  perBackend("backend_requests_failure_total", (b) => b.counters.get("requests_failure"));
  perBackend("backend_timeouts_total", (b) => b.counters.get("backend_timeouts"));
  perBackend("backend_errors_total", (b) => b.counters.get("backend_errors"));
  perBackend("backend_healthy", (b) => b.healthy ? 1 : 0);
  perBackend("backend_enabled", (b) => b.enabled ? 1 : 0);
  perBackend("backend_weight", (b) => b.weight);
  perBackend("backend_lb_picks_total", (b) => b.picks);

  const h = family("request_duration_seconds");
  for (const [le, count] of view.latency.buckets) {
    out.push(`${h}_bucket{le="${num(le)}"} ${num(count)}`);
  }
  out.push(`${h}_sum ${num(view.latency.sum)}`, `${h}_count ${num(view.latency.count)}`);

  out.push(`${family("active_connections")} ${num(view.activeConnections)}`);
  out.push(`${family("active_streams")} ${num(view.activeStreams)}`);
  const rejected = family("connections_rejected_total");
  for (const reason of REJECT_REASONS) {
    out.push(`${rejected}{reason="${reason}"} ${num(view.rejectedConnections?.get(reason) ?? 0)}`);
  }
  const quic = view.quic;
  if (quic) {
    out.push(`${family("quic_handshakes")} ${num(quic.handshakes)}`);
    const optional = [
      ["quic_receive_buffer_bytes", quic.receiveBufferBytes],
      ["udp_receive_buffer_errors_total", quic.rcvbufErrors],
      ["quic_socket_drops_total", quic.socketDrops],
    ] as const;
    for (const [name, value] of optional) {
      if (value !== undefined) out.push(`${family(name)} ${num(value)}`);
    }
  }
  const tcp = view.tcpListeners ?? [];
  const tcpLabel = (l: TcpListenerView) => `listener="${escapeLabel(l.listener)}"`;
  name = family("tcp_connections_open");
  for (const l of tcp) out.push(`${name}{${tcpLabel(l)}} ${num(l.open)}`);
  name = family("tcp_connections_rejected_total");
  for (const l of tcp) {
    out.push(`${name}{${tcpLabel(l)},reason="max_connections"} ${num(l.refused)}`);
    out.push(`${name}{${tcpLabel(l)},reason="accept_failed"} ${num(l.acceptErrors)}`);
    out.push(`${name}{${tcpLabel(l)},reason="shed"} ${num(l.shed)}`);
    if (l.notRelayed !== undefined) {
      out.push(`${name}{${tcpLabel(l)},reason="not_relayed"} ${num(l.notRelayed)}`);
    }
  }
  name = family("tcp_connections_timeouts_total");
  for (const l of tcp) {
    out.push(`${name}{${tcpLabel(l)},reason="header"} ${num(l.headerTimeouts)}`);
    out.push(`${name}{${tcpLabel(l)},reason="idle"} ${num(l.idleTimeouts)}`);
  }
  name = family("rate_limit_decisions_total");
  for (const r of view.rateLimits ?? []) {
    out.push(`${name}{limit="${escapeLabel(r.limit)}",decision="allowed"} ${num(r.allowed)}`);
    out.push(`${name}{limit="${escapeLabel(r.limit)}",decision="limited"} ${num(r.limited)}`);
  }
  out.push(`${family("uptime_seconds")} ${num(view.uptimeSeconds)}`);
  out.push(`${family("build_info")}{version="${escapeLabel(view.version)}"} 1`);
  out.push(`${family("process_resident_memory_bytes")} ${num(view.residentBytes)}`);
  out.push(`${family("process_start_time_seconds")} ${num(view.startTimeSeconds)}`);
  return out.join("\n") + "\n";
}
