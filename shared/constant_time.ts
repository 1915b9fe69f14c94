/**
 * Secret comparison in time independent of where the strings differ (bearer
 * tokens of the payments API and of the proxy's admin API).
 *
 * @module
 */

/** True when `a` and `b` are equal, compared code unit by code unit in constant time. */
export function constantTimeEqual(a: string, b: string): boolean {
  const n = Math.max(a.length, b.length);
  let diff = a.length ^ b.length;
  // charCodeAt past the end is NaN, and NaN | 0 is 0.
  for (let i = 0; i < n; i++) diff |= (a.charCodeAt(i) | 0) ^ (b.charCodeAt(i) | 0);
  return diff === 0;
}
