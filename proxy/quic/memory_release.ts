/**
 * Giving memory back after a churn of connections (a spoofed-Initial flood,
 * mostly). Two things hold it, measured on Deno 2.9.6 (6,000 spoofed Initials
 * at 2,000/s: RSS from 69 to 326 MiB, still there 15 s later):
 *
 * 1. Each accepted connection's native state is freed only when V8 collects
 *    its JavaScript object (`full_gc.ts`), and a flood makes no JavaScript
 *    garbage that would bring a collection: hence a collection after every
 *    `gcAfterClosed` closed connections.
 * 2. What the runtime frees stays in glibc's malloc arenas (one per thread
 *    that allocated): after the flood, 244 MB held by the allocator, 9.6 MB
 *    of it in use, the V8 heap at 9 MB, and a full collection freed nothing
 *    more. `malloc_trim(0)` hands those free pages back: 266 → 69 MiB.
 *
 * So {@link ChurnCollector} has V8 collect during the churn (at most once a
 * second) and once more when it has passed (fewer than a tenth of
 * `gcAfterClosed` closes in a second). Then it runs a full collection and
 * `malloc_trim(0)`: at once after a flood (most closed connections were
 * never served) or when the process holds `releaseAtOnceAboveBytes` (256
 * MiB) more than before the churn, else once it has been quiet for
 * `releaseAfterQuietMs` (30 s); then, when handshakes were still held (they
 * pin much of the rest), the same again once they have met their deadline
 * (`drained()`, or `lingerMs` at the latest). Trimming a few hundred MB takes
 * 50-500 ms (on its own thread), so it runs twice per churn, never during
 * it. A burst of served connections waits for a quiet spell because its
 * clients tend to come back, and the pages given back are faulted in again
 * by the next burst: measured, bursts of 800 served connections 4 s apart
 * (each leaving 130-150 MiB) cost 1,750-2,450 µs of CPU per connection with
 * a release 1 s after each, 1,100-1,550 without it.
 *
 * During the churn it asks for a regular collection (`requestCollection`,
 * `requestMajorGc()`: incremental and mostly on V8's worker threads) rather
 * than running the full low-memory one (`collectGarbage`, `fullGc()`), which
 * cost 200 ms of the main thread per 1,000 connections of a burst of served
 * connections, a tenth of their CPU, and gave back pages the burst faulted
 * in again. A requested collection proves itself by the closed connections
 * it frees (a `FinalizationRegistry` sees them go): when the last request
 * freed none, the next step runs the full collection instead. Before
 * `malloc_trim` the full one runs, as the trim must come after it.
 *
 * Connections that were served count too, though they leave JavaScript
 * garbage that brings V8's own collections: those come too late for their
 * native state. Tried and measured: with only unserved closes counted, a
 * burst of 4,000 served connections held 387 MiB at its end (320 at the
 * peak with the collections), and the frame fuzz (7,500 short-lived
 * connections in 12 s) grew the proxy by 180 MiB instead of staying flat.
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
  /** A full garbage collection, here and now (`fullGc()`); none: nothing is collected. */
  collectGarbage?: () => void;
  /**
   * Asks for a regular collection that completes soon after
   * (`requestMajorGc()`); none: `collectGarbage` runs during the churn too.
   */
  requestCollection?: () => void;
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
  /**
   * How long a churn of served connections must have passed before memory
   * is given back (ms; default 30000): bursts that come back sooner keep
   * what they use.
   */
  releaseAfterQuietMs?: number;
  /** The process's resident memory now, bytes (`Deno.memoryUsage().rss`); none: never at once. */
  residentBytes?: () => number;
  /**
   * Resident memory above what the process held before the churn that is
   * given back as soon as the churn has passed, served or not (bytes;
   * default 256 MiB).
   */
  releaseAtOnceAboveBytes?: number;
  /** Told after each step, with what it was and how long it took (logs). */
  onStep?(step: Step, ms: number): void;
}

/**
 * A step of {@link ChurnCollector}: during a churn (a collection requested,
 * or a full one), at its end, and `lingerMs` after it.
 */
export type Step = "request" | "collect" | "settle" | "linger";

/** Every {@link Step}, in the order of a churn. */
export const STEPS: readonly Step[] = ["request", "collect", "settle", "linger"];

/** How often a step ran and how long it held the main thread in all. */
export interface StepCount {
  /** Runs so far. */
  count: number;
  /** The main thread's time in them, ms. */
  ms: number;
}

