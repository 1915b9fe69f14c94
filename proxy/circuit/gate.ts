/**
 * Circuit breaking in Envoy's sense, per pool: every attempt (retries
 * included) takes a slot of its backend, at most `max_inflight` per
 * backend; an attempt whose backend is full goes to the next candidate
 * with room; when every candidate is full it waits in the pool's queue,
 * at most `max_pending` requests (first come first served, up to the
 * request's deadline); past that it is refused at once: 503 `overloaded`,
 * never an unbounded queue. (The third breaker, the retry budget, is
 * `retry/budget.ts`.)
 *
 * The gate also keeps the pool's {@link LoadTable} (in flight and response
 * times per backend) that `least-request` and `latency` read, fed from each
 * attempt's end: forward reports to it and knows nothing of the balancers.
 * It lives in the pool's `PoolState`, so a reload keeps the counts
 * (attempts of the old generation end on it) and applies new limits with
 * {@link PoolGate.configure}.
 *
 * A slot is held from sending until the exchange is over, as Envoy counts
 * an active request: at once when the attempt fails or its answer is not
 * the client's ({@link AttemptGate.ended}); for the answer the client gets,
 * when the server layer says the response is finished (the body delivered,
 * cut or failed, or the client gone: {@link AttemptGate.answered} hands the
 * release to the response's `finished`), so a backend streaming long
 * downloads is as full as its downloads say. Each slot is given back
 * exactly once. The response time is taken at the head either way (see
 * `balancer/load.ts`).
 *
 * @example
 * ```ts
 * import type { BackendRef } from "../balancer/mod.ts";
 * declare const candidates: BackendRef[];
 * declare const signal: AbortSignal;
 *
 * const gate = new PoolGate();
 * gate.configure([{ id: "b1", max_inflight: 100 }], 10);
 * const admitted = gate.admit(candidates, 0, signal, 30_000);
 * const at = typeof admitted === "number" ? admitted : await admitted; // -1: 503 overloaded
 * if (at >= 0) {
 *   const release = gate.answered(candidates[at].id, 12, "answered"); // head after 12 ms
 *   release(); // once the response is finished (again: nothing)
 * }
 * ```
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import {
  type AttemptResult,
  type BackendLoad,
  type BackendRef,
  LoadTable,
} from "../balancer/mod.ts";
import { OUTCOMES, type UpstreamOutcome } from "../upstream/outcome.ts";
import { PendingQueue } from "./pending.ts";

const log = getLogger(["proxy", "upstream"]);

/** The limit that refused a request: its backends stayed full, or the pool's queue was full. */
export type OverloadLimit = "max_inflight" | "max_pending";

/** The limits of {@link OverloadLimit}, in the order `/metrics` shows them. */
export const OVERLOAD_LIMITS: readonly OverloadLimit[] = ["max_inflight", "max_pending"];

/** What forward asks of the pool for each attempt. */
export interface AttemptGate {
  /**
   * A slot for an attempt meant for `candidates[from]`: the index of the
   * candidate whose slot it took (that one, or the next with room), a
   * promise of one when it waits in the queue, or -1: refused (answer 503
   * `overloaded`; or the client left while it waited).
   */
  admit(
    candidates: readonly BackendRef[],
    from: number,
    signal: AbortSignal,
    waitMs: number,
  ): number | Promise<number>;
  /**
   * The attempt on backend `id` ended after `ms` (sending to head or
   * failure) in `outcome`, and its exchange is over: the slot is free.
   */
  ended(id: string, ms: number, outcome: UpstreamOutcome): void;
  /**
   * The attempt on backend `id` was answered after `ms` in `outcome` (its
   * response time is recorded now) and the exchange goes on: the slot stays
   * taken until the returned release is called. The release frees it once;
   * calling it again does nothing.
   */
  answered(id: string, ms: number, outcome: UpstreamOutcome): () => void;
}

/** See the module documentation. */
export class PoolGate implements AttemptGate {
  /** In flight and response times per backend (read by the load-aware balancers). */
  readonly table: LoadTable;
  readonly #limits = new Map<string, number>();
  #maxPending = 0;
  readonly #queue = new PendingQueue();
  readonly #refused = new Map<string, Record<OverloadLimit, number>>();

