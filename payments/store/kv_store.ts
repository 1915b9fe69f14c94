/**
 * Deno KV persistence of the payments sandbox. Every change is one
 * `kv.atomic()` commit guarded by versionstamp checks, so the same code is
 * correct on the embedded SQLite store and on a remote KV Connect store.
 * Under load, independent changes share commits ({@link CommitBatcher}) and
 * concurrent reads share round trips ({@link ReadBatcher}). The key layout
 * is `keys.ts`; idempotency records are `idempotency.ts`.
 *
 * @module
 */
import { getLogger } from "@logtape/logtape";
import { PaymentsError } from "../domain/errors.ts";
import { type AtomicChange, CommitBatcher, isDatabaseLocked } from "./commit_batcher.ts";
import { DEFAULT_STORE_DEADLINE_MS, StoreTimeoutError, withDeadline } from "./deadline.ts";
import {
  IDEMPOTENCY_TTL_MS,
  type IdempotencyRecord,
  replayOf,
  requestDigest,
} from "./idempotency.ts";
import { keys, VIEW_EPOCH_KEY, VIEW_PREFIX } from "./keys.ts";
import { ReadBatcher } from "./read_batcher.ts";
import type { Reply } from "./reply.ts";
import { STORE_TRACING, type StoreTracing } from "./tracing.ts";
import { ViewCache } from "./view_cache.ts";

const log = getLogger(["payments", "store"]);

/** What one attempt of a change wants to commit, and the reply it then gives. */
export interface CommitPlan extends Omit<Reply, "replayed"> {
  /** Versionstamp checks (`versionstamp: null` = key must not exist). */
  checks: Deno.AtomicCheck[];
  /** Keys to write. */
  sets: { key: Deno.KvKey; value: unknown; expireIn?: number }[];
  /** Keys to delete. */
  deletes?: Deno.KvKey[];
  /**
   * True when every key under {@link VIEW_PREFIX} this plan writes is of a
   * resource the commit creates (no reader can have it cached, so the view
   * epoch stays). By default a plan writing such a key bumps the epoch.
   */
  newViews?: boolean;
}

/** Options of {@link PaymentsStore.change}. */
export interface ChangeOptions {
  /** Idempotency key (Request-Id header), if any. */
  requestId?: string;
  /** Operation fingerprint. */
  op: string;
  /**
   * The request body (parsed JSON): its digest is kept with the idempotency
   * record, and a repeat of the Request-Id with another body is refused.
   */
  body?: unknown;
  /**
   * Builds the plan from fresh reads; may throw a PaymentsError. Called again
   * after a conflict, with the number of the attempt (0 first).
   */
  plan: (attempt: number) => Promise<CommitPlan>;
}

/** When each kind of store failure was last logged (they come in floods). */
const lastLogged = new Map<string, number>();

/** Log a store failure at most once per 10 s per kind, with the count skipped. */
function warnStoreFailure(kind: string, message: string): void {
  const now = Date.now();
  const last = lastLogged.get(kind);
  if (last !== undefined && now - last < 10_000) return;
  lastLogged.set(kind, now);
  log.warn("store failure ({kind}): {message}; answered 503 (logged at most every 10 s)", {
    kind,
    message,
  });
}

/** SQLite refusing writes for lack of room or permission: the transaction was rolled back. */
const STORE_REFUSES_WRITES = /database or disk is full|readonly database/i;

/**
 * Rethrow a store failure as 503 PMT-6000 (retryable): a store that did not
 * answer in time (a write may then still be applied: its retry with the same
 * Request-Id replays the answer), a database another process kept locked,
 * or a disk that is full or read-only (nothing was written). Other errors
 * pass unchanged.
 */
function rethrowStoreFailure(err: unknown): never {
  if (err instanceof StoreTimeoutError) {
    warnStoreFailure("timeout", err.message);
    throw PaymentsError.system(
      "storage unavailable (no answer in time); a write may still be applied: " +
        "retry it with the same Request-Id",
      503,
    );
  }
  if (isDatabaseLocked(err)) {
    warnStoreFailure("locked", "the database stayed locked by another process");
    throw PaymentsError.system("storage busy (database locked); retry the request", 503);
  }
  if (err instanceof Error && STORE_REFUSES_WRITES.test(err.message)) {
    warnStoreFailure("refused", err.message);
    const refused = PaymentsError.system(
      `storage refuses writes (${err.message}); nothing was written: retry later`,
      503,
    );
    // Not a matter of a second: an operator has to make room.
    refused.headers = { "Retry-After": "30" };
    throw refused;
  }
  throw err;
}

