/**
 * Deadlines on promises without a timer per promise: a timer costs two ops
 * (set and clear), about 5 µs, which on a hot path (one per request) is as
 * much as a cached read. All pending deadlines share one interval timer,
 * which runs only while some are pending.
 *
 * @example
 * ```ts
 * declare const req: Request;
 * const body = await deadline(req.arrayBuffer(), 30_000, () => new Error("too slow"));
 * ```
 *
 * @module
 */

interface Waiting {
  /** `performance.now()` past which the call has failed. */
  expires: number;
  fail: () => void;
  /** Called when a sweep drops it for being paused (`expires` is Infinity). */
  left?: () => void;
}

/**
 * One interval timer for every pending deadline: a timer per call costs
 * about 5 µs (an op to set it and one to clear it), as much as a cached
 * read itself. The interval runs only while calls are pending (and paused
 * idle watches until the next sweep drops them), at a quarter of the
 * shortest deadline in use (5–250 ms), so a deadline fires at most that late.
 */
class Sweeper {
  readonly #waiting = new Set<Waiting>();
  #timer: ReturnType<typeof setInterval> | undefined;
  #period = Infinity;

  add(w: Waiting, ms: number): void {
    this.#waiting.add(w);
    const period = Math.min(250, Math.max(5, Math.floor(ms / 4)));
    if (this.#timer === undefined || period < this.#period) {
      if (this.#timer !== undefined) clearInterval(this.#timer);
      this.#period = period;
      this.#timer = setInterval(() => this.#sweep(), period);
    }
  }

  remove(w: Waiting): void {
    this.#waiting.delete(w);
    if (this.#waiting.size === 0) this.#stop();
  }

  #sweep(): void {
    const now = performance.now();
    for (const w of this.#waiting) {
      if (w.expires > now) {
        // Paused since before this sweep: it leaves now (see `idleWatch`).
        if (w.expires === Infinity) {
          this.#waiting.delete(w);
          w.left?.();
        }
        continue;
      }
      this.#waiting.delete(w);
      w.fail();
    }
    if (this.#waiting.size === 0) this.#stop();
  }

  #stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#period = Infinity;
  }
}

const sweeper = new Sweeper();

/**
 * `p`, or the error `late()` makes once `ms` have passed first (`Infinity`:
 * `p` itself). The deadline fires up to a quarter of `ms` late (at most
 * 250 ms). `p` itself is not cancelled.
 */
export function deadline<T>(p: Promise<T>, ms: number, late: () => Error): Promise<T> {
  if (!Number.isFinite(ms)) return p;
  return new Promise<T>((resolve, reject) => {
    const w: Waiting = { expires: performance.now() + ms, fail: () => reject(late()) };
    sweeper.add(w, ms);
    p.then((value) => {
      sweeper.remove(w);
      resolve(value);
    }, (err) => {
      sweeper.remove(w);
      reject(err);
    });
  });
}

/** An idle deadline that moves forward with each sign of progress; see {@link idleWatch}. */
export interface IdleWatch {
  /** Progress: the deadline is `ms` from now again. */
  touch(): void;
  /**
   * Not waiting on the watched party for now: no deadline until the next
   * {@link touch}. The watch leaves the sweeper at its next sweep (a paused
   * watch then costs nothing and holds nothing); a touch before that keeps
   * it in, so a pause and a touch per chunk of a body cost no set or timer
   * operation.
   */
  pause(): void;
  /** Stops watching (idempotent); `onIdle` will not be called. */
  cancel(): void;
}

/**
 * Calls `onIdle` once no {@link IdleWatch.touch} has come for `ms` (up to a
 * quarter of `ms`, at most 250 ms, late). A touch costs one clock read, no
 * timer: all watches share the sweeper's interval, so a request body can
 * report progress per chunk for free.
 *
 * @example
 * ```ts
 * import type { Readable } from "node:stream";
 * declare const stream: Readable & { close(): void };
 *
 * const watch = idleWatch(30_000, () => stream.close());
 * stream.on("data", () => watch.touch());
 * stream.on("end", () => watch.cancel());
 * ```
 */
export function idleWatch(ms: number, onIdle: () => void): IdleWatch {
  if (!Number.isFinite(ms)) return { touch() {}, pause() {}, cancel() {} };
  let done = false;
  /** In the sweeper's set: armed, or paused and not yet dropped by a sweep. */
  let swept = true;
  const w: Waiting = {
    expires: performance.now() + ms,
    fail: () => {
      done = true;
      swept = false;
      onIdle();
    },
    left: () => {
      swept = false;
    },
  };
  sweeper.add(w, ms);
  return {
    touch() {
      if (done) return;
      w.expires = performance.now() + ms;
      if (!swept) {
        swept = true;
        sweeper.add(w, ms);
      }
    },
    pause() {
      // Marked, not removed: the next sweep drops it unless a touch came
      // first. Leaving and joining the set per chunk (the set emptied, the
      // interval stopped and set again) made garbage V8 promoted: an HTTP/1.1
      // upload grew the heap by 16 MiB per GiB until a full collection.
      w.expires = Infinity;
    },
    cancel() {
      if (done) return;
      done = true;
      if (swept) sweeper.remove(w);
      swept = false;
    },
  };
}

/**
 * Wait for `p` for at most `ms` (a one-off wait, such as a drain at
 * shutdown, timed exactly with its own timer): true when `p` settled in time,
 * whether it resolved or rejected; false when the time ran out first.
 */
export async function settledWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([p.then(() => true, () => true), late]);
  } finally {
    clearTimeout(timer);
  }
}
