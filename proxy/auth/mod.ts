/**
 * Edge authentication (`upstream.<pool>.auth`): API keys kept as digests,
 * the JSON Web Key Set and JWT checks on `npm:jose`, the RFC 6750
 * challenge of a refusal, and the decision counters. The phase that
 * applies a pool's `auth` is `phases/authenticate.ts`.
 *
 * @example
 * ```ts
 * import { parseApiKeys } from "./mod.ts";
 * const parsed = parseApiKeys("k3y-0123456789abcdef\n");
 * if (parsed.ok) parsed.keys.matches("k3y-0123456789abcdef"); // true
 * ```
 *
 * @module
 */

export {
  ApiKeySet,
  type ApiKeysParse,
  MAX_API_KEY_LENGTH,
  MIN_API_KEY_LENGTH,
  parseApiKeys,
} from "./api_keys.ts";
export { type JwksParse, type JwtChecks, type JwtClaims, JwtKeys, parseJwks } from "./jwks.ts";
export {
  describeFailure,
  type JwtOutcome,
  type JwtPolicy,
  jwtPolicy,
  type JwtPolicySpec,
  verifyJwt,
} from "./jwt.ts";
export { type AuthFailure, authRefusal, type BearerError, challenge } from "./challenge.ts";
export {
  AuthCounters,
  type AuthDecisionCount,
  type AuthMethod,
  type AuthResult,
  PoolAuthCounts,
} from "./counters.ts";
// Types of other packages that the signatures above use.
export type { JwtAlgorithm } from "../config/types.ts";
export type { OutgoingResponse, RequestFailure } from "../server/mod.ts";
