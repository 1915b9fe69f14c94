/**
 * The requests of one pool waiting for a slot (`max_pending`): first come
 * first served among those a freed backend can take, each for at most its
 * wait bound, and gone at once when its client leaves. Bounded by the
 * caller (`gate.ts` never queues past `max_pending`).
 *
 * @module
 */

import type { BackendRef } from "../balancer/mod.ts";

/** One waiting request. */
interface Waiter {
  readonly candidates: readonly BackendRef[];
  readonly resolve: (index: number) => void;
  readonly timer: ReturnType<typeof setTimeout>;
  readonly signal: AbortSignal;
  readonly onAbort: () => void;
}

/** See the module documentation. */
export class PendingQueue {
  readonly #waiters: Waiter[] = [];

  /** Requests waiting. */
  get size(): number {
    return this.#waiters.length;
  }

  /**
   * Waits for a slot on one of `candidates`: resolves with its index once
   * {@link handOver} gives one, or -1 after `waitMs` (`onTimeout` is called
   * first) or when `signal` aborts.
   */
  wait(
    candidates: readonly BackendRef[],
    signal: AbortSignal,
    waitMs: number,
    onTimeout: () => void,
  ): Promise<number> {
    return new Promise((resolve) => {
      const waiter: Waiter = {
        candidates,
        resolve,
        signal,
        timer: setTimeout(() => {
          if (this.#remove(waiter)) {
            onTimeout();
            resolve(-1);
          }
        }, waitMs),
        onAbort: () => {
          if (this.#remove(waiter)) resolve(-1);
        },
      };
      signal.addEventListener("abort", waiter.onAbort, { once: true });
      this.#waiters.push(waiter);
    });
  }

  /**
   * Hands a slot of backend `id` to the longest waiting request that can
   * use it: `take()` is called to take the slot, and the waiter resumes
   * with the backend's index in its candidates. `false`: nobody waits for
   * `id`.
   */
  handOver(id: string, take: () => void): boolean {
    for (const waiter of this.#waiters) {
      const index = waiter.candidates.findIndex((b) => b.id === id);
      if (index < 0) continue;
      this.#remove(waiter);
      take();
      waiter.resolve(index);
      return true;
    }
    return false;
  }

  #remove(waiter: Waiter): boolean {
    const at = this.#waiters.indexOf(waiter);
    if (at < 0) return false;
    this.#waiters.splice(at, 1);
    clearTimeout(waiter.timer);
    waiter.signal.removeEventListener("abort", waiter.onAbort);
    return true;
  }
}