/** Typed access to the payments keys of one Deno KV handle. */
export class PaymentsStore {
  /** The underlying KV handle (owned by the caller). */
  readonly kv: Deno.Kv;
  /** Attempts before giving up on a contended commit. */
  readonly maxAttempts: number;
  readonly #reads: ReadBatcher;
  readonly #commits: CommitBatcher;
  readonly #views: ViewCache;
  readonly #deadlineMs: number;
  readonly #tracing: StoreTracing | null;

  /**
   * Wrap a KV handle. Concurrent reads and independent commits share KV
   * round trips ({@link ReadBatcher}, {@link CommitBatcher});
   * `maxChangesPerCommit: 1` gives every change its own commit.
   */
  constructor(
    kv: Deno.Kv,
    options?: {
      maxAttempts?: number;
      maxChangesPerCommit?: number;
      maxChecksPerCommit?: number;
      /** How long a commit waits for a database locked by another process; default 5 s. */
      lockedWaitMs?: number;
      /** Longest wait for one store call (see `deadline.ts`); default 10 s. */
      deadlineMs?: number;
      /**
       * Spans of commits and replays (`tracing.ts`); default: Deno's
       * OpenTelemetry when it exports traces, else `null` (none).
       */
      tracing?: StoreTracing | null;
    },
  ) {
    this.kv = kv;
    this.maxAttempts = options?.maxAttempts ?? 200;
    const deadlineMs = options?.deadlineMs ?? DEFAULT_STORE_DEADLINE_MS;
    this.#deadlineMs = deadlineMs;
    this.#reads = new ReadBatcher(kv, undefined, deadlineMs);
    this.#commits = new CommitBatcher(kv, {
      maxChanges: options?.maxChangesPerCommit,
      maxChecks: options?.maxChecksPerCommit,
      lockedWaitMs: options?.lockedWaitMs,
      deadlineMs,
    });
    this.#views = new ViewCache(kv, VIEW_EPOCH_KEY, { deadlineMs });
    this.#tracing = options?.tracing === undefined ? STORE_TRACING : options.tracing;
  }

  /**
   * Read a key under {@link VIEW_PREFIX} through the view cache, as
   * `derive(value)`: as fresh as {@link get}, including writes of other
   * processes; null when absent. Every read of a key must use the same
   * `derive` (its result is what is cached).
   */
  getView<T>(key: Deno.KvKey, derive: (value: unknown) => T): Promise<T | null> {
    return this.#within(this.#views.get<T>(key, derive), "a read");
  }

  /** Read one key (concurrent reads share KV round trips, see {@link ReadBatcher}). */
  get<T>(key: Deno.KvKey): Promise<Deno.KvEntryMaybe<T>> {
    return this.#within(this.#reads.get<T>(key), "a read");
  }

  /**
   * Read a key that must exist: its entry, or 404 PMT-4000 naming the path
   * parameter `param` (e.g. `chargeId`) when it is absent.
   */
  async require<T>(key: Deno.KvKey, param: string): Promise<Deno.KvEntry<T>> {
    const e = await this.get<T>(key);
    if (e.versionstamp === null) throw PaymentsError.notFound(param);
    return e;
  }

  /**
   * The writes (guarded by versionstamp checks) that clear `default` on
   * every record under `prefix` that has it: a new default payment method
   * replaces the old one in the same commit.
   */
  async demoteDefaults<T extends { default: boolean; updated: string }>(
    prefix: Deno.KvKey,
    iso: string,
  ): Promise<Pick<CommitPlan, "checks" | "sets">> {
    const checks: Deno.AtomicCheck[] = [];
    const sets: CommitPlan["sets"] = [];
    for (const e of await this.entries<T>(prefix)) {
      if (!e.value.default) continue;
      checks.push(e);
      sets.push({ key: e.key, value: { ...e.value, default: false, updated: iso } });
    }
    return { checks, sets };
  }

  /** All values under a prefix, newest (highest key) first. */
  async listNewestFirst<T>(prefix: Deno.KvKey, limit = 1000): Promise<T[]> {
    const entries = await this.#list<T>(prefix, { reverse: true, limit });
    return entries.map((e) => e.value);
  }

  /** All entries under a prefix (with versionstamps), in key order. */
  entries<T>(prefix: Deno.KvKey, limit = 1000): Promise<Deno.KvEntry<T>[]> {
    return this.#list<T>(prefix, { limit });
  }

  /**
   * A store call as the request sees it, queue included: the batchers bound
   * each call they send, but a request queued behind slow calls would wait
   * for all of them. Past the deadline the request gets its 503; a change
   * still queued may yet be committed (the documented "outcome unknown").
   */
  #within<T>(call: Promise<T>, what: string): Promise<T> {
    return withDeadline(call, this.#deadlineMs, what).catch(rethrowStoreFailure);
  }

  #list<T>(prefix: Deno.KvKey, options: Deno.KvListOptions): Promise<Deno.KvEntry<T>[]> {
    const all = async () => {
      const out: Deno.KvEntry<T>[] = [];
      for await (const e of this.kv.list<T>({ prefix }, options)) out.push(e);
      return out;
    };
    return this.#within(all(), "a list");
  }

  /** Delete a key if present; true when it existed. */
  async deleteIfExists(key: Deno.KvKey): Promise<boolean> {
    for (let i = 0; i < this.maxAttempts; i++) {
      const cur = await this.get(key);
      if (cur.versionstamp === null) return false;
      const change = { checks: [cur], sets: [], deletes: [key] };
      if (await this.#commit(change, "delete", i + 1)) return true;
    }
    throw PaymentsError.system("storage contention", 503);
  }

  /**
   * Commit one change (see {@link CommitBatcher}); a store failure (locked,
   * no answer in time, no room) is a retryable 503 ({@link rethrowStoreFailure}).
   */
  #commit(change: AtomicChange, op: string, attempt: number): Promise<boolean> {
    if (this.#tracing !== null) {
      return this.#tracing.commit(op, attempt, () => this.#commitNow(change));
    }
    return this.#commitNow(change);
  }

  #commitNow(change: AtomicChange): Promise<boolean> {
    return this.#within(this.#commits.commit(change), "a commit");
  }

  /** The reply stored for a repeat of this request, if any (see {@link replayOf}). */
  #replay(key: Deno.KvKey, op: string, digest?: string): Promise<Reply | undefined> {
    if (this.#tracing !== null) {
      return this.#tracing.replay(op, () => this.#replayNow(key, op, digest));
    }
    return this.#replayNow(key, op, digest);
  }

  async #replayNow(key: Deno.KvKey, op: string, digest?: string): Promise<Reply | undefined> {
    const prior = await this.get<IdempotencyRecord>(key);
    return prior.value ? replayOf(prior.value, op, digest) : undefined;
  }

  /**
   * Apply a change atomically, with idempotency by `requestId`: a repeat of
   * the same request (operation and body) returns the stored response; the
   * same key on another operation or with another body is rejected with 400
   * `requestId is invalid.` ({@link replayOf}). Concurrent duplicates race on
   * the idempotency key: exactly one commits.
   *
   * The common case costs one KV round trip: the plan is committed with a
   * check that the idempotency key is new, and the idempotency record is read
   * only when that commit (or the plan) fails, to replay a repeat.
   */
  async change(opts: ChangeOptions): Promise<Reply> {
    const idemKey = opts.requestId ? keys.idempotency(opts.requestId) : undefined;
    const digest = idemKey ? requestDigest(opts.body) : undefined;
    for (let attempt = 0; attempt < this.maxAttempts; attempt++) {
      let plan: CommitPlan;
      try {
        plan = await opts.plan(attempt);
      } catch (err) {
        // A repeat (or a concurrent duplicate that committed first) may make
        // the operation invalid now (e.g. a second capture): the stored
        // response wins over our error. Not when the store itself failed
        // (503): reading it again would only wait a second time.
        const storeFailed = err instanceof PaymentsError && err.status === 503;
        if (idemKey && !storeFailed) {
          const prior = await this.#replay(idemKey, opts.op, digest);
          if (prior) return prior;
        }
        throw err;
      }
      const { checks, sets, deletes, newViews, ...reply } = plan;
      // Serialized once: stored for replays (a string is cheap to store) and sent.
      const json = reply.json ?? JSON.stringify(reply.body);
      const allChecks = [...checks];
      const allSets = [...sets];
      if (idemKey) {
        const record: IdempotencyRecord = {
          op: opts.op,
          digest,
          status: reply.status,
          json,
          ...(reply.headers ? { headers: reply.headers } : {}),
        };
        allChecks.push({ key: idemKey, versionstamp: null });
        allSets.push({ key: idemKey, value: record, expireIn: IDEMPOTENCY_TTL_MS });
      }
      const bumps = !newViews && sets.some((x) => x.key[0] === VIEW_PREFIX);
      const sums = bumps ? [{ key: VIEW_EPOCH_KEY, n: 1n }] : undefined;
      const change = { checks: allChecks, sets: allSets, deletes: deletes ?? [], sums };
      if (await this.#commit(change, opts.op, attempt + 1)) return { ...reply, json };
      if (idemKey) {
        const prior = await this.#replay(idemKey, opts.op, digest);
        if (prior) return prior;
      }
      if (attempt > 2) {
        await new Promise((r) => setTimeout(r, Math.min(attempt, 20) * Math.random()));
      }
    }
    log.warn("gave up after {attempts} contended attempts of {op}", {
      attempts: this.maxAttempts,
      op: opts.op,
    });
    throw PaymentsError.system("storage contention; retry the request", 503);
  }
}
