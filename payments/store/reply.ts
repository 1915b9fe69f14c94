/**
 * The one reply type of the payments use cases: what a service method
 * answers, what a store change commits and replays, and what the HTTP layer
 * sends.
 *
 * @module
 */

/** A response to send. */
export interface Reply {
  /** HTTP status. */
  status: number;
  /** JSON body (may be left undefined when `json` is given). */
  body: unknown;
  /** The body already serialized (JSON text), when known: sent as is. */
  json?: string;
  /** Extra response headers. */
  headers?: Record<string, string>;
  /** True when replayed from an idempotency record (sent as `Idempotent-Replayed: true`). */
  replayed?: boolean;
}
