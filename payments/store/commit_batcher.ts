/**
 * Group commit of independent atomic changes. Deno KV applies the commits of
 * a handle one after another, and on SQLite each one is a transaction with
 * its own WAL sync, so under load the commit itself, not its size, is the
 * cost. Changes made in the same turn of the event loop, or while a commit
 * is in flight, go out together as one `kv.atomic()` with all their checks
 * and mutations.
 *
 * Only changes on disjoint keys (no key checked or written by two of them)
 * share a commit, so a shared commit has the effect of committing them one
 * by one: each one's checks see the state before the commit, none of the
 * others' writes. When a shared commit fails (a check of one change failed)
 * or throws, each change is committed on its own to learn its own outcome.
 * A change's promise settles only once its commit is done, so an
 * acknowledged change is as durable as with `kv.atomic().commit()` alone.
 *
 * Several processes may share one SQLite file. SQLite lets one connection
 * write at a time, and Deno KV does not wait for the lock: a commit made
 * while another process commits fails with "database is locked", having
 * written nothing. Such a commit is tried again after a short random pause,
 * for up to {@link CommitBatcherOptions.lockedWaitMs}, before its changes
 * fail with that error ({@link isDatabaseLocked}).
 *
 * @example
 * ```ts
 * const kv = await Deno.openKv(":memory:");
 * const commits = new CommitBatcher(kv);
 * const ok = await commits.commit({
 *   checks: [{ key: ["a"], versionstamp: null }],
 *   sets: [{ key: ["a"], value: 1 }],
 *   deletes: [],
 * });
 * ```
 *
 * @module
 */
import { BatchQueue } from "./batch_queue.ts";
import { DEFAULT_STORE_DEADLINE_MS, StoreTimeoutError, withDeadline } from "./deadline.ts";

/** One atomic change: its checks and mutations. */
export interface AtomicChange {
  /** Versionstamp checks (`versionstamp: null` = key must not exist). */
  checks: readonly Deno.AtomicCheck[];
  /** Keys to write. */
  sets: readonly { key: Deno.KvKey; value: unknown; expireIn?: number }[];
  /** Keys to delete. */
  deletes: readonly Deno.KvKey[];
  /**
   * Counters to add to (`kv.atomic().sum`). A sum checks nothing and
   * commutes with other sums, so changes summing into the same key still
   * share a commit; no change may check or write a key it sums into.
   */
  sums?: readonly { key: Deno.KvKey; n: bigint }[];
}

/** Limits of one shared commit. */
export interface CommitBatcherOptions {
  /** Most changes per commit; default 16 (1 turns batching off). */
  maxChanges?: number;
  /** Most checks per commit; default 100 (the local Deno KV limit). */
  maxChecks?: number;
  /** Most mutations per commit; default 1000 (the Deno KV limit). */
  maxMutations?: number;
  /** Shared commits in flight at once before changes wait; default 1. */
  maxInFlight?: number;
  /** How long a commit keeps trying while the database is locked; default 5,000 ms. */
  lockedWaitMs?: number;
  /**
   * Longest wait for one commit call ({@link withDeadline}); default
   * {@link DEFAULT_STORE_DEADLINE_MS}. Past it the changes fail with a
   * `StoreTimeoutError`, and may still be applied later.
   */
  deadlineMs?: number;
}

/**
 * True for the error of a commit that found the SQLite database locked by
 * another connection (another process on the same file); nothing was written.
 */
export function isDatabaseLocked(err: unknown): boolean {
  return err instanceof Error && /database is locked/i.test(err.message);
}

interface Pending {
  change: AtomicChange;
  keys: string[];
  resolve: (ok: boolean) => void;
  reject: (err: unknown) => void;
}

/**
 * A string naming a KV key: equal keys get equal names. Different keys may
 * share a name (`["1"]` and `[1]`); such changes are only kept apart
 * needlessly, never committed together wrongly.
 */
export function keyId(key: Deno.KvKey): string {
  return key.join("\u0000");
}

/** The keys a change checks or writes (a key may appear twice). */
function keysOf(c: AtomicChange): string[] {
  const out: string[] = [];
  for (const x of c.checks) out.push(keyId(x.key));
  for (const x of c.sets) out.push(keyId(x.key));
  for (const k of c.deletes) out.push(keyId(k));
  return out;
}

function overlaps(keys: readonly string[], used: ReadonlySet<string>): boolean {
  for (const k of keys) if (used.has(k)) return true;
  return false;
}

function addTo(atomic: Deno.AtomicOperation, c: AtomicChange): void {
  for (const x of c.checks) atomic.check(x);
  for (const s of c.sets) {
    atomic.set(s.key, s.value, s.expireIn ? { expireIn: s.expireIn } : undefined);
  }
  for (const k of c.deletes) atomic.delete(k);
  if (c.sums) { for (const x of c.sums) atomic.sum(x.key, x.n); }
}

