/**
 * Paces the RST_STREAMs one backend session sends for streams the backend
 * may not have accepted yet (no response head seen on them).
 *
 * Why: Rust's `h2` crate, under hyper and so under `Deno.serve` and many Rust
 * services, counts streams that were reset by the client while they still
 * waited in its accept queue, and past 20 of them at once it ends the whole
 * connection with GOAWAY ENHANCE_YOUR_CALM (its rapid-reset defence,
 * hyperium/h2#668). A proxy resets a backend stream whenever its client
 * leaves, so a burst of clients leaving (a browser navigating away, a fuzzer)
 * made such a backend drop the pooled connection and every other client's
 * request on it: on one session to `Deno.serve`, 150 of 300 requests failed
 * beside 300 abandoned 10 ms after they opened (`h2_transport_test.ts` has
 * that case).
 *
 * How: a stream is taken as accepted once its response head was seen, once
 * the backend answered a stream with a higher id (its accept queue is first
 * in, first out, so everything before that stream has left it), or
 * {@link ACCEPT_GRACE_MS} after it opened; its reset goes out at once. Of the
 * others ("blind" resets) at most {@link RESET_BUDGET} are outstanding per
 * session; a reset past the budget waits (the stream stays open, as it still
 * is at the backend) until one of those three things makes it safe or frees
 * room, so at most the grace after its stream opened.
 *
 * Pure bookkeeping: the session sends the resets this returns.
 *
 * @module
 */

/** Blind resets a session may have outstanding: half of the `h2` crate's limit of 20. */
export const RESET_BUDGET = 10;

/** This long after its stream opened, a stream is taken as accepted: its reset goes out (ms). */
export const ACCEPT_GRACE_MS = 250;

/** The blind resets of one session, and the resets waiting for room. */
export class ResetBudget {
  /** Blind resets sent, oldest first: stream id and when its stream opened. */
  #blind: Array<{ stream: number; at: number }> = [];
  /** Streams whose reset waits, oldest first: stream id and when its stream opened. */
  #deferred: Array<{ stream: number; at: number }> = [];

  constructor(readonly budget = RESET_BUDGET, readonly graceMs = ACCEPT_GRACE_MS) {}

  /** Nothing counted and nothing waiting (an answer then changes nothing). */
  get empty(): boolean {
    return this.#blind.length === 0 && this.#deferred.length === 0;
  }

  /** Resets waiting for room. */
  get deferred(): number {
    return this.#deferred.length;
  }

  /**
   * The client left stream `stream`, opened at `openedAt`: true when its
   * reset may go out now, false when it was deferred (see {@link due} and
   * {@link answered}). It goes out now when its head was seen (`answered`)
   * or it is older than the grace (both: accepted), or the budget has room.
   */
  admit(stream: number, answered: boolean, openedAt: number, now: number): boolean {
    if (answered || now - openedAt >= this.graceMs) return true;
    this.#expire(now);
    if (this.#blind.length < this.budget && this.#deferred.length === 0) {
      this.#blind.push({ stream, at: openedAt });
      return true;
    }
    this.#deferred.push({ stream, at: openedAt });
    return false;
  }

  /**
   * The backend sent the response head of `stream`: the streams before it
   * have left its accept queue. Returns the deferred streams to reset now.
   */
  answered(stream: number, now: number): number[] {
    if (this.empty) return [];
    this.#blind = this.#blind.filter((b) => b.stream > stream);
    const out: number[] = [];
    this.#deferred = this.#deferred.filter((d) => {
      if (d.stream > stream) return true;
      out.push(d.stream); // accepted by now: resetting it costs the backend nothing
      return false;
    });
    return out.concat(this.due(now));
  }

  /** The deferred streams whose reset may go out now (room again, or old enough to be accepted). */
  due(now: number): number[] {
    this.#expire(now);
    const out: number[] = [];
    this.#deferred = this.#deferred.filter((d) => {
      if (now - d.at >= this.graceMs) {
        out.push(d.stream); // accepted by now, or the backend is stuck either way
        return false;
      }
      return true;
    });
    while (this.#deferred.length > 0 && this.#blind.length < this.budget) {
      const d = this.#deferred.shift()!;
      this.#blind.push(d);
      out.push(d.stream);
    }
    return out;
  }

  /** When {@link due} may next return something (`performance.now()` ms), or `null`. */
  nextDue(): number | null {
    if (this.#deferred.length === 0) return null;
    let next = Infinity;
    for (const d of this.#deferred) next = Math.min(next, d.at + this.graceMs);
    for (const b of this.#blind) next = Math.min(next, b.at + this.graceMs);
    return next;
  }

  #expire(now: number): void {
    if (this.#blind.some((b) => now - b.at >= this.graceMs)) {
      this.#blind = this.#blind.filter((b) => now - b.at < this.graceMs);
    }
  }
}
