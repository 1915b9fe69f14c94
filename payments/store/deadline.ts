/**
 * Deadlines on store calls. Deno's KV Connect client retries a remote store
 * that does not answer for as long as it takes, so without a deadline a
 * request waits as long as the store is down; on SQLite a call only waits
 * this long on a stalled disk. {@link withDeadline} bounds the wait: the call
 * itself is not cancelled (Deno KV cannot), so a write that times out may
 * still be applied later. Callers answer such a write as "outcome unknown":
 * retrying it with the same Request-Id replays its answer, whichever way it
 * went.
 *
 * @module
 */

/** Default deadline of one store call. */
export const DEFAULT_STORE_DEADLINE_MS = 10_000;

/** A store call that did not settle within its deadline. */
export class StoreTimeoutError extends Error {
  /** Build the error for a call described as `what`. */
  constructor(what: string, ms: number) {
    super(`the store did not answer ${what} within ${ms} ms`);
    this.name = "StoreTimeoutError";
  }
}

interface Waiting {
  /** `performance.now()` past which the call has failed. */
  expires: number;
  fail: () => void;
}

/**
 * One interval timer for every pending deadline: a timer per call costs
 * about 5 µs (an op to set it and one to clear it), as much as a cached
 * read itself. The interval runs only while calls are pending, at a quarter
 * of the shortest deadline in use (5–250 ms), so a deadline fires at most
 * that late.
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
      if (w.expires > now) continue;
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

/** `p`, or a {@link StoreTimeoutError} once `ms` pass first (`Infinity`: `p` itself). */
export function withDeadline<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  if (!Number.isFinite(ms)) return p;
  return new Promise<T>((resolve, reject) => {
    const w: Waiting = {
      expires: performance.now() + ms,
      fail: () => reject(new StoreTimeoutError(what, ms)),
    };
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
