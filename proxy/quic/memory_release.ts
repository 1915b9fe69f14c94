/**
 * Giving memory back after a churn of connections (a spoofed-Initial flood,
 * mostly). Two things hold it, measured on Deno 2.9.6 (6,000 spoofed Initials
 * at 2,000/s: RSS from 69 to 326 MiB, still there 15 s later):
 *
 * 1. Each accepted connection's native state is freed only when V8 collects
 *    its JavaScript object (`full_gc.ts`), and a flood makes no JavaScript
 *    garbage that would bring a collection: hence a full collection after
 *    every `gcAfterClosed` closed connections.
 * 2. What the runtime frees stays in glibc's malloc arenas (one per thread
 *    that allocated): after the flood, 244 MB held by the allocator, 9.6 MB
 *    of it in use, the V8 heap at 9 MB, and a full collection freed nothing
 *    more. `malloc_trim(0)` hands those free pages back: 266 → 69 MiB.
 *
 * So {@link ChurnCollector} runs a full collection during the churn (at most
 * once a second) and, once the churn has passed (fewer than a tenth of
 * `gcAfterClosed` closes in a second), one more collection and
 * `malloc_trim(0)`; then, when handshakes were still held at the end of the
 * churn (they pin much of the rest), the same again once they have met their
 * deadline (`drained()`, or `lingerMs` at the latest). Trimming a few hundred MB takes
 * 50-500 ms (on its own thread), so it runs twice per churn, never during it.
 *
 * Connections that were served count too, though they leave JavaScript
 * garbage that brings V8's own collections: those come too late for their
 * native state. Tried and measured: with only unserved closes counted, a
 * burst of 4,000 served connections cost 22% less CPU per connection but
 * held 387 MiB at its end (320 at the peak with the collections), and the
 * frame fuzz (7,500 short-lived connections in 12 s) grew the proxy by 180
 * MiB instead of staying flat.
 *
 * @module
 */

import { openLibc } from "./libc.ts";

/**
 * `malloc_trim(0)` (glibc): returns free pages of every malloc arena to the
 * kernel, on a thread of its own (the QUIC thread goes on; each arena is
 * locked only while it is trimmed). `undefined` where the C library has
 * none (musl, not Linux, no FFI).
 *
 * @example
 * ```ts
 * await mallocTrim()?.();
 * ```
 */
export function mallocTrim(): (() => Promise<void>) | undefined {
  const c = openLibc();
  const trim = "libc" in c ? c.libc.malloc_trim : null;
  if (!trim) return undefined;
  return async () => void await trim(0n);
}

/** Options of {@link ChurnCollector}. */
export interface ChurnCollectorOptions {
  /** A full garbage collection (`fullGc()`); none: nothing is collected. */
  collectGarbage?: () => void;
  /**
   * Hands freed memory back to the kernel (`mallocTrim()`), perhaps in the
   * background; it reports its own failure (a rejection is dropped here).
   * None: not done.
   */
  releaseMemory?: () => Promise<void> | void;
  /** Closed connections between collections during a churn. */
  gcAfterClosed: number;
  /** From the end of a churn to the second release at the latest: the longest a handshake is held (ms). */
  lingerMs: number;
  /** Whether what the churn left (held handshakes) is gone: the second release is due. */
  drained?: () => boolean;
  /** Monotonic clock in ms. */
  now: () => number;
  /** How often a churn is checked for having passed, and the shortest gap between collections (ms; default 1000). */
  periodMs?: number;
  /** Told after each step, with what it was and how long it took (logs). */
  onStep?(step: Step, ms: number): void;
}

/** A step of {@link ChurnCollector}: during a churn, at its end, and `lingerMs` after it. */
export type Step = "collect" | "settle" | "linger";

/**
 * Counts closed connections and collects after a churn of them (see the
 * module). Its one timer runs only while a churn is under way.
 *
 * @example
 * ```ts
 * import { fullGc } from "./full_gc.ts";
 * import { mallocTrim } from "./memory_release.ts";
 *
 * const collector = new ChurnCollector({
 *   collectGarbage: fullGc(),
 *   releaseMemory: mallocTrim(),
 *   gcAfterClosed: 1000,
 *   lingerMs: 11_000,
 *   now: () => performance.now(),
 * });
 * collector.closed(); // for every closed connection
 * collector.stop(); // with the transport
 * ```
 */
export class ChurnCollector {
  readonly #opts: ChurnCollectorOptions;
  readonly #period: number;
  #closedSinceGc = 0;
  #lastGc = -Infinity;
  /** Closed connections in all, and at the last check for the churn's end. */
  #closedTotal = 0;
  #closedAtCheck = 0;
  /** `churning`: checked every second for its end; `lingering`: the second release is due. */
  #state: "idle" | "churning" | "lingering" = "idle";
  #timer: ReturnType<typeof setTimeout> | undefined;
  #stopped = false;

  /** A collector; nothing happens before {@link closed} counts a churn. */
  constructor(opts: ChurnCollectorOptions) {
    this.#opts = opts;
    this.#period = opts.periodMs ?? 1000;
  }

  /** `churning` during a churn, `lingering` until the second release after it, else `idle`. */
  get state(): "idle" | "churning" | "lingering" {
    return this.#state;
  }

  /** One connection (or handshake) closed. */
  closed(): void {
    this.#closedTotal++;
    if (++this.#closedSinceGc < this.#opts.gcAfterClosed) return;
    const t = this.#opts.now();
    if (t - this.#lastGc < this.#period) return;
    this.#closedSinceGc = 0;
    this.#lastGc = t;
    this.#run("collect", () => this.#opts.collectGarbage?.());
    if (this.#state !== "churning" && !this.#stopped) {
      this.#state = "churning";
      this.#closedAtCheck = this.#closedTotal;
      this.#arm(this.#period, () => this.#check());
    }
  }

  /** Stops the timer for good (the transport closed). */
  stop(): void {
    this.#stopped = true;
    this.#state = "idle";
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #arm(ms: number, then: () => void): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (!this.#stopped) then();
    }, ms);
    Deno.unrefTimer(this.#timer);
  }

  /** Every period during a churn: has it passed? Then collect and release. */
  #check(): void {
    const recent = this.#closedTotal - this.#closedAtCheck;
    this.#closedAtCheck = this.#closedTotal;
    if (recent >= this.#opts.gcAfterClosed / 10) {
      return this.#arm(this.#period, () => this.#check());
    }
    this.#release("settle");
    if (this.#opts.drained?.()) {
      this.#state = "idle"; // nothing left to wait for: one release was enough
      return;
    }
    this.#state = "lingering";
    this.#linger(this.#opts.now() + this.#opts.lingerMs);
  }

  /** Until `until` (or the churn's leftovers are gone), then the second release. */
  #linger(until: number): void {
    const drained = this.#opts.drained?.() ?? false;
    if (!drained && this.#opts.now() < until) {
      return this.#arm(Math.min(this.#period, until - this.#opts.now()), () => this.#linger(until));
    }
    this.#release("linger");
    this.#state = "idle";
  }

  #release(step: "settle" | "linger"): void {
    this.#closedSinceGc = 0;
    this.#lastGc = this.#opts.now();
    this.#run(step, () => {
      this.#opts.collectGarbage?.();
      this.#opts.releaseMemory?.()?.catch(() => {});
    });
  }

  #run(step: Step, work: () => void): void {
    const t = this.#opts.now();
    work();
    this.#opts.onStep?.(step, this.#opts.now() - t);
  }
}
