/**
 * Cached point reads of values that change only in commits that bump an
 * epoch counter, exact across every process sharing the store.
 *
 * On SQLite each key read is its own range query, and that, not the HTTP
 * stack, is most of what a read endpoint costs. This cache keeps values in
 * memory and validates them with one read of the epoch key
 * (`kv.atomic().sum(epochKey, 1n)` in every commit that changes a cached
 * value) per batch of reads instead of one read per value:
 *
 * - a read joins the next batch; a batch is one `kv.getMany` of the epoch
 *   key and of the keys not cached (at most {@link MAX_MISSES}), one
 *   snapshot, issued after every read in it was asked for;
 * - a cached value is served when its epoch equals the epoch read by its
 *   batch: no bumping commit happened between the snapshot that filled it
 *   and the batch's snapshot, so it is the current value, including changes
 *   committed by other processes; otherwise the read goes again, uncached;
 * - a newer epoch empties the cache; absent keys are not cached (a value
 *   created later needs no bump);
 * - what is kept is the value passed through the reader's `derive` (e.g. a
 *   record turned into the JSON response it answers), so a hit decodes and
 *   builds nothing.
 *
 * The contract for writers: a commit that changes or deletes a value under a
 * cached key must also `sum(epochKey, 1n)`; a commit creating the key needs
 * not.
 *
 * @example
 * ```ts
 * const kv = await Deno.openKv(":memory:");
 * const views = new ViewCache(kv, ["view_epoch"]);
 * const toJson = (v: unknown) => JSON.stringify(v);
 * await kv.set(["rec", "a"], { n: 1 });
 * const a = await views.get(["rec", "a"], toJson); // read from KV, '{"n":1}' cached
 * await kv.atomic().set(["rec", "a"], { n: 2 }).sum(["view_epoch"], 1n).commit();
 * const b = await views.get(["rec", "a"], toJson); // '{"n":2}'
 * ```
 *
 * @module
 */
import { BatchQueue } from "./batch_queue.ts";
import { keyId } from "./commit_batcher.ts";
import { DEFAULT_STORE_DEADLINE_MS, StoreTimeoutError, withDeadline } from "./deadline.ts";

/** Keys read from the store per batch besides the epoch (Deno KV reads at most 10 keys per call). */
export const MAX_MISSES = 9;

interface Cached {
  epoch: bigint;
  /** The derived value (see {@link ViewCache.get}). */
  value: unknown;
}

interface Pending {
  key: Deno.KvKey;
  id: string;
  derive: (value: unknown) => unknown;
  resolve: (v: unknown) => void;
  reject: (err: unknown) => void;
  /** The cached entry this read hopes to be served from (set when batched). */
  hit?: Cached;
}

/** One store read: the reads it serves and the keys it fetches besides the epoch. */
interface Batch {
  batch: Pending[];
  missKeys: Deno.KvKey[];
  missIds: string[];
}

/** Options of {@link ViewCache}. */
export interface ViewCacheOptions {
  /** Most values kept; the oldest are dropped first. Default 10,000. */
  maxEntries?: number;
  /** Batches in flight at once; default 2. */
  maxInFlight?: number;
  /** Longest wait for one store call; past it its reads fail with a `StoreTimeoutError`. */
  deadlineMs?: number;
}

/** Epoch-validated cache of point reads of one KV handle. */
export class ViewCache {
  readonly #kv: Deno.Kv;
  readonly #epochKey: Deno.KvKey;
  readonly #maxEntries: number;
  readonly #deadlineMs: number;
  readonly #cache = new Map<string, Cached>();
  /** Highest epoch seen; every cached value has it. */
  #epoch = -1n;
  readonly #queue: BatchQueue<Pending, Batch>;

