/**
 * The failures a pool's `retries.retry_on` may name, besides backend
 * statuses (the configuration schema's vocabulary; no imports, so the
 * schema can use it):
 *
 * - `connect`: no connection could be made (unreachable, refused, no
 *   connection within `connect_timeout_ms`, the transport's queue full);
 * - `refused`: the backend refused the stream before any response head
 *   (HTTP/2 REFUSED_STREAM, or above a GOAWAY's last stream id);
 * - `reset`: the backend reset the stream or broke HTTP/2 after it may
 *   have begun (idempotent methods only);
 * - `timeout`: an attempt passed `per_try_timeout_ms` with time left in
 *   the request's deadline (idempotent methods only).
 *
 * @module
 */

/** See the module documentation. */
export const RETRY_ON_FAILURES = ["connect", "refused", "reset", "timeout"] as const;

/** One of {@link RETRY_ON_FAILURES}. */
export type RetryOnFailure = (typeof RETRY_ON_FAILURES)[number];
