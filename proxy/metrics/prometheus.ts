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
import {
  type QuicSocketView,
  type TcpListenerView,
  UPSTREAM_CLOSE_REASONS,
  type UpstreamConnectionsView,
} from "./views.ts";
import type { WebSocketPoolView } from "./websockets.ts";

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
    /** Attempts in flight (tracked when the pool has a gate: `least-request`, `latency`, `max_inflight`). */
    inflight?: number;
    /** Requests refused 503 `overloaded` for the backend, by limit. */
    overloaded?: { max_inflight: number; max_pending: number };
    /** For an address that names a host: its lookups and the addresses in use. */
    dns?: { success: number; failure: number; endpoints: readonly string[] };
  }>;
  /** Request latency histogram, in seconds. */
  latency: HistogramSnapshot;
  /** Open HTTP/3 connections. */
  activeConnections: number;
  /** Open HTTP/3 request streams. */
  activeStreams: number;
  /** Request field sections that referenced the QPACK dynamic table (absent: 0). */
  qpackDynamicSections?: number;
  /** Connections turned away by the admission limits, by reason. */
  rejectedConnections?: ReadonlyMap<string, number>;
  /** The QUIC socket: held handshakes and the kernel's UDP receive-buffer figures. */
  quic?: QuicSocketView;
  /** The TCP listeners (TCP fallback, admin), each with its connection counters. */
  tcpListeners?: ReadonlyArray<TcpListenerView>;
  /** Each pool's retries by reason, retries its budget refused, and requests waiting for a slot. */
  pools?: ReadonlyArray<{
    pool: string;
    retries: ReadonlyArray<readonly [reason: string, count: number]>;
    budgetExhausted: number;
    pending: number;
  }>;
  /** Each pool's WebSockets: open now, and attempts by outcome. */
  websockets?: ReadonlyArray<WebSocketPoolView>;
  /** The upstream transports' connections, per backend address and protocol. */
  upstreamConnections?: ReadonlyArray<UpstreamConnectionsView>;
  /** Each configured rate limit's allowed and limited requests (`rate_limits`). */
  rateLimits?: ReadonlyArray<{ limit: string; allowed: number; limited: number }>;
  /** Decisions of each pool's `auth`, by credential and result. */
  auth?: ReadonlyArray<{ pool: string; method: string; result: string; count: number }>;
  /** Decisions of the admin API's access control, by role and result. */
  admin?: ReadonlyArray<{ role: string; result: string; count: number }>;
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
 * series per backend, labelled `backend` and `pool`; one whose name starts
 * with `spooky_pool_` has one series per pool (and reason), labelled `pool`
 * alone; no other family carries those labels, but `auth_decisions_total`,
 * which is per pool (a pool's `auth`) and carries `pool` alone. A family
 * whose name starts with `spooky_upstream_` has one series per backend
 * address and protocol (`h2`, `http1`), labelled `address` and `protocol`:
 * connections are pooled by address, which backends of several pools may
 * share. Request counters are also labelled by status class
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
  backend_inflight: {
    type: "gauge",
    help:
      "Attempts in flight to the backend, from sending until the response is over (0 unless its pool uses least-request, latency or max_inflight).",
  },
  backend_overloaded_total: {
    type: "counter",
    help:
      "Requests refused 503 overloaded for the backend, by limit: max_inflight (it and the other candidates stayed full) or max_pending (the pool's queue was full).",
  },
  backend_lb_picks_total: { type: "counter", help: "Times the load balancer chose the backend." },
  backend_dns_lookups_total: {
    type: "counter",
    help: "Lookups of the host name of the backend's address, by result (0 for an IP address).",
  },
  backend_addresses: {
    type: "gauge",
    help: "Addresses the backend is reached at: what its host name resolves to now, else 1.",
  },
  request_duration_seconds: {
    type: "histogram",
    help: "Time from a request to its response headers.",
  },
  active_connections: { type: "gauge", help: "Open QUIC connections." },
  active_streams: { type: "gauge", help: "Requests being served." },
  qpack_dynamic_sections_total: {
    type: "counter",
    help:
      "HTTP/3 request field sections that referenced the QPACK dynamic table (limits.qpack_max_table_capacity).",
  },
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
  quic_memory_steps_total: {
    type: "counter",
    help:
      "Garbage collections and memory releases after churns of closed QUIC connections, by step: request (a regular collection asked for), collect (a full one, when a request freed nothing), settle (full collection and malloc_trim once a churn has passed: at once after a flood, after 30 s of quiet after served connections), linger (the same once the churn's handshakes are gone).",
  },
  quic_memory_step_seconds_total: {
    type: "counter",
    help: "Main-thread time spent in those steps, by step.",
  },
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
  auth_decisions_total: {
    type: "counter",
    help:
      "Requests a pool's auth let through or refused (401, 403), by pool, credential and result.",
  },
  admin_requests_total: {
    type: "counter",
    help: "Admin API calls let through or refused (401, 403), by the caller's role and result.",
  },
  pool_retries_total: {
    type: "counter",
    help:
      "Requests the pool sent again, by reason (connect, refused, reset, timeout, or the backend's status).",
  },
  pool_retry_budget_denied_total: {
    type: "counter",
    help: "Retries the pool's retry budget refused (the failure was answered instead).",
  },
  pool_pending_requests: {
    type: "gauge",
    help: "Requests of the pool waiting for a backend slot (max_pending).",
  },
  pool_websockets_open: {
    type: "gauge",
    help:
      "WebSockets of the pool open now (HTTP/3 extended CONNECT and the TCP fallback's upgrades).",
  },
  pool_websocket_sessions_total: {
    type: "counter",
    help:
      "WebSocket attempts of the pool by how they ended: closed, client_gone, backend_error, idle_timeout, max_duration, shutdown (open tunnels); refused, failed, disabled (none opened).",
  },
  upstream_connections_opened_total: {
    type: "counter",
    help: "Connections to the backend address established (TCP connect and TLS handshake done).",
  },
  upstream_connect_failures_total: {
    type: "counter",
    help:
      "Connection attempts to the backend address that failed (refused, timed out, TLS or ALPN).",
  },
  upstream_connection_reuses_total: {
    type: "counter",
    help: "Requests sent on a connection to the backend address that had carried one before.",
  },
  upstream_connections_closed_total: {
    type: "counter",
    help:
      "Connections to the backend address closed, by reason: idle, peer_closed, protocol_error, timeout, cancelled, retired, shutdown, error.",
  },
  upstream_connections_open: {
    type: "gauge",
    help: "Connections to the backend address open now.",
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
  perBackend("backend_inflight", (b) => b.inflight ?? 0);
  name = family("backend_overloaded_total");
  for (const b of view.backends) {
    for (const limit of ["max_inflight", "max_pending"] as const) {
      out.push(`${name}{${labels(b)},limit="${limit}"} ${num(b.overloaded?.[limit] ?? 0)}`);
    }
  }
  perBackend("backend_lb_picks_total", (b) => b.picks);
  name = family("backend_dns_lookups_total");
  for (const b of view.backends) {
    out.push(`${name}{${labels(b)},result="success"} ${num(b.dns?.success ?? 0)}`);
    out.push(`${name}{${labels(b)},result="failure"} ${num(b.dns?.failure ?? 0)}`);
  }
  perBackend("backend_addresses", (b) => b.dns?.endpoints.length ?? 1);

  const h = family("request_duration_seconds");
  for (const [le, count] of view.latency.buckets) {
    out.push(`${h}_bucket{le="${num(le)}"} ${num(count)}`);
  }
  out.push(`${h}_sum ${num(view.latency.sum)}`, `${h}_count ${num(view.latency.count)}`);

  out.push(`${family("active_connections")} ${num(view.activeConnections)}`);
  out.push(`${family("active_streams")} ${num(view.activeStreams)}`);
  out.push(`${family("qpack_dynamic_sections_total")} ${num(view.qpackDynamicSections ?? 0)}`);
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
    const steps = quic.memorySteps;
    if (steps !== undefined) {
      name = family("quic_memory_steps_total");
      for (const [step, { count }] of steps) out.push(`${name}{step="${step}"} ${num(count)}`);
      name = family("quic_memory_step_seconds_total");
      for (const [step, { ms }] of steps) out.push(`${name}{step="${step}"} ${num(ms / 1000)}`);
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
  if (view.auth !== undefined && view.auth.length > 0) {
    name = family("auth_decisions_total");
    for (const a of view.auth) {
      const labels = `pool="${escapeLabel(a.pool)}",method="${a.method}",result="${a.result}"`;
      out.push(`${name}{${labels}} ${num(a.count)}`);
    }
  }
  if (view.admin !== undefined) {
    name = family("admin_requests_total");
    for (const a of view.admin) {
      out.push(`${name}{role="${a.role}",result="${a.result}"} ${num(a.count)}`);
    }
  }
  renderPools(view.pools ?? [], family, out);
  renderWebSockets(view.websockets ?? [], family, out);
  renderUpstreamConnections(view.upstreamConnections ?? [], family, out);
  out.push(`${family("uptime_seconds")} ${num(view.uptimeSeconds)}`);
  out.push(`${family("build_info")}{version="${escapeLabel(view.version)}"} 1`);
  out.push(`${family("process_resident_memory_bytes")} ${num(view.residentBytes)}`);
  out.push(`${family("process_start_time_seconds")} ${num(view.startTimeSeconds)}`);
  return out.join("\n") + "\n";
}

/** The `spooky_pool_*` families: one series per pool (and reason), labelled `pool`. */
function renderPools(
  pools: NonNullable<MetricsView["pools"]>,
  family: (name: string) => string,
  out: string[],
): void {
  const pool = (p: { pool: string }) => `pool="${escapeLabel(p.pool)}"`;
  let name = family("pool_retries_total");
  for (const p of pools) {
    for (const [reason, count] of p.retries) {
      out.push(`${name}{${pool(p)},reason="${escapeLabel(reason)}"} ${num(count)}`);
    }
  }
  name = family("pool_retry_budget_denied_total");
  for (const p of pools) out.push(`${name}{${pool(p)}} ${num(p.budgetExhausted)}`);
  name = family("pool_pending_requests");
  for (const p of pools) out.push(`${name}{${pool(p)}} ${num(p.pending)}`);
}

function renderWebSockets(
  pools: NonNullable<MetricsView["websockets"]>,
  family: (name: string) => string,
  out: string[],
): void {
  if (pools.length === 0) return;
  let name = family("pool_websockets_open");
  for (const p of pools) out.push(`${name}{pool="${escapeLabel(p.pool)}"} ${num(p.open)}`);
  name = family("pool_websocket_sessions_total");
  for (const p of pools) {
    for (const [outcome, count] of p.outcomes) {
      out.push(`${name}{pool="${escapeLabel(p.pool)}",outcome="${outcome}"} ${num(count)}`);
    }
  }
}

/** The `spooky_upstream_*` families: one series per backend address and protocol. */
function renderUpstreamConnections(
  conns: ReadonlyArray<UpstreamConnectionsView>,
  family: (name: string) => string,
  out: string[],
): void {
  const labels = (c: UpstreamConnectionsView) =>
    `address="${escapeLabel(c.address)}",protocol="${c.protocol}"`;
  const each = (base: string, value: (c: UpstreamConnectionsView) => number) => {
    const name = family(base);
    for (const c of conns) out.push(`${name}{${labels(c)}} ${num(value(c))}`);
  };
  each("upstream_connections_opened_total", (c) => c.opened);
  each("upstream_connect_failures_total", (c) => c.connectFailures);
  each("upstream_connection_reuses_total", (c) => c.reused);
  const name = family("upstream_connections_closed_total");
  for (const c of conns) {
    for (const reason of UPSTREAM_CLOSE_REASONS) {
      out.push(`${name}{${labels(c)},reason="${reason}"} ${num(c.closed[reason])}`);
    }
  }
  each("upstream_connections_open", (c) => c.open);
}