  /** A gate without limits on clock `now` (default `performance.now`). */
  constructor(now?: () => number) {
    this.table = new LoadTable(now);
  }

  /**
   * Applies the pool's configuration: each backend's `max_inflight`
   * (absent: unlimited) and the pool's `max_pending`; backends no longer
   * listed are forgotten once idle.
   */
  configure(
    backends: ReadonlyArray<{ readonly id: string; readonly max_inflight?: number }>,
    maxPending: number,
  ): void {
    this.#limits.clear();
    for (const b of backends) {
      if (b.max_inflight !== undefined) this.#limits.set(b.id, b.max_inflight);
    }
    this.#maxPending = maxPending;
    const ids = new Set(backends.map((b) => b.id));
    this.table.retain(ids);
    for (const id of this.#refused.keys()) if (!ids.has(id)) this.#refused.delete(id);
  }

  /** Requests waiting for a slot. */
  get pending(): number {
    return this.#queue.size;
  }

  /** Attempts in flight on backend `id`. */
  inflight(id: string): number {
    return this.table.peek(id)?.inflight ?? 0;
  }

  /** Requests refused 503 `overloaded` for backend `id`, by limit. */
  refused(id: string): Readonly<Record<OverloadLimit, number>> {
    return this.#refused.get(id) ?? { max_inflight: 0, max_pending: 0 };
  }

  /** See {@link AttemptGate.admit}. */
  admit(
    candidates: readonly BackendRef[],
    from: number,
    signal: AbortSignal,
    waitMs: number,
  ): number | Promise<number> {
    const free = this.#free(candidates, from);
    if (free >= 0) {
      this.table.started(candidates[free].id);
      return free;
    }
    const wanted = candidates[from].id;
    if (this.#queue.size >= this.#maxPending) {
      return this.#refuse(wanted, this.#maxPending === 0 ? "max_inflight" : "max_pending");
    }
    if (signal.aborted) return -1;
    return this.#queue.wait(candidates, signal, waitMs, () => this.#refuse(wanted, "max_inflight"));
  }

  /** See {@link AttemptGate.ended}; a slot freed goes to the longest waiting request that can use it. */
  ended(id: string, ms: number, outcome: UpstreamOutcome): void {
    const load = this.table.of(id);
    this.table.observed(load, ms, resultOf(outcome));
    this.#release(id, load);
  }

  /** See {@link AttemptGate.answered}. */
  answered(id: string, ms: number, outcome: UpstreamOutcome): () => void {
    const load = this.table.of(id);
    this.table.observed(load, ms, resultOf(outcome));
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.#release(id, load);
    };
  }

  /** Frees a slot of backend `id`: it goes to the longest waiting request that can use it. */
  #release(id: string, load: BackendLoad): void {
    this.table.released(load);
    if (this.#queue.size > 0 && this.#hasRoom(id)) {
      this.#queue.handOver(id, () => this.table.started(id));
    }
  }

  /** The first of `candidates` from `from` on (wrapping) with a free slot, or -1. */
  #free(candidates: readonly BackendRef[], from: number): number {
    if (this.#limits.size === 0) return from;
    for (let k = 0; k < candidates.length; k++) {
      const at = (from + k) % candidates.length;
      if (this.#hasRoom(candidates[at].id)) return at;
    }
    return -1;
  }

  #hasRoom(id: string): boolean {
    const limit = this.#limits.get(id);
    return limit === undefined || this.inflight(id) < limit;
  }

  #refuse(id: string, limit: OverloadLimit): -1 {
    let counts = this.#refused.get(id);
    if (counts === undefined) {
      counts = { max_inflight: 0, max_pending: 0 };
      this.#refused.set(id, counts);
    }
    counts[limit]++;
    log.warn("backend {id} overloaded: request refused ({limit}; {pending} waiting)", {
      id,
      limit,
      pending: this.#queue.size,
    });
    return -1;
  }
}

/** What an attempt's outcome tells of its backend's load. */
function resultOf(outcome: UpstreamOutcome): AttemptResult {
  if (outcome === "answered") return "ok";
  return OUTCOMES[outcome].backendFault ? "failed" : "none";
}
