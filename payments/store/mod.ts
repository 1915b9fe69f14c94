/**
 * The payments storage on Deno KV: typed keys, batched reads and commits,
 * a view cache, idempotency records and deadlines on every round trip. All
 * multi-key changes go through `kv.atomic()`, so an embedded SQLite KV and a
 * remote KV Connect store behave the same.
 *
 * @example
 * ```ts
 * import { PaymentsStore } from "./mod.ts";
 *
 * const store = new PaymentsStore(await Deno.openKv(":memory:"));
 * ```
 *
 * @module
 */

export { type ChangeOptions, type CommitPlan, PaymentsStore } from "./kv_store.ts";
export type { Reply } from "./reply.ts";
export { DEFAULT_STORE_DEADLINE_MS, StoreTimeoutError, withDeadline } from "./deadline.ts";
export { OtelStoreTracing, STORE_TRACING, type StoreTracing } from "./tracing.ts";
