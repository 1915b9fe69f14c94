/**
 * One client connection's share of the backends' streams: at most `limit`
 * of its requests in flight to one pool at a time (issue #25 item 4: one
 * connection with 256 never-read downloads held every stream a backend
 * allowed). A request past the limit waits, first come first served, for
 * one of the connection's own requests to that pool to finish, and is
 * refused (the caller answers 503, never sending it) when none does within
 * its wait bound, when it is cancelled, or when the connection closes. A
 * burst of quick requests (a page's assets) thus queues briefly instead of
 * failing, while one connection can never take more than `limit` streams.
 *
 * @example
 * ```ts
 * import { StreamShare } from "./stream_share.ts";
 * declare const streamId: number;
 * declare const signal: AbortSignal;
 *
 * const share = new StreamShare(100);
 * const ok = await share.claim(streamId, "api", 30_000, signal);
 * // ... forward, then when the stream is done:
 * share.release(streamId);
 * ```
 *
 * @module
 */

interface Waiter {
  id: number;
  key: string;
  resolve(ok: boolean): void;
  timer: ReturnType<typeof setTimeout>;
  signal?: AbortSignal;
  onAbort?: () => void;
}

/** See the module documentation. */
export class StreamShare {
  readonly #limit: number;
  /** Pool each request holds a slot of. */
  readonly #held = new Map<number, string>();
  readonly #perKey = new Map<string, number>();
  readonly #waiting: Waiter[] = [];
  #closed = false;

  /** At most `limit` requests in flight per pool. */
  constructor(limit: number) {
    this.#limit = limit;
  }

  /** Requests holding a slot or waiting for one. */
  get size(): number {
    return this.#held.size + this.#waiting.length;
  }

  /**
   * Takes a slot of `key` for request `id`: `true` at once when one is
   * free (or `id` already holds one of `key`), else a promise that resolves
   * `true` when one is handed over, or `false` after `waitMs`, on `signal`,
   * or when the share is closed.
   */
  claim(id: number, key: string, waitMs: number, signal?: AbortSignal): boolean | Promise<boolean> {
    const held = this.#held.get(id);
    if (held !== undefined) return held === key;
    if (this.#closed || signal?.aborted) return false;
    const n = this.#perKey.get(key) ?? 0;
    if (n < this.#limit) {
      this.#perKey.set(key, n + 1);
      this.#held.set(id, key);
      return true;
    }
    return new Promise<boolean>((resolve) => {
      const waiter: Waiter = {
        id,
        key,
        resolve,
        timer: setTimeout(() => this.#drop(waiter, false), waitMs),
        signal,
      };
      if (signal !== undefined) {
        waiter.onAbort = () => this.#drop(waiter, false);
        signal.addEventListener("abort", waiter.onAbort, { once: true });
      }
      this.#waiting.push(waiter);
    });
  }

  /** Request `id` is done: its slot goes to the first request waiting for that pool. */
  release(id: number): void {
    const key = this.#held.get(id);
    if (key === undefined) {
      const w = this.#waiting.find((w) => w.id === id);
      if (w !== undefined) this.#drop(w, false);
      return;
    }
    this.#held.delete(id);
    const next = this.#waiting.find((w) => w.key === key);
    if (next !== undefined) {
      // The slot passes on: the count for the pool stays.
      this.#held.set(next.id, key);
      this.#drop(next, true);
      return;
    }
    const n = (this.#perKey.get(key) ?? 1) - 1;
    if (n === 0) this.#perKey.delete(key);
    else this.#perKey.set(key, n);
  }

  /** The connection closed: every waiting request is refused, none admitted again. */
  close(): void {
    this.#closed = true;
    for (const w of [...this.#waiting]) this.#drop(w, false);
  }

  #drop(w: Waiter, ok: boolean): void {
    const i = this.#waiting.indexOf(w);
    if (i === -1) return;
    this.#waiting.splice(i, 1);
    clearTimeout(w.timer);
    if (w.onAbort) w.signal?.removeEventListener("abort", w.onAbort);
    w.resolve(ok);
  }
}
