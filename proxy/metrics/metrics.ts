/**
 * The spec's in-memory counters (`requests_total`, `requests_success`,
 * `requests_failure`, `backend_timeouts`, `backend_errors`), kept globally and
 * per backend as unsigned 64-bit values that only increase, plus gauges of
 * active connections and streams.
 *
 * @module
 */

import type { QuicSocketView, TcpListenerView } from "./views.ts";
import { Histogram } from "./histogram.ts";
import { WebSocketCounters } from "./websockets.ts";

/** Names of the spec's counters, in a fixed order. */
export const COUNTER_NAMES = [
  "requests_total",
  "requests_success",
  "requests_failure",
  "backend_timeouts",
  "backend_errors",
] as const;

/** One of {@link COUNTER_NAMES}. */
export type CounterName = typeof COUNTER_NAMES[number];

const INDEX: Record<CounterName, number> = {
  requests_total: 0,
  requests_success: 1,
  requests_failure: 2,
  backend_timeouts: 3,
  backend_errors: 4,
};

/**
 * The status classes requests are counted by (`code="2xx"` …): the class of
 * the final status sent to the client. `1xx` is never a final status but is
 * kept so every status 100-599 has a class.
 */
export const STATUS_CLASSES = ["1xx", "2xx", "3xx", "4xx", "5xx"] as const;

/** One of {@link STATUS_CLASSES}. */
export type StatusClass = typeof STATUS_CLASSES[number];

/**
 * The class of an HTTP status (`503` → `"5xx"`). A status outside 100-599
 * (which the proxy never sends) counts as `5xx`.
 */
export function statusClass(status: number): StatusClass {
  return STATUS_CLASSES[classIndex(status)];
}

/** The index in {@link STATUS_CLASSES} of a status's class (out of range: `5xx`). */
function classIndex(status: number): number {
  const i = Math.floor(status / 100) - 1;
  return i >= 0 && i < STATUS_CLASSES.length ? i : STATUS_CLASSES.length - 1;
}

/** A set of the five counters (exact integers up to 2^53), and requests by status class. */
export class CounterSet {
  // Float64 slots, not BigUint64: `+= 1n` allocates a BigInt on every
  // request. A double counts exactly up to 2^53 (centuries at 10^6 req/s).
  readonly #values = new Float64Array(COUNTER_NAMES.length);
  readonly #classes = new Float64Array(STATUS_CLASSES.length);

  /**
   * Creates the set with every counter at `start` (0 unless a test starts
   * near 2^53 to check the counting stays exact there).
   *
   * @throws {RangeError} if `start` is not an integer in 0..2^53.
   */
  constructor(start = 0) {
    if (!Number.isInteger(start) || start < 0 || start > 2 ** 53) {
      throw new RangeError(`bad counter start ${start}`);
    }
    this.#values.fill(start);
    this.#classes.fill(start);
  }

  /** Adds one to a counter. */
  inc(name: CounterName): void {
    this.#values[INDEX[name]]++;
  }

  /** Adds one to the requests of a status's class (see {@link statusClass}). */
  incStatus(status: number): void {
    this.#classes[classIndex(status)]++;
  }

  /** Requests counted in one status class. */
  getClass(cls: StatusClass): bigint {
    return BigInt(this.#classes[STATUS_CLASSES.indexOf(cls)]);
  }

  /** The current value. */
  get(name: CounterName): bigint {
    return BigInt(this.#values[INDEX[name]]);
  }

  /** All values by name. */
  snapshot(): Record<CounterName, bigint> {
    const out = {} as Record<CounterName, bigint>;
    for (const n of COUNTER_NAMES) out[n] = BigInt(this.#values[INDEX[n]]);
    return out;
  }
}

/**
 * The proxy's metrics.
 *
 * @example
 * ```ts
 * const m = new ProxyMetrics();
 * m.record("b1", 200);
 * m.global.get("requests_success"); // 1n
 * ```
 */
export class ProxyMetrics {
  /** Totals over all requests. */
  readonly global = new CounterSet();
  readonly #backends = new Map<string, CounterSet>();
  /** Open QUIC connections. */
  activeConnections = 0;
  /** Requests being served. */
  activeStreams = 0;
  /** Request field sections that referenced the QPACK dynamic table. */
  qpackDynamicSections = 0;
  /** Connections turned away by the admission limits, by reason (`handshake_timeout`, `per_address`, …). */
  readonly rejectedConnections: Map<string, number> = new Map();
  /** Time from request to response headers, in seconds. */
  readonly latency: Histogram = new Histogram();
  /** WebSockets per pool: open now, and attempts by outcome. */
  readonly websockets: WebSocketCounters = new WebSocketCounters();
  readonly #picks = new Map<string, number>();

  /**
   * The TCP listeners' connection counters, read at each scrape: main.ts
   * registers one reader per listener (`tcp_fallback`, `admin`).
   */
  readonly tcpListeners: Map<string, () => Omit<TcpListenerView, "listener">> = new Map();

  /** The QUIC socket's figures, read at each scrape (main.ts sets the reader). */
  quicSocket?: () => QuicSocketView;

  /** Counts a connection turned away by the admission limits. */
  recordRejected(reason: string): void {
    this.rejectedConnections.set(reason, (this.rejectedConnections.get(reason) ?? 0) + 1);
  }

  /** Counts a load-balancer pick of a backend. */
  recordPick(id: string): void {
    this.#picks.set(id, (this.#picks.get(id) ?? 0) + 1);
  }

  /** Load-balancer picks per backend. */
  picks(): ReadonlyMap<string, number> {
    return this.#picks;
  }

  /** The counters of one backend (created on first use). */
  backend(id: string): CounterSet {
    let set = this.#backends.get(id);
    if (!set) {
      set = new CounterSet();
      this.#backends.set(id, set);
    }
    return set;
  }

  /** Every backend's counters. */
  backends(): ReadonlyMap<string, CounterSet> {
    return this.#backends;
  }

  /**
   * Records a finished request: its status (counted in its status class too),
   * the backend that served it (if any) and whether the backend timed out or
   * failed.
   */
  record(backendId: string | null, status: number, cause?: "timeout" | "error"): void {
    count(this.global, status, cause);
    if (backendId !== null) count(this.backend(backendId), status, cause);
  }
}

function count(s: CounterSet, status: number, cause: "timeout" | "error" | undefined): void {
  s.inc("requests_total");
  s.incStatus(status);
  // A WebSocket the TCP fallback switched (101) succeeded as a 2xx does.
  const ok = (status >= 200 && status < 300) || status === 101;
  s.inc(ok ? "requests_success" : "requests_failure");
  if (cause === "timeout") s.inc("backend_timeouts");
  else if (cause === "error") s.inc("backend_errors");
}
