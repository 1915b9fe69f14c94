/**
 * Phase 2c, authenticate: a pool's `auth` applied to each request it is
 * routed, after its rate limit (a cheap check guards the dearer one) and
 * before the connection's share of the pool is claimed and a backend
 * selected: a refused request is answered here (`auth/challenge.ts`: 401
 * or 403) and reaches no backend.
 *
 * Which credential is judged:
 *
 * 1. with `api_keys`, the key field when the request carries it (two of
 *    them: `invalid_request`); a wrong key is `invalid_token`, whatever
 *    else the request carries;
 * 2. else, with `jwt`, `Authorization: Bearer <JWT>` (`auth/jwt.ts`);
 * 3. neither: 401 without an error code (RFC 6750 §3.1).
 *
 * An admitted request goes on with the fields of `jwt.forward_claims` set
 * from its token's claims; copies of those fields sent by the client are
 * always removed (whichever credential admitted it), so a backend can
 * trust them. With `forward_credentials: false` the credential fields
 * (`authorization`, the key field) are removed too. A pool without `auth`
 * has `auth: null` and its requests do no work here.
 *
 * @example
 * ```ts
 * import type { IncomingRequest } from "../server/types.ts";
 * import type { PoolContext } from "./pool.ts";
 * declare const req: IncomingRequest;
 * declare const pool: PoolContext;
 *
 * const auth = pool.auth;
 * if (auth !== null) {
 *   const decided = await authenticate(req, auth);
 *   if (!decided.ok) decided.response.status; // 401 or 403
 * }
 * ```
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import { bearerToken } from "../../shared/bearer.ts";
import { ApiKeySet } from "../auth/api_keys.ts";
import { type JwtClaims, JwtKeys } from "../auth/jwks.ts";
import { type AuthFailure, authRefusal } from "../auth/challenge.ts";
import type { AuthCounters, AuthMethod, AuthResult, PoolAuthCounts } from "../auth/counters.ts";
import { type JwtPolicy, jwtPolicy, verifyJwt } from "../auth/jwt.ts";
import type { AuthConfig } from "../config/types.ts";
import type { ConfigSecrets } from "../config/secrets.ts";
import { fieldValueError } from "../http/mod.ts";
import type { IncomingRequest, OutgoingResponse } from "../server/types.ts";

const log = getLogger(["proxy", "auth"]);

/** A pool's `auth`, compiled with its keys. */
export interface PoolAuth {
  /** The pool (the challenge's realm). */
  readonly pool: string;
  /** The key field and the keys; `null` without `api_keys`. */
  readonly apiKeys: { readonly header: string; readonly keys: ApiKeySet } | null;
  /** The JWT policy; `null` without `jwt`. */
  readonly jwt: JwtPolicy | null;
  /** Claim → field, of `jwt.forward_claims`. */
  readonly forwardClaims: ReadonlyArray<readonly [string, string]>;
  /** Fields removed from every admitted request. */
  readonly strip: ReadonlySet<string>;
  /** The pool's decisions. */
  readonly counts: PoolAuthCounts;
}

/** A request admitted (with the fields the backend is sent), or the answer refusing it. */
export type AuthDecision =
  | { ok: true; req: IncomingRequest }
  | { ok: false; response: OutgoingResponse };

/**
 * Compiles pool `name`'s `auth` (`null` without one) with the keys
 * `secrets` holds. Keys missing from `secrets` (a configuration not loaded
 * from its files) refuse every request: the pool fails closed.
 */
export function compilePoolAuth(
  name: string,
  auth: AuthConfig | undefined,
  secrets: ConfigSecrets,
  counters: AuthCounters,
): PoolAuth | null {
  if (auth === undefined) return null;
  const keys = auth.api_keys === undefined ? undefined : secrets.apiKeys.get(name);
  const jwtKeys = auth.jwt === undefined ? undefined : secrets.jwtKeys.get(name);
  if ((auth.api_keys !== undefined && keys === undefined) || (auth.jwt && !jwtKeys)) {
    log.error("pool {pool}: auth keys were not loaded; every request is refused", { pool: name });
  }
  const forwardClaims = Object.entries(auth.jwt?.forward_claims ?? {});
  const strip = new Set(forwardClaims.map(([, field]) => field));
  if (!auth.forward_credentials) {
    if (auth.api_keys !== undefined) strip.add(auth.api_keys.header);
    if (auth.jwt !== undefined) strip.add("authorization");
  }
  return {
    pool: name,
    apiKeys: auth.api_keys === undefined
      ? null
      : { header: auth.api_keys.header, keys: keys ?? NO_KEYS },
    jwt: auth.jwt === undefined ? null : jwtPolicy({
      keys: jwtKeys ?? NO_JWT_KEYS,
      algorithms: auth.jwt.algorithms,
      issuers: auth.jwt.issuers,
      audiences: auth.jwt.audiences,
      clockSkewS: auth.jwt.clock_skew_s,
      requiredClaims: auth.jwt.required_claims,
    }),
    forwardClaims,
    strip,
    counts: counters.of(name),
  };
}