/**
 * Counts closed connections and collects after a churn of them (see the
 * module). Its one timer runs only while a churn is under way.
 *
 * @example
 * ```ts
 * import { fullGc, requestMajorGc } from "./full_gc.ts";
 * import { mallocTrim } from "./memory_release.ts";
 * declare const conn: Deno.QuicConn;
 *
 * const collector = new ChurnCollector({
 *   collectGarbage: fullGc(),
 *   requestCollection: requestMajorGc,
 *   releaseMemory: mallocTrim(),
 *   gcAfterClosed: 1000,
 *   lingerMs: 11_000,
 *   now: () => performance.now(),
 * });
 * collector.closed(conn); // for every closed connection
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
  /** When the last check saw the churn still going (ms), and whether what it left was collected since. */
  #lastBusy = 0;
  #leftoversCollected = false;
  /** The process's resident memory at the first close since the collector was last idle (bytes). */
  #residentBefore: number | null = null;
  /** Closed connections since the collector was last idle: served ones, and the rest (handshakes). */
  #served = 0;
  #unserved = 0;
  /** `churning`: checked every second for its end; `lingering`: the second release is due. */
  #state: "idle" | "churning" | "lingering" = "idle";
  #timer: ReturnType<typeof setTimeout> | undefined;
  #stopped = false;
  /** Closed connections collected since the last requested collection, and whether one is pending. */
  #collectedSinceRequest = 0;
  #requested = false;
  readonly #collected = new FinalizationRegistry<undefined>(() => this.#collectedSinceRequest++);
  readonly #steps = new Map<Step, StepCount>(STEPS.map((s) => [s, { count: 0, ms: 0 }]));

  /** A collector; nothing happens before {@link closed} counts a churn. */
  constructor(opts: ChurnCollectorOptions) {
    this.#opts = opts;
    this.#period = opts.periodMs ?? 1000;
  }

  /** Each step's runs and main-thread time so far (metrics). */
  get steps(): ReadonlyMap<Step, Readonly<StepCount>> {
    return this.#steps;
  }

  /** `churning` during a churn, `lingering` until the second release after it, else `idle`. */
  get state(): "idle" | "churning" | "lingering" {
    return this.#state;
  }

  /**
   * One connection (or handshake) closed; `connection`, its object, is
   * watched for its collection (the proof that a requested one ran).
   * `served`: whether it got past its handshake (a flood's never do).
   */
  closed(connection?: object, served = true): void {
    this.#closedTotal++;
    if (served) this.#served++;
    else this.#unserved++;
    if (connection !== undefined) this.#collected.register(connection, undefined);
    if (this.#state === "idle" && this.#residentBefore === null) {
      this.#residentBefore = this.#opts.residentBytes?.() ?? null;
    }
    if (++this.#closedSinceGc < this.#opts.gcAfterClosed) return;
    const t = this.#opts.now();
    if (t - this.#lastGc < this.#period) return;
    this.#closedSinceGc = 0;
    this.#lastGc = t;
    this.#collect();
    if (this.#state !== "churning" && !this.#stopped) {
      this.#state = "churning";
      this.#closedAtCheck = this.#closedTotal;
      this.#lastBusy = t;
      this.#leftoversCollected = false;
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

  /**
   * Every period during a churn: has it passed? Its connections are
   * collected at once (a request), and memory is given back at once when
   * the churn left much of it, else once it has been quiet for
   * `releaseAfterQuietMs`.
   */
  #check(): void {
    const recent = this.#closedTotal - this.#closedAtCheck;
    this.#closedAtCheck = this.#closedTotal;
    const now = this.#opts.now();
    const quietFor = now - this.#lastBusy;
    if (recent >= this.#opts.gcAfterClosed / 10) {
      this.#lastBusy = now;
      this.#leftoversCollected = false;
    } else if (quietFor < (this.#opts.releaseAfterQuietMs ?? 30_000) && !this.#releaseAtOnce()) {
      // What the churn left is collected now; its pages stay for a while.
      if (!this.#leftoversCollected) {
        this.#leftoversCollected = true;
        if (this.#closedSinceGc > 0) {
          this.#closedSinceGc = 0;
          this.#lastGc = now;
          this.#collect();
        }
      }
    } else {
      return this.#settle();
    }
    this.#arm(this.#period, () => this.#check());
  }

  /** A flood (most closed connections never served), or much more memory held than before the churn. */
  #releaseAtOnce(): boolean {
    if (this.#unserved > this.#served) return true;
    const resident = this.#opts.residentBytes?.();
    if (resident === undefined || this.#residentBefore === null) return false;
    const atOnce = this.#opts.releaseAtOnceAboveBytes ?? 256 * 2 ** 20;
    return resident - this.#residentBefore >= atOnce;
  }

  /** The churn has passed and was quiet long enough, or it was a flood: a full collection and memory given back. */
  #settle(): void {
    this.#release("settle");
    if (this.#opts.drained?.()) {
      this.#idle(); // nothing left to wait for: one release was enough
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
    this.#idle();
  }

  /** Nothing more to do for this churn: the next one measures memory afresh. */
  #idle(): void {
    this.#state = "idle";
    this.#residentBefore = null;
    this.#served = 0;
    this.#unserved = 0;
  }

  /** During a churn: a collection requested, or a full one when the last request freed nothing. */
  #collect(): void {
    const request = this.#opts.requestCollection;
    if (request !== undefined && (!this.#requested || this.#collectedSinceRequest > 0)) {
      this.#requested = true;
      this.#collectedSinceRequest = 0;
      this.#run("request", request);
    } else {
      this.#requested = false;
      this.#run("collect", () => this.#opts.collectGarbage?.());
    }
  }

  #release(step: "settle" | "linger"): void {
    this.#requested = false;
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
    const ms = this.#opts.now() - t;
    const counted = this.#steps.get(step)!;
    counted.count++;
    counted.ms += ms;
    this.#opts.onStep?.(step, ms);
  }
}
