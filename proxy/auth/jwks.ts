/**
 * The JSON Web Key Set of a pool's `auth.jwt.jwks_file`: parsed, checked
 * key by key when it is loaded (every usable key is imported with `jose`,
 * so a broken key is a configuration problem, never a request's failure),
 * and turned into the key resolver `jwtVerify` takes.
 *
 * Which key verifies a token is `jose`'s business: `createLocalJWKSet`
 * picks the asymmetric key (RS256, ES256, EdDSA) by the token's `alg` and
 * `kid`, with the key type the algorithm needs. `jose` keeps symmetric
 * keys out of a JWKS resolver, so HS256 keys (`kty: oct`) are chosen here
 * by `kid` among the set's `oct` keys only: an RSA or EC key is never
 * handed over as an HMAC secret (the RS256 → HS256 confusion).
 *
 * Keys that cannot serve the configured algorithms (another `alg`,
 * `use: enc`, an `oct` key without HS256) are left out; a set with none
 * left, a private asymmetric key (a JWKS to verify with holds public keys
 * only), an HMAC key under 256 bits, or a key `jose` cannot import is a
 * problem.
 *
 * @example
 * ```ts
 * declare const text: string;
 * const parsed = await parseJwks(text, ["RS256"]);
 * if (parsed.ok) parsed.keys.size; // usable keys
 * ```
 *
 * @module
 */

import {
  createLocalJWKSet,
  errors,
  importJWK,
  type JSONWebKeySet,
  type JWK,
  type JWTHeaderParameters,
  jwtVerify,
  type JWTVerifyGetKey,
} from "jose";
import type { JwtAlgorithm } from "../config/types.ts";

/** Smallest HS256 key, in bytes (RFC 7518 §3.2: at least the hash's size). */
const MIN_HMAC_KEY_BYTES = 32;

/** What `jose` checks besides the signature (`jwtVerify`'s options, in our words). */
export interface JwtChecks {
  /** Accepted `alg` values. */
  readonly algorithms: readonly JwtAlgorithm[];
  /** Accepted `iss` values; absent: any. */
  readonly issuers?: readonly string[];
  /** Accepted `aud` values (one must match); absent: any. */
  readonly audiences?: readonly string[];
  /** Leeway on `exp`, `nbf` and `iat`, in seconds. */
  readonly clockSkewS: number;
}

/** A verified token's claims. */
export type JwtClaims = Readonly<Record<string, unknown>>;

/** The usable keys of a JWKS file. */
export class JwtKeys {
  /** How many keys can verify a token. */
  readonly size: number;
  readonly #resolve: JWTVerifyGetKey;

  /** Keys that `resolve` picks from for a token's header; `size` of them. */
  constructor(size: number, resolve: JWTVerifyGetKey) {
    this.size = size;
    this.#resolve = resolve;
  }

  /**
   * Verifies `token` with `jose`'s `jwtVerify`: signature by a key of the
   * set, then `checks`, `exp` required. Resolves the claims; rejects with
   * `jose`'s error (see `jwt.ts` `describeFailure`).
   */
  async verify(token: string, checks: JwtChecks): Promise<JwtClaims> {
    const { payload } = await jwtVerify(token, this.#resolve, {
      algorithms: [...checks.algorithms],
      issuer: checks.issuers === undefined ? undefined : [...checks.issuers],
      audience: checks.audiences === undefined ? undefined : [...checks.audiences],
      clockTolerance: checks.clockSkewS,
      requiredClaims: ["exp"],
    });
    return payload;
  }
}

/** A parsed JWKS file, or what is wrong with it. */
export type JwksParse = { ok: true; keys: JwtKeys } | { ok: false; message: string };

/** A key of the set that can serve one of the configured algorithms. */
interface UsableKey {
  jwk: JWK;
  alg: JwtAlgorithm;
}