/** Commits atomic changes of one KV handle, sharing commits under load. */
export class CommitBatcher {
  readonly #kv: Deno.Kv;
  readonly #maxChanges: number;
  #maxChecks: number;
  readonly #maxMutations: number;
  readonly #lockedWaitMs: number;
  readonly #deadlineMs: number;
  readonly #queue: BatchQueue<Pending, Pending[]>;

  /** Wrap a KV handle. */
  constructor(kv: Deno.Kv, options: CommitBatcherOptions = {}) {
    this.#kv = kv;
    this.#maxChanges = Math.max(1, options.maxChanges ?? 16);
    this.#queue = new BatchQueue({
      maxInFlight: options.maxInFlight ?? 1,
      fullAt: this.#maxChanges,
      take: (queue) => this.#take(queue),
      run: (batch) => this.#run(batch),
    });
    this.#maxChecks = options.maxChecks ?? 100;
    this.#maxMutations = options.maxMutations ?? 1000;
    this.#lockedWaitMs = options.lockedWaitMs ?? 5_000;
    this.#deadlineMs = options.deadlineMs ?? DEFAULT_STORE_DEADLINE_MS;
  }

  /** Commit one change; true when committed, false when one of its checks failed. */
  commit(change: AtomicChange): Promise<boolean> {
    if (this.#maxChanges === 1) return this.#commitAlone(change);
    return new Promise<boolean>((resolve, reject) => {
      this.#queue.add({ change, keys: keysOf(change), resolve, reject });
    });
  }

  #commitAlone(change: AtomicChange): Promise<boolean> {
    return this.#commitAll([change]);
  }

  /** One `kv.atomic()` of all the changes; tried again while the database is locked. */
  async #commitAll(changes: readonly AtomicChange[]): Promise<boolean> {
    const start = performance.now();
    for (let attempt = 0;; attempt++) {
      const atomic = this.#kv.atomic();
      for (const c of changes) addTo(atomic, c);
      try {
        return (await withDeadline(atomic.commit(), this.#deadlineMs, "a commit")).ok;
      } catch (err) {
        if (!isDatabaseLocked(err) || performance.now() - start >= this.#lockedWaitMs) throw err;
      }
      // Another process holds the lock for about one commit: a few ms.
      const pause = Math.random() * Math.min(1 + 2 * attempt, 20);
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }

  /** The next batch of the queue: disjoint keys, within the limits, in order; and the rest. */
  #take(queue: Pending[]): [Pending[], Pending[]] {
    const batch: Pending[] = [];
    const rest: Pending[] = [];
    const used = new Set<string>();
    let checks = 0;
    let mutations = 0;
    let i = 0;
    for (; i < queue.length && batch.length < this.#maxChanges; i++) {
      const p = queue[i];
      const c = p.change;
      const m = c.sets.length + c.deletes.length + (c.sums?.length ?? 0);
      const fits = batch.length === 0 || (
        checks + c.checks.length <= this.#maxChecks &&
        mutations + m <= this.#maxMutations &&
        !overlaps(p.keys, used)
      );
      if (!fits) {
        rest.push(p);
        // A later change on the same keys must not overtake this one.
        for (const k of p.keys) used.add(k);
        continue;
      }
      batch.push(p);
      checks += c.checks.length;
      mutations += m;
      for (const k of p.keys) used.add(k);
    }
    // A full batch: the others wait, in order, without being looked at.
    for (; i < queue.length; i++) rest.push(queue[i]);
    return [batch, rest];
  }

  async #run(batch: Pending[]): Promise<void> {
    if (batch.length === 1) {
      const p = batch[0];
      await this.#commitAlone(p.change).then(p.resolve, p.reject);
      return;
    }
    let shared: boolean;
    let threw = false;
    try {
      shared = await this.#commitAll(batch.map((p) => p.change));
    } catch (err) {
      if (isDatabaseLocked(err) || err instanceof StoreTimeoutError) {
        // Locked for the whole wait, or no answer: committing each alone
        // would wait again.
        for (const p of batch) p.reject(err);
        return;
      }
      shared = false;
      threw = true;
    }
    if (shared) {
      for (const p of batch) p.resolve(true);
      return;
    }
    // One of the changes failed a check (or the whole was refused): settle
    // each change by its own commit.
    const alone = await Promise.allSettled(batch.map((p) => this.#commitAlone(p.change)));
    alone.forEach((r, i) => {
      if (r.status === "fulfilled") batch[i].resolve(r.value);
      else batch[i].reject(r.reason);
    });
    if (threw && alone.every((r) => r.status === "fulfilled")) {
      // The store refused the shared commit although each change was fine
      // (a remote store with lower limits): share fewer checks from now on.
      const checks = batch.reduce((n, p) => n + p.change.checks.length, 0);
      this.#maxChecks = Math.max(1, Math.min(this.#maxChecks, Math.floor(checks / 2)));
    }
  }
}
