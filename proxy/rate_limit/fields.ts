/**
 * The rate-limit fields of draft-ietf-httpapi-ratelimit-headers (Structured
 * Field lists, RFC 9651): `RateLimit-Policy` names the limit with its quota
 * `q` (the burst) and window `w` (seconds a bucket takes to fill from
 * empty), `RateLimit` the caller's remaining quota `r` and the seconds `t`
 * until it is whole again.
 *
 * @example
 * ```ts
 * policyField("api", 10, 5); // "\"api\";q=5;w=1"
 * rateLimitField("api", { remaining: 0, resetSeconds: 1 }); // "\"api\";r=0;t=1"
 * ```
 *
 * @module
 */

import type { RateDecision } from "./limiter.ts";

/** `RateLimit-Policy` of limit `name` (a token: no quoting needed inside the sf-string). */
export function policyField(name: string, requestsPerSecond: number, burst: number): string {
  return `"${name}";q=${burst};w=${Math.max(1, Math.ceil(burst / requestsPerSecond))}`;
}

/** `RateLimit` of limit `name` after `decision`. */
export function rateLimitField(
  name: string,
  decision: Pick<RateDecision, "remaining" | "resetSeconds">,
): string {
  return `"${name}";r=${decision.remaining};t=${decision.resetSeconds}`;
}
