/**
 * A bearer JWT checked against a pool's `auth.jwt`: the signature, `alg`,
 * `exp`, `nbf`, `iss` and `aud` by `jose`'s `jwtVerify` (never a check of
 * our own), then the pool's `required_claims`. A token that fails the
 * first part is `invalid_token` (401); a valid token that lacks a required
 * claim is `insufficient_scope` (403), as RFC 6750 §3.1 names them.
 *
 * A token must carry `exp`: one that never expires is refused.
 *
 * @example
 * ```ts
 * import type { JwtKeys } from "./jwks.ts";
 * declare const keys: JwtKeys;
 * declare const token: string;
 *
 * const policy = jwtPolicy({ keys, algorithms: ["RS256"], issuers: [], audiences: ["api"], clockSkewS: 30, requiredClaims: {} });
 * const outcome = await verifyJwt(token, policy);
 * if (outcome.ok) outcome.claims.sub;
 * ```
 *
 * @module
 */

import { errors } from "jose";
import type { JwtAlgorithm } from "../config/types.ts";
import type { JwtChecks, JwtClaims, JwtKeys } from "./jwks.ts";

/** What a pool's `auth.jwt` asks of a token. */
export interface JwtPolicySpec {
  /** The key set's resolver. */
  keys: JwtKeys;
  /** Accepted algorithms. */
  algorithms: readonly JwtAlgorithm[];
  /** Accepted issuers; empty: any. */
  issuers: readonly string[];
  /** Accepted audiences (one must match); empty: any. */
  audiences: readonly string[];
  /** Leeway on the time claims, in seconds. */
  clockSkewS: number;
  /** Claim name → the value it must hold, or `null` for any value. */
  requiredClaims: Readonly<Record<string, string | null>>;
}

/** A compiled {@link JwtPolicySpec}. */
export interface JwtPolicy {
  /** The key set's resolver. */
  readonly keys: JwtKeys;
  /** What is checked besides the signature. */
  readonly checks: JwtChecks;
  /** Required claims, as pairs. */
  readonly required: ReadonlyArray<readonly [string, string | null]>;
}

/** The outcome of {@link verifyJwt}. */
export type JwtOutcome =
  | { ok: true; claims: JwtClaims }
  | { ok: false; error: "invalid_token" | "insufficient_scope"; description: string };

/** Compiles a policy once per configuration. */
export function jwtPolicy(spec: JwtPolicySpec): JwtPolicy {
  return {
    keys: spec.keys,
    checks: {
      algorithms: [...spec.algorithms],
      issuers: spec.issuers.length > 0 ? [...spec.issuers] : undefined,
      audiences: spec.audiences.length > 0 ? [...spec.audiences] : undefined,
      clockSkewS: spec.clockSkewS,
    },
    required: Object.entries(spec.requiredClaims),
  };
}

/** Verifies `token` and checks its required claims. */
export async function verifyJwt(token: string, policy: JwtPolicy): Promise<JwtOutcome> {
  let claims: JwtClaims;
  try {
    claims = await policy.keys.verify(token, policy.checks);
  } catch (err) {
    return { ok: false, error: "invalid_token", description: describeFailure(err) };
  }
  for (const [name, value] of policy.required) {
    if (!holds(claims[name], value)) {
      return {
        ok: false,
        error: "insufficient_scope",
        description: value === null
          ? `the token has no ${name} claim`
          : `the token's ${name} claim does not hold ${value}`,
      };
    }
  }
  return { ok: true, claims };
}

/**
 * Whether a claim holds `value`: equal to it, a list holding it, or a
 * space-separated string holding it (`scope`, RFC 8693 §4.2); `null`:
 * present at all.
 */
function holds(claim: unknown, value: string | null): boolean {
  if (claim === undefined || claim === null) return false;
  if (value === null) return true;
  if (Array.isArray(claim)) return claim.includes(value);
  if (typeof claim === "string") return claim === value || claim.split(" ").includes(value);
  return String(claim) === value;
}

/**
 * A short, fixed description of why `jose` refused a token, for
 * `error_description` and the log: it names the check, never echoes the
 * token or a value taken from it.
 */
export function describeFailure(err: unknown): string {
  if (err instanceof errors.JWTExpired) return "the token has expired";
  if (err instanceof errors.JWTClaimValidationFailed) {
    const claim = /^[a-z]{2,3}$/.test(err.claim) ? err.claim : "a";
    return err.reason === "check_failed" && claim === "nbf"
      ? "the token is not valid yet"
      : err.reason === "missing"
      ? `the token has no ${claim} claim`
      : `the token's ${claim} claim is not accepted`;
  }
  if (err instanceof errors.JOSEAlgNotAllowed) return "the token's algorithm is not accepted";
  if (err instanceof errors.JWKSNoMatchingKey) return "no key of the key set matches the token";
  if (err instanceof errors.JWKSMultipleMatchingKeys) {
    return "several keys of the key set match the token";
  }
  if (err instanceof errors.JWSSignatureVerificationFailed) {
    return "the token's signature does not verify";
  }
  if (err instanceof errors.JOSENotSupported) return "the token's algorithm is not supported";
  return "the token is malformed";
}
