/**
 * Prometheus text exposition (format 0.0.4) of the proxy's metrics: the
 * spec's counters with a common prefix, per-backend counters, health and
 * weight gauges, load-balancer picks, a request latency histogram, active
 * connections and streams, and process figures.
 *
 * @module
 */

import type { CounterName, CounterSet } from "./metrics.ts";
import type { HistogramSnapshot } from "./histogram.ts";

/** Everything the exposition shows, gathered by the caller. */
export interface MetricsView {
  global: CounterSet;
  backends: Array<{
    id: string;
    pool: string;
    counters: CounterSet;
    healthy: boolean;
    enabled: boolean;
    weight: number;
    picks: number;
  }>;
  latency: HistogramSnapshot;
  activeConnections: number;
  activeStreams: number;
  version: string;
  uptimeSeconds: number;
  startTimeSeconds: number;
  residentBytes: number;
}

/** Content type of the text exposition format. */
export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

const HELP: Record<CounterName, string> = {
  requests_total: "Requests received and processed.",
  requests_success: "Requests completed with a 2xx response.",
  requests_failure: "Requests that failed or returned an error response.",
  backend_timeouts: "Requests that timed out waiting for a backend.",
  backend_errors: "Backend connection or communication errors.",
};

/** `requests_total` stays; the others gain the `_total` suffix of counters. */
function counterName(prefix: string, name: CounterName): string {
  return name.endsWith("_total") ? `${prefix}${name}` : `${prefix}${name}_total`;
}

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

/**
 * Renders the exposition text.
 *
 * @example
 * ```ts
 * const text = renderPrometheus(view); // "# HELP spooky_requests_total ..."
 * ```
 */
export function renderPrometheus(view: MetricsView, prefix = "spooky_"): string {
  const out: string[] = [];
  const family = (name: string, type: string, help: string) => {
    out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
  };
  const names = Object.keys(HELP) as CounterName[];
  for (const n of names) {
    const name = counterName(prefix, n);
    family(name, "counter", HELP[n]);
    out.push(`${name} ${num(view.global.get(n))}`);
  }
  for (const n of names) {
    const name = counterName(`${prefix}backend_`, n);
    family(name, "counter", `Per backend: ${HELP[n].toLowerCase()}`);
    for (const b of view.backends) {
      out.push(
        `${name}{backend="${escapeLabel(b.id)}",pool="${escapeLabel(b.pool)}"} ${
          num(b.counters.get(n))
        }`,
      );
    }
  }
  const labels = (b: MetricsView["backends"][number]) =>
    `backend="${escapeLabel(b.id)}",pool="${escapeLabel(b.pool)}"`;
  family(`${prefix}backend_healthy`, "gauge", "1 when the backend passes its health checks.");
  for (const b of view.backends) {
    out.push(`${prefix}backend_healthy{${labels(b)}} ${b.healthy ? 1 : 0}`);
  }
  family(
    `${prefix}backend_enabled`,
    "gauge",
    "1 unless the backend was disabled by the admin API.",
  );
  for (const b of view.backends) {
    out.push(`${prefix}backend_enabled{${labels(b)}} ${b.enabled ? 1 : 0}`);
  }
  family(`${prefix}backend_weight`, "gauge", "Current load-balancing weight.");
  for (const b of view.backends) out.push(`${prefix}backend_weight{${labels(b)}} ${num(b.weight)}`);
  family(`${prefix}lb_picks_total`, "counter", "Times the load balancer chose the backend.");
  for (const b of view.backends) out.push(`${prefix}lb_picks_total{${labels(b)}} ${num(b.picks)}`);

  const h = `${prefix}request_duration_seconds`;
  family(h, "histogram", "Time from a request to its response headers.");
  for (const [le, count] of view.latency.buckets) {
    out.push(`${h}_bucket{le="${num(le)}"} ${num(count)}`);
  }
  out.push(`${h}_sum ${num(view.latency.sum)}`, `${h}_count ${num(view.latency.count)}`);

  family(`${prefix}active_connections`, "gauge", "Open QUIC connections.");
  out.push(`${prefix}active_connections ${num(view.activeConnections)}`);
  family(`${prefix}active_streams`, "gauge", "Requests being served.");
  out.push(`${prefix}active_streams ${num(view.activeStreams)}`);
  family(`${prefix}uptime_seconds`, "gauge", "Seconds since the proxy started.");
  out.push(`${prefix}uptime_seconds ${num(view.uptimeSeconds)}`);
  family(`${prefix}build_info`, "gauge", "Build information.");
  out.push(`${prefix}build_info{version="${escapeLabel(view.version)}"} 1`);
  family("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
  out.push(`process_resident_memory_bytes ${num(view.residentBytes)}`);
  family("process_start_time_seconds", "gauge", "Start time of the process since the Unix epoch.");
  out.push(`process_start_time_seconds ${num(view.startTimeSeconds)}`);
  return out.join("\n") + "\n";
}
