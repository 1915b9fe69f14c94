/**
 * Summary statistics of the benchmarks of both services (`bench/run.ts`,
 * `bench/latency_client.ts`, `payments/bench.ts`).
 *
 * @module
 */

/** The `q` quantile (0..1) of ascending `sorted` values (nearest rank); NaN when empty. */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil(q * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

/** Median of the values (the mean of the middle two for an even count); NaN when empty. */
export function median(values: readonly number[]): number {
  const s = [...values].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}