/** Parses and checks a JWKS file's text for `algorithms` (see the module documentation). */
export async function parseJwks(
  text: string,
  algorithms: readonly JwtAlgorithm[],
): Promise<JwksParse> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { ok: false, message: `is not JSON: ${(err as Error).message}` };
  }
  const keys = (value as { keys?: unknown } | null)?.keys;
  if (typeof value !== "object" || value === null || !Array.isArray(keys)) {
    return { ok: false, message: 'is not a JSON Web Key Set (an object with a "keys" list)' };
  }
  const usable: UsableKey[] = [];
  for (let i = 0; i < keys.length; i++) {
    const checked = await checkKey(keys[i], algorithms);
    if (typeof checked === "string") return { ok: false, message: `keys[${i}]${checked}` };
    if (checked !== null) usable.push(checked);
  }
  if (usable.length === 0) {
    return {
      ok: false,
      message: `holds no key usable with the algorithms ${algorithms.join(", ")}`,
    };
  }
  return { ok: true, keys: await keysOf(usable) };
}

/**
 * The key as it can be used, `null` when it serves none of `algorithms`,
 * or why it is refused (text following `keys[i]`).
 */
async function checkKey(
  value: unknown,
  algorithms: readonly JwtAlgorithm[],
): Promise<UsableKey | string | null> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return ": is not a JSON object";
  }
  const jwk = value as JWK;
  const where = typeof jwk.kid === "string" ? ` (kid ${JSON.stringify(jwk.kid)})` : "";
  const alg = algorithmOf(jwk);
  if (alg === null || !algorithms.includes(alg) || (jwk.use !== undefined && jwk.use !== "sig")) {
    return null;
  }
  if (jwk.kty !== "oct" && jwk.d !== undefined) {
    return `${where}: holds a private key ("d"); a key set to verify with holds public keys only`;
  }
  try {
    const key = await importJWK(jwk, alg);
    if (key instanceof Uint8Array && key.length < MIN_HMAC_KEY_BYTES) {
      return `${where}: an HS256 key must have at least ${MIN_HMAC_KEY_BYTES} bytes (RFC 7518 §3.2)`;
    }
  } catch (err) {
    return `${where}: cannot be imported as ${alg}: ${(err as Error).message}`;
  }
  return { jwk, alg };
}

/** The algorithm a key serves: its `alg`, else the one its type and curve imply; null: none. */
function algorithmOf(jwk: JWK): JwtAlgorithm | null {
  const implied = jwk.kty === "RSA"
    ? "RS256"
    : jwk.kty === "EC" && jwk.crv === "P-256"
    ? "ES256"
    : jwk.kty === "OKP" && jwk.crv === "Ed25519"
    ? "EdDSA"
    : jwk.kty === "oct"
    ? "HS256"
    : null;
  if (implied === null) return null;
  if (jwk.alg === undefined) return implied;
  // An Ed25519 key may say `Ed25519` (RFC 9864) for what JWS calls EdDSA.
  return jwk.alg === implied || (implied === "EdDSA" && jwk.alg === "Ed25519") ? implied : null;
}

/** The resolver of the usable keys: `jose`'s local set for asymmetric keys, HS256 by `kid`. */
async function keysOf(usable: readonly UsableKey[]): Promise<JwtKeys> {
  const asymmetric: JSONWebKeySet = {
    keys: usable.filter((k) => k.alg !== "HS256").map((k) => k.jwk),
  };
  const local = createLocalJWKSet(asymmetric);
  const hmac: Array<{ kid: string | undefined; key: Uint8Array }> = [];
  for (const k of usable) {
    if (k.alg === "HS256") {
      hmac.push({ kid: k.jwk.kid, key: await importJWK(k.jwk, "HS256") as Uint8Array });
    }
  }
  const resolve: JWTVerifyGetKey = (header, token) =>
    header.alg === "HS256" ? hmacKey(hmac, header) : local(header, token);
  return new JwtKeys(usable.length, resolve);
}

/**
 * The HS256 key for a token: the `oct` key with the token's `kid`, or the
 * only `oct` key of the set when the token names none.
 */
function hmacKey(
  keys: ReadonlyArray<{ kid: string | undefined; key: Uint8Array }>,
  header: JWTHeaderParameters,
): Uint8Array {
  const candidates = header.kid === undefined ? keys : keys.filter((k) => k.kid === header.kid);
  if (candidates.length === 0) throw new errors.JWKSNoMatchingKey();
  if (candidates.length > 1) throw new errors.JWKSMultipleMatchingKeys();
  return candidates[0].key;
}
