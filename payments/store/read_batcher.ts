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
import { BatchQueue } from "./batch_queue.ts";
import { DEFAULT_STORE_DEADLINE_MS, StoreTimeoutError, withDeadline } from "./deadline.ts";

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
  readonly #deadlineMs: number;
  readonly #queue: BatchQueue<Pending, Pending[]>;

  /**
   * Wrap a KV handle.
   *
   * @param maxInFlight read calls in flight at once before reads wait (a
   *   full batch goes at once regardless); default 2, so that the store
   *   always has the next call queued.
   * @param deadlineMs longest wait for one read call; past it its reads fail
   *   with a `StoreTimeoutError`
   */
  constructor(kv: Deno.Kv, maxInFlight = 2, deadlineMs = DEFAULT_STORE_DEADLINE_MS) {
    this.#kv = kv;
    this.#deadlineMs = deadlineMs;
    this.#queue = new BatchQueue({
      maxInFlight,
      fullAt: MAX_BATCH,
      take: (queue) => [queue.slice(0, MAX_BATCH), queue.slice(MAX_BATCH)],
      run: (batch) => this.#run(batch),
    });
  }

  /** Read one key (strong consistency), like `kv.get`. */
  get<T>(key: Deno.KvKey): Promise<Deno.KvEntryMaybe<T>> {
    return new Promise<Deno.KvEntryMaybe<T>>((resolve, reject) => {
      this.#queue.add({ key, resolve: resolve as (e: Deno.KvEntryMaybe<unknown>) => void, reject });
    });
  }

  #run(batch: Pending[]): Promise<void> {
    const read = batch.length === 1
      ? this.#kv.get(batch[0].key).then((e) => [e])
      : this.#kv.getMany(batch.map((p) => p.key));
    return withDeadline(read, this.#deadlineMs, "a read").then(
      (entries) => {
        for (let i = 0; i < batch.length; i++) batch[i].resolve(entries[i]);
      },
      (err) => {
        if (batch.length === 1 || err instanceof StoreTimeoutError) {
          for (const p of batch) p.reject(err);
        } else {
          // Keep one bad key (e.g. too large) from failing its neighbours.
          for (const p of batch) {
            withDeadline(this.#kv.get(p.key), this.#deadlineMs, "a read").then(p.resolve, p.reject);
          }
        }
      },
    );
  }
}
