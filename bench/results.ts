/**
 * What `bench/run.ts` measures, as stored in `docs/benchmarks.json` and
 * rendered by `bench/report.ts` and `bench/chart.ts`.
 *
 * @module
 */

import type { ServerKind } from "./servers.ts";

/** Median throughput and CPU cost of one server at one connection count. */
export interface LoadRow {
  /** the server's label ("floor", "floor-worker", "floor-h2", "floor-h1", "spooky", "caddy", ...) */
  server: string;
  kind: ServerKind;
  conns: number;
  /** requests per h3load run */
  requests: number;
  rounds: number;
  /** median req/s */
  rps: number;
  /** median server CPU µs per request: utime + stime of /proc/<pid>/stat over the run */
  cpuUsPerReq: number;
  rpsAll: number[];
  cpuAll: number[];
  /**
   * Median CPU µs per request by thread group, from /proc/<pid>/task/<tid>/stat:
   * `main` is the process's first thread (Deno's JS thread); the others are
   * grouped by thread name (`/proc/.../comm`, trailing numbers dropped);
   * `(exited)` is CPU of threads that ended during the run.
   */
  threads: Record<string, number>;
  /** runs where some request did not get a 2xx */
  failedRuns: number;
}

/** Latency of one server (ms), medians over rounds. */
export interface LatencyResult {
  server: string;
  kind: ServerKind;
  /** background load (req/s, open loop, 4 connections); 0 = none */
  bgRate: number;
  rounds: number;
  /** sequential requests on one more connection */
  n: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  p99All: number[];
  /** the open-loop background requests (NaN without load) */
  bgP50: number;
  bgP99: number;
  bgP99All: number[];
  bgSent: number;
  bgOk: number;
  errors: number;
}

/** One large transfer. */
export interface StreamResult {
  server: string;
  direction: "download" | "upload";
  bytes: number;
  seconds: number;
  mbitPerS: number;
  rssBeforeKiB: number;
  rssPeakKiB: number;
  ok: boolean;
  detail: string;
}

/** Memory of idle connections. */
export interface IdleResult {
  server: string;
  opened: number;
  rssBeforeKiB: number;
  rssAfterKiB: number;
  kibPerConn: number;
  rssAfterCloseKiB: number;
}

/** WebSocket echo round trips through one server over one transport (ms), medians over rounds. */
export interface WebSocketResult {
  /** "spooky" or "caddy" */
  server: string;
  /** `h3`: RFC 9220 over HTTP/3; `tcp`: HTTP/1.1 `Upgrade` over TLS (spooky's TCP fallback) */
  transport: "h3" | "tcp";
  rounds: number;
  /** round trips measured, all rounds */
  n: number;
  p50: number;
  p99: number;
  max: number;
  errors: number;
}

/** Everything one run measured. */
export interface BenchResults {
  quick: boolean;
  machine: {
    date: string;
    nproc: number;
    cpu: string;
    memGiB: number;
    kernel: string;
    deno: string;
    caddy: string;
    gtlsclient: string;
    loadAvg: string;
  };
  settings: {
    rounds: number;
    requests: number;
    latencyRequests: number;
    bgRate: number;
    streamBytes: number;
    idleConns: number;
  };
  /** labels of the servers, in the order they ran */
  servers: string[];
  load: LoadRow[];
  latency: LatencyResult[];
  streams: StreamResult[];
  idle: IdleResult[];
  /** The WebSocket echo row (absent in runs before it, or with `--no-websocket`). */
  websocket?: WebSocketResult[];
}
