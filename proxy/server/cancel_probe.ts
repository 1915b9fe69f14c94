/**
 * Noticing that a client cancelled a request while nothing is being written
 * to it. Deno's QUIC API (2.9.6) surfaces a peer's STOP_SENDING only as the
 * failure of the next write of at least one byte: a request waiting on its
 * backend writes nothing, so a cancel went unnoticed until the connection
 * closed, and its backend stream stayed open (issue #25 item 5). A request
 * stream that waits is therefore probed now and then with a reserved frame
 * (RFC 9114 §7.2.8: type 0x21, empty; two bytes), which every HTTP/3 peer
 * must ignore and which §4.1 allows anywhere on a request stream, before
 * HEADERS too. A probe that fails means the client stopped reading: the
 * caller's `writer.closed` rejects, and the request is aborted, which
 * cancels its backend exchange.
 *
 * One interval timer serves every waiting stream, and only while some wait.
 * A stream is first probed `firstMs` after it starts waiting, then at
 * doubling gaps up to `maxMs`: a cancel is noticed within about that gap
 * plus one tick.
 *
 * @example
 * ```ts
 * import { cancelProbe } from "./cancel_probe.ts";
 * declare const writer: WritableStreamDefaultWriter<Uint8Array>;
 * declare const askBackend: () => Promise<Response>;
 *
 * const probe = cancelProbe.watch(writer); // while waiting for the backend
 * try {
 *   await askBackend();
 * } finally {
 *   probe.stop();
 * }
 * ```
 *
 * @module
 */

import { encodeFrame } from "../h3/mod.ts";

/** A reserved frame type (0x1f * N + 0x21, N = 0), empty payload. */
const PROBE = encodeFrame(0x21, new Uint8Array(0));

/** What a probe writes to. */
export interface ProbeTarget {
  /** Writes bytes to the stream; rejects once the peer stopped reading. */
  write(chunk: Uint8Array): Promise<void>;
}

/** One watched stream. */
export interface ProbeWatch {
  /** The stream is being written to: no probes until {@link ProbeWatch.resume}. */
  pause(): void;
  /** Waiting again: probes resume, the first one `firstMs` from now. */
  resume(): void;
  /** Done: no more probes (idempotent). */
  stop(): void;
}

/** One watched stream: its probe schedule (a class, so a watch costs one object). */
class Entry implements ProbeWatch {
  /** `now()` at which the next probe is due. */
  due: number;
  /** Gap before the next probe after this one. */
  gap: number;
  /** A probe write has not settled yet (flow control may hold it): no second one. */
  busy = false;

  constructor(
    readonly owner: CancelProbe,
    readonly target: ProbeTarget,
    readonly first: number,
    now: number,
    /** Not waiting for now (the stream is being written to): no probe. */
    public paused: boolean,
  ) {
    this.due = now + first;
    this.gap = first;
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    this.gap = this.first;
    this.due = this.owner.now() + this.first;
  }

  stop(): void {
    this.owner.forget(this);
  }
}

/** Options of {@link CancelProbe}. */
export interface CancelProbeOptions {
  /** First probe this long after waiting starts (ms; default 100). */
  firstMs?: number;
  /** Largest gap between probes (ms; default 1000). */
  maxMs?: number;
  /** Tick of the shared timer (ms; default 50). */
  tickMs?: number;
  /** Monotonic clock (ms); default `performance.now`. */
  now?: () => number;
}

/** Probes waiting request streams; see the module documentation. */
export class CancelProbe {
  readonly #entries = new Set<Entry>();
  readonly #firstMs: number;
  readonly #maxMs: number;
  readonly #tickMs: number;
  readonly #now: () => number;
  #timer: ReturnType<typeof setInterval> | undefined;

  /** A prober with the given timing. */
  constructor(opts: CancelProbeOptions = {}) {
    this.#firstMs = opts.firstMs ?? 100;
    this.#maxMs = opts.maxMs ?? 1000;
    this.#tickMs = opts.tickMs ?? 50;
    this.#now = opts.now ?? (() => performance.now());
  }

  /** Streams being probed. */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * Probes `target` until {@link ProbeWatch.stop} (paused from the start
   * when `paused`). Failed probe writes are swallowed: the stream's own
   * `closed` promise reports them.
   */
  watch(target: ProbeTarget, paused = false): ProbeWatch {
    const entry = new Entry(this, target, this.#firstMs, this.#now(), paused);
    this.#entries.add(entry);
    this.#timer ??= setInterval(() => this.tick(), this.#tickMs);
    return entry;
  }

  /** The clock (for {@link Entry}). */
  now(): number {
    return this.#now();
  }

  /** Stops probing `entry` (idempotent); the timer stops with the last one. */
  forget(entry: ProbeWatch): void {
    if (!this.#entries.delete(entry as Entry)) return;
    if (this.#entries.size === 0) this.#stop();
  }

  /** Writes the probes that are due (the timer calls it; tests may too). */
  tick(): void {
    const now = this.#now();
    for (const e of this.#entries) {
      if (e.busy || e.paused || e.due > now) continue;
      e.gap = Math.min(e.gap * 2, this.#maxMs);
      e.due = now + e.gap;
      e.busy = true;
      e.target.write(PROBE).then(
        () => e.busy = false,
        () => this.#entries.delete(e), // the client is gone: nothing more to learn
      );
    }
    if (this.#entries.size === 0) this.#stop();
  }

  #stop(): void {
    if (this.#timer === undefined) return;
    clearInterval(this.#timer);
    this.#timer = undefined;
  }
}

/** The process's prober (one timer for every connection). */
export const cancelProbe: CancelProbe = new CancelProbe();
