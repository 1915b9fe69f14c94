/**
 * The load of a pool's backends as the forwarder observes it: the attempts
 * in flight on each backend and a peak-EWMA of its response time (Finagle's
 * and linkerd's `PeakEwma`). `least-request` and `latency` read it; the
 * forwarder feeds it through {@link AttemptObserver} (every attempt's start
 * and end, retries included) and knows nothing of the balancers.
 *
 * An attempt is in flight from the moment it is sent until the exchange is
 * over: it failed, or it was answered and the answer is done with (a
 * response dropped or sent again at once; the one the client gets, once its
 * body is delivered, cut or abandoned), as Envoy counts an active request.
 * Its response time is observed at the response head (time to first byte,
 * as Finagle's and linkerd's peak-EWMA measure it): a long download makes
 * a backend busy, not slow.
 *
 * The table is kept per pool by `ProxyRuntime` (in the pool's `PoolState`),
 * so a reload or an admin weight change, which rebuild the balancers, keeps
 * what was observed, and the attempts of requests still running on the old
 * generation end on the same counters.
 *
 * @example
 * ```ts
 * const table = new LoadTable();
 * const load = table.started("b1"); // an attempt sent to b1
 * table.observed(load, 12.5, "ok"); // its head came back after 12.5 ms
 * table.released(load); // its body was delivered
 * table.of("b1").inflight; // 0
 * ```
 *
 * @module
 */

/** Time constant of the response-time estimate's decay, in ms (linkerd's default). */
export const LATENCY_DECAY_MS = 10_000;

/**
 * Cost of a backend never measured that already has an attempt in flight
 * (Finagle's penalty): it waits for its first answer before it is asked
 * again, rather than drawing every request while it is unmeasured.
 */
export const UNMEASURED_PENALTY = 1e12;

/**
 * How an attempt ended, as far as its backend's load is concerned: `ok` (a
 * response below 500), `failed` (the backend's fault: unreachable, reset,
 * protocol error, invalid head, timeout, or a 5xx), `none` (says nothing of
 * the backend: the client left, the proxy failed or is shutting down).
 */
export type AttemptResult = "ok" | "failed" | "none";

/** What the forwarder reports of each attempt (every attempt, retries included). */
export interface AttemptObserver {
  /** An attempt is sent to backend `id`; hand what it returns to {@link ended}. */
  started(id: string): BackendLoad;
  /**
   * The attempt `load` came from ended after `ms` (from sending to the
   * head or the failure): {@link LoadTable.observed} and
   * {@link LoadTable.released} at once.
   */
  ended(load: BackendLoad, ms: number, result: AttemptResult): void;
}

/** What a load-aware balancer reads of the pool's backends. */
export interface LoadReader {
  /** The load of backend `id` (created, idle, on first use). */
  of(id: string): BackendLoad;
  /** Monotonic milliseconds, the clock the estimates decay with. */
  now(): number;
}

/**
 * One backend's load: attempts in flight, and the peak-EWMA of its
 * response time. The estimate jumps to a slower observation at once (the
 * peak) and moves toward a faster one with weight `1 - e^(-Δt/τ)`; reading
 * it decays it toward zero with the same time constant, so a backend that
 * was slow is tried again once it has been left alone for a while.
 */
export class BackendLoad {
  /** Attempts sent and not ended. */
  inflight = 0;
  #estimate = 0;
  #stamp = 0;
  #measured = false;
  readonly #decayMs: number;

  /** A backend with nothing observed; `decayMs` is the estimate's time constant τ. */
  constructor(decayMs = LATENCY_DECAY_MS) {
    this.#decayMs = decayMs;
  }

  /** Whether a response time was ever observed. */
  get measured(): boolean {
    return this.#measured;
  }

  /** Records a response time of `ms` observed at `now`. */
  observe(ms: number, now: number): void {
    const rtt = Math.max(0, ms);
    if (!this.#measured) {
      this.#measured = true;
      this.#estimate = rtt;
    } else if (rtt > this.#estimate) {
      this.#estimate = rtt;
    } else {
      const w = Math.exp(-Math.max(0, now - this.#stamp) / this.#decayMs);
      this.#estimate = this.#estimate * w + rtt * (1 - w);
    }
    this.#stamp = now;
  }

  /** Records a failed attempt: as slow as twice the current estimate, and at least its own time. */
  observeFailure(ms: number, now: number): void {
    this.observe(Math.max(ms, 2 * this.estimate(now), 1), now);
  }

  /** The response-time estimate at `now` (ms), decayed since the last update; 0 before any. */
  estimate(now: number): number {
    if (!this.#measured) return 0;
    const w = Math.exp(-Math.max(0, now - this.#stamp) / this.#decayMs);
    this.#estimate *= w;
    this.#stamp = Math.max(this.#stamp, now);
    return this.#estimate;
  }

  /**
   * The latency balancer's cost: the estimate × (in flight + 1). A
   * backend never measured costs 0 while idle (it is tried) and
   * {@link UNMEASURED_PENALTY} once it has an attempt in flight.
   */
  cost(now: number): number {
    if (!this.#measured) return this.inflight === 0 ? 0 : UNMEASURED_PENALTY + this.inflight;
    return this.estimate(now) * (this.inflight + 1);
  }
}

/**
 * The loads of one pool's backends, by id; an {@link AttemptObserver} and a
 * {@link LoadReader}.
 */
export class LoadTable implements AttemptObserver, LoadReader {
  readonly #byId = new Map<string, BackendLoad>();
  readonly #now: () => number;
  readonly #decayMs: number;

  /** A table on clock `now` (default `performance.now`), estimates decaying with `decayMs`. */
  constructor(now: () => number = () => performance.now(), decayMs = LATENCY_DECAY_MS) {
    this.#now = now;
    this.#decayMs = decayMs;
  }

  /** See {@link LoadReader.now}. */
  now(): number {
    return this.#now();
  }

  /** See {@link LoadReader.of}. */
  of(id: string): BackendLoad {
    let load = this.#byId.get(id);
    if (load === undefined) {
      load = new BackendLoad(this.#decayMs);
      this.#byId.set(id, load);
    }
    return load;
  }

  /** The load of `id` if it was ever used, else `undefined` (for `/metrics`). */
  peek(id: string): BackendLoad | undefined {
    return this.#byId.get(id);
  }

  /** See {@link AttemptObserver.started}. */
  started(id: string): BackendLoad {
    const load = this.of(id);
    load.inflight++;
    return load;
  }

  /** See {@link AttemptObserver.ended}. */
  ended(load: BackendLoad, ms: number, result: AttemptResult): void {
    this.observed(load, ms, result);
    this.released(load);
  }

  /** The attempt `load` came from was answered (or failed) after `ms`; it stays in flight. */
  observed(load: BackendLoad, ms: number, result: AttemptResult): void {
    if (result === "ok") load.observe(ms, this.#now());
    else if (result === "failed") load.observeFailure(ms, this.#now());
  }

  /** The exchange of an attempt `load` came from is over: no longer in flight. */
  released(load: BackendLoad): void {
    load.inflight--;
  }

  /** Forgets the backends not in `ids` that have nothing in flight (a reload removed them). */
  retain(ids: ReadonlySet<string>): void {
    for (const [id, load] of this.#byId) {
      if (!ids.has(id) && load.inflight === 0) this.#byId.delete(id);
    }
  }
}
