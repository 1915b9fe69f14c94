/**
 * Deno KV persistence of the payments sandbox. Every change is one
 * `kv.atomic()` commit guarded by versionstamp checks, so the same code is
 * correct on the embedded SQLite store and on a remote KV Connect store.
 *
 * Key layout:
 * `["card", customer, id]`, `["bank", customer, id]`, `["charge", id]`,
 * `["charge_req", requestId]` → charge id, `["refund", charge, id]`,
 * `["void", id]`, `["echeck", id]`, `["token", id]` (15 min),
 * `["idem", requestId]` → stored response (24 h).
 *
 * @module
 */
import { getLogger } from "@logtape/logtape";
import { PaymentsError } from "../domain/errors.ts";

const log = getLogger(["payments", "store"]);

/** How long idempotency records are kept. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/** A stored response, replayed for a repeated Request-Id. */
export interface IdempotencyRecord {
  /** Operation fingerprint (name plus path identifiers). */
  op: string;
  /** HTTP status of the original response. */
  status: number;
  /** JSON body of the original response. */
  body: unknown;
  /** Extra response headers of the original response. */
  headers?: Record<string, string>;
}

/** What one attempt of a change wants to commit. */
export interface CommitPlan {
  /** Versionstamp checks (`versionstamp: null` = key must not exist). */
  checks: Deno.AtomicCheck[];
  /** Keys to write. */
  sets: { key: Deno.KvKey; value: unknown; expireIn?: number }[];
  /** Keys to delete. */
  deletes?: Deno.KvKey[];
  /** Response status. */
  status: number;
  /** Response body. */
  body: unknown;
  /** Extra response headers. */
  headers?: Record<string, string>;
}

/** Result of a change: the response to send. */
export interface CommitResult {
  /** HTTP status. */
  status: number;
  /** JSON body. */
  body: unknown;
  /** Extra response headers. */
  headers?: Record<string, string>;
  /** True when replayed from an idempotency record. */
  replayed: boolean;
}

/** Options of {@link PaymentsStore.change}. */
export interface ChangeOptions {
  /** Idempotency key (Request-Id header), if any. */
  requestId?: string;
  /** Operation fingerprint. */
  op: string;
  /** Builds the plan from fresh reads; may throw a PaymentsError. Called again after a conflict. */
  plan: () => Promise<CommitPlan>;
}

/** Typed access to the payments keys of one Deno KV handle. */
export class PaymentsStore {
  /** The underlying KV handle (owned by the caller). */
  readonly kv: Deno.Kv;
  /** Attempts before giving up on a contended commit. */
  readonly maxAttempts: number;

  /** Wrap a KV handle. */
  constructor(kv: Deno.Kv, options?: { maxAttempts?: number }) {
    this.kv = kv;
    this.maxAttempts = options?.maxAttempts ?? 200;
  }

  /** Read one key. */
  get<T>(key: Deno.KvKey): Promise<Deno.KvEntryMaybe<T>> {
    return this.kv.get<T>(key);
  }

  /** All values under a prefix, newest (highest key) first. */
  async listNewestFirst<T>(prefix: Deno.KvKey, limit = 1000): Promise<T[]> {
    const out: T[] = [];
    for await (const e of this.kv.list<T>({ prefix }, { reverse: true, limit })) {
      out.push(e.value);
    }
    return out;
  }

  /** All entries under a prefix (with versionstamps), in key order. */
  async entries<T>(prefix: Deno.KvKey, limit = 1000): Promise<Deno.KvEntry<T>[]> {
    const out: Deno.KvEntry<T>[] = [];
    for await (const e of this.kv.list<T>({ prefix }, { limit })) out.push(e);
    return out;
  }

  /** Delete a key if present; true when it existed. */
  async deleteIfExists(key: Deno.KvKey): Promise<boolean> {
    for (let i = 0; i < this.maxAttempts; i++) {
      const cur = await this.kv.get(key);
      if (cur.versionstamp === null) return false;
      const res = await this.kv.atomic().check(cur).delete(key).commit();
      if (res.ok) return true;
    }
    throw PaymentsError.system("storage contention", 503);
  }

  async #replay(key: Deno.KvKey, op: string): Promise<CommitResult | undefined> {
    const prior = await this.kv.get<IdempotencyRecord>(key);
    if (!prior.value) return undefined;
    if (prior.value.op !== op) throw PaymentsError.invalid("requestId");
    return { ...prior.value, replayed: true };
  }

  /**
   * Apply a change atomically, with idempotency by `requestId`: a repeat of
   * the same operation returns the stored response; the same key on another
   * operation is rejected with 400 `requestId is invalid.`. Concurrent
   * duplicates race on the `["idem", requestId]` key: exactly one commits.
   */
  async change(opts: ChangeOptions): Promise<CommitResult> {
    const idemKey: Deno.KvKey | undefined = opts.requestId ? ["idem", opts.requestId] : undefined;
    for (let attempt = 0; attempt < this.maxAttempts; attempt++) {
      if (idemKey) {
        const prior = await this.#replay(idemKey, opts.op);
        if (prior) return prior;
      }
      let plan: CommitPlan;
      try {
        plan = await opts.plan();
      } catch (err) {
        // A concurrent duplicate may have committed between our idempotency
        // read and the plan's reads (e.g. the first capture made a second
        // one invalid): its stored response wins over our error.
        if (idemKey) {
          const prior = await this.#replay(idemKey, opts.op);
          if (prior) return prior;
        }
        throw err;
      }
      const atomic = this.kv.atomic();
      for (const c of plan.checks) atomic.check(c);
      for (const s of plan.sets) {
        atomic.set(s.key, s.value, s.expireIn ? { expireIn: s.expireIn } : undefined);
      }
      for (const d of plan.deletes ?? []) atomic.delete(d);
      if (idemKey) {
        const record: IdempotencyRecord = {
          op: opts.op,
          status: plan.status,
          body: plan.body,
          ...(plan.headers ? { headers: plan.headers } : {}),
        };
        atomic.check({ key: idemKey, versionstamp: null });
        atomic.set(idemKey, record, { expireIn: IDEMPOTENCY_TTL_MS });
      }
      const res = await atomic.commit();
      if (res.ok) {
        return { status: plan.status, body: plan.body, headers: plan.headers, replayed: false };
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
