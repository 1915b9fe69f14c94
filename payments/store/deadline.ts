/**
 * Deadlines on store calls. Deno's KV Connect client retries a remote store
 * that does not answer for as long as it takes, so without a deadline a
 * request waits as long as the store is down; on SQLite a call only waits
 * this long on a stalled disk. {@link withDeadline} bounds the wait: the call
 * itself is not cancelled (Deno KV cannot), so a write that times out may
 * still be applied later. Callers answer such a write as "outcome unknown":
 * retrying it with the same Request-Id replays its answer, whichever way it
 * went.
 *
 * @module
 */

import { deadline } from "../../shared/deadline.ts";

/** Default deadline of one store call. */
export const DEFAULT_STORE_DEADLINE_MS = 10_000;

/** A store call that did not settle within its deadline. */
export class StoreTimeoutError extends Error {
  /** Build the error for a call described as `what`. */
  constructor(what: string, ms: number) {
    super(`the store did not answer ${what} within ${ms} ms`);
    this.name = "StoreTimeoutError";
  }
}

/** `p`, or a {@link StoreTimeoutError} once `ms` pass first (`Infinity`: `p` itself). */
export function withDeadline<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return deadline(p, ms, () => new StoreTimeoutError(what, ms));
}