/** Keys that match nothing (a pool whose keys were not loaded). */
const NO_KEYS = new ApiKeySet(new Map());
const NO_JWT_KEYS = new JwtKeys(0, () => Promise.reject(new Error("no key set loaded")));

/** Judges `req` by `auth` (synchronous for an API key, a promise for a JWT). */
export function authenticate(
  req: IncomingRequest,
  auth: PoolAuth,
): AuthDecision | Promise<AuthDecision> {
  const fields = req.head.fields;
  if (auth.apiKeys !== null) {
    const given = valuesOf(fields, auth.apiKeys.header);
    if (given.length > 0) return judgeApiKey(req, auth, auth.apiKeys, given);
  }
  if (auth.jwt !== null) {
    const given = valuesOf(fields, "authorization");
    if (given.length > 0) return judgeBearer(req, auth, auth.jwt, given);
  }
  return refused(req, auth, "none", "missing", {
    description: auth.apiKeys === null
      ? "a bearer token is required"
      : auth.jwt === null
      ? `an API key is required in the ${auth.apiKeys.header} field`
      : `an API key (${auth.apiKeys.header}) or a bearer token is required`,
  });
}

function judgeApiKey(
  req: IncomingRequest,
  auth: PoolAuth,
  apiKeys: NonNullable<PoolAuth["apiKeys"]>,
  given: readonly string[],
): AuthDecision {
  if (given.length > 1) {
    return refused(req, auth, "api_key", "invalid_request", {
      error: "invalid_request",
      description: `the request carries more than one ${apiKeys.header} field`,
    });
  }
  if (!apiKeys.keys.matches(given[0])) {
    return refused(req, auth, "api_key", "invalid_token", {
      error: "invalid_token",
      description: "the API key is not accepted",
    });
  }
  auth.counts.count("api_key", "allowed");
  return { ok: true, req: forwarded(req, auth, undefined) };
}

async function judgeBearer(
  req: IncomingRequest,
  auth: PoolAuth,
  policy: JwtPolicy,
  given: readonly string[],
): Promise<AuthDecision> {
  if (given.length > 1) {
    return refused(req, auth, "jwt", "invalid_request", {
      error: "invalid_request",
      description: "the request carries more than one authorization field",
    });
  }
  const token = bearerToken(given[0]);
  if (token === null) {
    // Another scheme (Basic, …) is no credential of this pool (RFC 6750 §3.1);
    // `Bearer` without one token is a malformed request.
    return /^bearer(\s|$)/i.test(given[0])
      ? refused(req, auth, "jwt", "invalid_request", {
        error: "invalid_request",
        description: "the authorization field must be Bearer and one token",
      })
      : refused(req, auth, "none", "missing", {
        description: "a bearer token is required",
      });
  }
  const outcome = await verifyJwt(token, policy);
  if (!outcome.ok) {
    return refused(req, auth, "jwt", outcome.error, {
      error: outcome.error,
      description: outcome.description,
    });
  }
  auth.counts.count("jwt", "allowed");
  return { ok: true, req: forwarded(req, auth, outcome.claims) };
}

/** Counts and logs a refusal (never the credential) and answers it. */
function refused(
  req: IncomingRequest,
  auth: PoolAuth,
  method: AuthMethod,
  result: AuthResult,
  failure: AuthFailure,
): AuthDecision {
  auth.counts.count(method, result);
  log.debug("pool {pool}: {result} ({method}) from {client}: {why}", {
    pool: auth.pool,
    result,
    method,
    client: req.remote.hostname,
    why: failure.description,
  });
  req.body?.cancel().catch(() => {});
  return { ok: false, response: authRefusal(auth.pool, failure) };
}

/**
 * `req` as the backend gets it: the stripped fields removed, the forwarded
 * claims set. The same request when there is nothing to change.
 */
function forwarded(
  req: IncomingRequest,
  auth: PoolAuth,
  claims: JwtClaims | undefined,
): IncomingRequest {
  if (auth.strip.size === 0) return req;
  const fields = req.head.fields.filter(([name]) => !auth.strip.has(name));
  if (claims !== undefined) {
    for (const [claim, field] of auth.forwardClaims) {
      const value = claimValue(claims[claim]);
      if (value !== null && fieldValueError(field, value) === null) fields.push([field, value]);
    }
  }
  return { ...req, head: { ...req.head, fields } };
}

/** A claim as a field value: a string as is, anything else as JSON; `null` when absent. */
function claimValue(claim: unknown): string | null {
  if (claim === undefined || claim === null) return null;
  return typeof claim === "string" ? claim : JSON.stringify(claim);
}

/** The values of every field `name` (lowercase) of `fields`. */
function valuesOf(fields: ReadonlyArray<readonly [string, string]>, name: string): string[] {
  const out: string[] = [];
  for (const [n, v] of fields) if (n === name) out.push(v);
  return out;
}
