/**
 * Exponential backoff with full jitter between retries (the AWS
 * architecture blog's "full jitter", as Envoy backs off): the n-th retry
 * (0: the first) waits a uniformly random time in
 * `[0, min(backoff_max_ms, backoff_base_ms × 2^n))`, so retries that failed
 * together do not come back together.
 *
 * @example
 * ```ts
 * const ms = backoffDelay(2, 25, 250, Math.random); // in [0, 100)
 * const stillWanted = await pause(ms, AbortSignal.timeout(1000));
 * ```
 *
 * @module
 */

/**
 * The wait before retry `n` (0: the first), in whole milliseconds: full
 * jitter under `min(maxMs, baseMs × 2^n)`; 0 when `baseMs` is 0.
 */
export function backoffDelay(
  n: number,
  baseMs: number,
  maxMs: number,
  random: () => number,
): number {
  if (baseMs <= 0) return 0;
  const cap = Math.min(maxMs, baseMs * 2 ** Math.min(n, 30));
  return Math.floor(random() * cap);
}

/**
 * Waits `ms`; resolves `true` then, or `false` at once when `signal`
 * aborts first (the client left: the retry is no longer wanted).
 */
export function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