  /** Cache values of `kv` validated by the counter at `epochKey`. */
  constructor(kv: Deno.Kv, epochKey: Deno.KvKey, options: ViewCacheOptions = {}) {
    this.#kv = kv;
    this.#epochKey = epochKey;
    this.#maxEntries = Math.max(1, options.maxEntries ?? 10_000);
    this.#deadlineMs = options.deadlineMs ?? DEFAULT_STORE_DEADLINE_MS;
    this.#queue = new BatchQueue({
      maxInFlight: options.maxInFlight ?? 2,
      take: (queue) => this.#take(queue),
      run: (batch) => this.#run(batch),
    });
  }

  /** Values currently cached. */
  get size(): number {
    return this.#cache.size;
  }

  /**
   * The current value at `key` passed through `derive`, or null when the key
   * is absent (strongly consistent). What is cached is the derived value, so
   * a hit costs no decoding: every read of a key must use the same `derive`.
   */
  get<T>(key: Deno.KvKey, derive: (value: unknown) => T = (v) => v as T): Promise<T | null> {
    return new Promise<T | null>((resolve, reject) => {
      this.#queue.add({
        key,
        id: keyId(key),
        derive,
        resolve: resolve as (v: unknown) => void,
        reject,
      });
    });
  }

  /** Every pending read with a cached value, and uncached ones up to {@link MAX_MISSES} keys. */
  #take(queue: Pending[]): [Batch, Pending[]] {
    const batch: Pending[] = [];
    const rest: Pending[] = [];
    const missKeys: Deno.KvKey[] = [];
    const missIds: string[] = [];
    for (const p of queue) {
      const hit = this.#cache.get(p.id);
      if (hit) {
        p.hit = hit;
        batch.push(p);
      } else if (missIds.includes(p.id)) {
        p.hit = undefined;
        batch.push(p);
      } else if (missKeys.length < MAX_MISSES) {
        p.hit = undefined;
        missKeys.push(p.key);
        missIds.push(p.id);
        batch.push(p);
      } else {
        rest.push(p);
      }
    }
    return [{ batch, missKeys, missIds }, rest];
  }

  #run({ batch, missKeys, missIds }: Batch): Promise<void> {
    const read = this.#kv.getMany([this.#epochKey, ...missKeys]);
    return withDeadline(read, this.#deadlineMs, "a read").then(
      (entries) => this.#settle(batch, missIds, entries),
      (err) => {
        if (batch.length === 1 || err instanceof StoreTimeoutError) {
          for (const p of batch) p.reject(err);
          return;
        }
        // Keep one bad key (e.g. too large) from failing its neighbours:
        // each read goes alone, uncached.
        for (const p of batch) {
          withDeadline(this.#kv.get(p.key), this.#deadlineMs, "a read")
            .then((e) => e.value === null ? null : p.derive(e.value))
            .then(p.resolve, p.reject);
        }
      },
    );
  }

  #settle(batch: Pending[], missIds: string[], entries: Deno.KvEntryMaybe<unknown>[]): void {
    const counter = entries[0].value;
    const epoch = counter instanceof Deno.KvU64 ? counter.value : 0n;
    if (epoch > this.#epoch) {
      // Something cached may have changed since it was read.
      this.#cache.clear();
      this.#epoch = epoch;
    }
    const read = new Map<string, unknown>();
    const failed = new Map<string, unknown>();
    for (let i = 0; i < missIds.length; i++) {
      const stored = entries[i + 1].value;
      let value: unknown = null;
      if (stored !== null) {
        try {
          value = batch.find((p) => p.id === missIds[i])!.derive(stored);
        } catch (err) {
          // Only the reads of this key fail.
          failed.set(missIds[i], err);
          continue;
        }
      }
      read.set(missIds[i], value);
      // A batch that completed after a newer one must not fill the cache.
      if (value !== null && epoch === this.#epoch) this.#remember(missIds[i], { epoch, value });
    }
    const again: Pending[] = [];
    for (const p of batch) {
      if (failed.has(p.id)) p.reject(failed.get(p.id));
      else if (p.hit === undefined) p.resolve(read.get(p.id) ?? null);
      else if (p.hit.epoch === epoch) p.resolve(p.hit.value);
      else again.push(p);
    }
    // Stale hits are read again, uncached, in a batch issued after this one.
    if (again.length > 0) this.#queue.requeue(again);
  }

  #remember(id: string, entry: Cached): void {
    this.#cache.delete(id);
    this.#cache.set(id, entry);
    if (this.#cache.size > this.#maxEntries) {
      // Maps iterate in insertion order: drop the oldest.
      const oldest = this.#cache.keys().next().value as string;
      this.#cache.delete(oldest);
    }
  }
}
