/**
 * Rate limiting (`rate_limits`): the limiter interface and its in-memory
 * GCRA, the keys limits count by, the IETF rate-limit fields, and the
 * counters. The phase that applies a pool's limit is `phases/rate_limit.ts`.
 *
 * @module
 */

export { GcraLimiter, type GcraOptions, type RateDecision, type RateLimiter } from "./limiter.ts";
export {
  bearerKey,
  clientAddress,
  type ClientKeyContext,
  compileKey,
  type KeyFunction,
  MISSING_KEY,
} from "./key.ts";
// Types of other packages that this package's signatures use.
export type { IncomingRequest } from "../server/mod.ts";
export type { PeerAddr, PrefixLengths } from "../quic/mod.ts";
export type { RequestHead } from "../http/mod.ts";
export { policyField, rateLimitField } from "./fields.ts";
export { type LimitCounts, RateLimitCounters } from "./counters.ts";
