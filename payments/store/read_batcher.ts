/**
 * Point reads coalesced into `kv.getMany` calls. Deno KV serves the reads of
 * a handle one after another (on SQLite, one worker thread and one
 * transaction per call), so under load the round trip, not the lookup, is
 * the cost: reads asked for in the same turn of the event loop, or while
 * another read call is in flight, go out together, up to {@link MAX_BATCH}
 * keys per call.
 *
 * Nothing is cached: every read is issued after it was asked for and sees
 * every change committed before that (the read of a key written a moment ago
 * sees the write), from this process or another one sharing the store.
 *
 * @example
 * ```ts
 * const kv = await Deno.openKv(":memory:");
 * const reads = new ReadBatcher(kv);
 * const [a, b] = await Promise.all([reads.get(["a"]), reads.get(["b"])]);
 * ```
 *
 * @module
 */
import { setImmediate } from "node:timers";

/** Most keys per `getMany` call (the Deno KV limit). */
export const MAX_BATCH = 10;

interface Pending {
  key: Deno.KvKey;
  resolve: (e: Deno.KvEntryMaybe<unknown>) => void;
  reject: (err: unknown) => void;
}

/** Coalesces concurrent point reads of one KV handle. */
export class ReadBatcher {
  readonly #kv: Deno.Kv;
  #queue: Pending[] = [];
  #inFlight = 0;
  readonly #maxInFlight: number;
  #scheduled = false;
  readonly #flush = () => {
    this.#scheduled = false;
    if (this.#queue.length > 0 && this.#inFlight < this.#maxInFlight) this.#send();
  };

  /**
   * Wrap a KV handle.
   *
   * @param maxInFlight read calls in flight at once before reads wait (a
   *   full batch goes at once regardless); default 2, so that the store
   *   always has the next call queued.
   */
  constructor(kv: Deno.Kv, maxInFlight = 2) {
    this.#kv = kv;
    this.#maxInFlight = Math.max(1, maxInFlight);
  }

  /** Read one key (strong consistency), like `kv.get`. */
  get<T>(key: Deno.KvKey): Promise<Deno.KvEntryMaybe<T>> {
    return new Promise<Deno.KvEntryMaybe<T>>((resolve, reject) => {
      this.#queue.push({
        key,
        resolve: resolve as (e: Deno.KvEntryMaybe<unknown>) => void,
        reject,
      });
      if (this.#queue.length >= MAX_BATCH) this.#send();
      else if (this.#inFlight < this.#maxInFlight && !this.#scheduled) {
        // Go once the reads asked for in this turn of the event loop
        // (requests that arrived together) have joined.
        this.#scheduled = true;
        setImmediate(this.#flush);
      }
      // Busy: wait for a call in flight to finish.
    });
  }

  #send(): void {
    const batch = this.#queue.length <= MAX_BATCH ? this.#queue : this.#queue.slice(0, MAX_BATCH);
    this.#queue = this.#queue.length <= MAX_BATCH ? [] : this.#queue.slice(MAX_BATCH);
    this.#inFlight++;
    const done = () => {
      this.#inFlight--;
      if (this.#queue.length > 0 && this.#inFlight < this.#maxInFlight) this.#send();
    };
    const read = batch.length === 1
      ? this.#kv.get(batch[0].key).then((e) => [e])
      : this.#kv.getMany(batch.map((p) => p.key));
    read.then(
      (entries) => {
        for (let i = 0; i < batch.length; i++) batch[i].resolve(entries[i]);
        done();
      },
      (err) => {
        if (batch.length === 1) batch[0].reject(err);
        else {
          // Keep one bad key (e.g. too large) from failing its neighbours.
          for (const p of batch) this.#kv.get(p.key).then(p.resolve, p.reject);
        }
        done();
      },
    );
  }
}
