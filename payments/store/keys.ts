/**
 * The Deno KV key layout of the payments sandbox, in one place: every key
 * the service and the store read or write is built here.
 *
 * | key | value |
 * |---|---|
 * | `["card", customer, id]` | card record |
 * | `["bank", customer, id]` | bank account record |
 * | `["charge", id]` | charge record (read by get-charge through the view cache) |
 * | `["view_epoch"]` | counter every commit changing an existing charge adds 1 to |
 * | `["charge_req", requestId]` | id of the charge that Request-Id created (void addresses it) |
 * | `["refund", charge, id]` | refund record |
 * | `["void", id]` | void record |
 * | `["echeck", id]` | e-check record |
 * | `["echeck_refund", echeckId, id]` | refund record of an e-check |
 * | `["token", id]` | one-time token (expires after 15 min) |
 * | `["idem", requestId]` | idempotency record: the response to replay (24 h) |
 * | `["charge_view", 1, id]` | written by an earlier version; deleted when the charge changes |
 *
 * Ids are time-ordered, so key order under a prefix is creation order.
 *
 * @example
 * ```ts
 * const kv = await Deno.openKv(":memory:");
 * const e = await kv.get(keys.charge("ch_1"));
 * ```
 *
 * @module
 */

/** First key part of the values read through the view cache (the charges). */
export const VIEW_PREFIX = "charge";

/** The counter validating cached views (see `view_cache.ts`). */
export const VIEW_EPOCH_KEY: Deno.KvKey = ["view_epoch"];

/** Builders of every payments key. */
export const keys = {
  /** One stored card of a customer. */
  card: (customerId: string, id: string): Deno.KvKey => ["card", customerId, id],
  /** Prefix of a customer's cards. */
  cards: (customerId: string): Deno.KvKey => ["card", customerId],
  /** One stored bank account of a customer. */
  bankAccount: (customerId: string, id: string): Deno.KvKey => ["bank", customerId, id],
  /** Prefix of a customer's bank accounts. */
  bankAccounts: (customerId: string): Deno.KvKey => ["bank", customerId],
  /** A charge. */
  charge: (id: string): Deno.KvKey => [VIEW_PREFIX, id],
  /** The charge a create-charge Request-Id made (the void addresses it). */
  chargeRequest: (requestId: string): Deno.KvKey => ["charge_req", requestId],
  /** One refund of a charge. */
  refund: (chargeId: string, id: string): Deno.KvKey => ["refund", chargeId, id],
  /** Prefix of a charge's refunds. */
  refunds: (chargeId: string): Deno.KvKey => ["refund", chargeId],
  /** A void record. */
  void: (id: string): Deno.KvKey => ["void", id],
  /** An e-check. */
  echeck: (id: string): Deno.KvKey => ["echeck", id],
  echeckRefund: (echeckId: string, id: string): Deno.KvKey => ["echeck_refund", echeckId, id],
  /** A one-time token. */
  token: (id: string): Deno.KvKey => ["token", id],
  /** The idempotency record of a Request-Id. */
  idempotency: (requestId: string): Deno.KvKey => ["idem", requestId],
  /**
   * The response of a charge that an earlier version stored beside it. It is
   * no longer read or written; a change of the charge deletes it, so that a
   * process of that version sharing the store (a rolling upgrade) does not
   * answer from a stale copy.
   */
  legacyChargeView: (id: string): Deno.KvKey => ["charge_view", 1, id],
} as const;
