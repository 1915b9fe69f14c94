/**
 * Test keys made by `openssl` (an independent tool), one per algorithm the
 * proxy verifies, and tokens signed with them by `jose`, for the unit and
 * end-to-end tests of `auth`.
 *
 * @module
 */

import {
  base64url,
  exportJWK,
  importPKCS8,
  importSPKI,
  type JWK,
  type JWTPayload,
  SignJWT,
} from "jose";
import type { JwtAlgorithm } from "../config/types.ts";

/** One signing key: its algorithm, `kid`, the private key and the public JWK. */
export interface TestKey {
  alg: JwtAlgorithm;
  kid: string;
  /** What `SignJWT.sign` takes. */
  signingKey: CryptoKey | Uint8Array;
  /** The key as the JWKS file holds it (public, or the `oct` secret). */
  jwk: JWK;
  /** The public key in PEM (asymmetric keys), for the algorithm-confusion test. */
  publicPem?: string;
}

/** The four keys, made once per test process. */
let made: Promise<Record<JwtAlgorithm, TestKey>> | undefined;

async function openssl(args: string[]): Promise<string> {
  const out = await new Deno.Command("openssl", { args, stdout: "piped", stderr: "piped" })
    .output();
  if (!out.success) {
    throw new Error(`openssl ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  }
  return new TextDecoder().decode(out.stdout);
}

async function asymmetric(alg: "RS256" | "ES256" | "EdDSA", genArgs: string[]): Promise<TestKey> {
  const privatePem = await openssl(["genpkey", ...genArgs]);
  const dir = await Deno.makeTempDir({ prefix: "spooky-jwt-" });
  try {
    await Deno.writeTextFile(`${dir}/key.pem`, privatePem);
    const publicPem = await openssl(["pkey", "-in", `${dir}/key.pem`, "-pubout"]);
    const kid = `${alg.toLowerCase()}-1`;
    const jwk = {
      ...await exportJWK(await importSPKI(publicPem, alg, { extractable: true })),
      kid,
    };
    return { alg, kid, signingKey: await importPKCS8(privatePem, alg), jwk, publicPem };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** RS256, ES256 and EdDSA keys from `openssl genpkey`, an HS256 secret from `openssl rand`. */
export function testKeys(): Promise<Record<JwtAlgorithm, TestKey>> {
  made ??= (async () => {
    const [RS256, ES256, EdDSA, secret] = await Promise.all([
      asymmetric("RS256", ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]),
      asymmetric("ES256", ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]),
      asymmetric("EdDSA", ["-algorithm", "ED25519"]),
      openssl(["rand", "-base64", "48"]),
    ]);
    const bytes = Uint8Array.from(atob(secret.trim()), (c) => c.charCodeAt(0));
    const HS256: TestKey = {
      alg: "HS256",
      kid: "hs256-1",
      signingKey: bytes,
      jwk: { kty: "oct", k: base64url.encode(bytes), kid: "hs256-1" },
    };
    return { RS256, ES256, EdDSA, HS256 };
  })();
  return made;
}

/** Options of {@link signToken}. */
export interface SignOptions {
  /** Claims; default `{sub: "user-1"}`. */
  claims?: JWTPayload;
  /** `exp`, seconds from now (default 300); `null`: none. */
  expiresIn?: number | null;
  /** `nbf`, seconds from now; absent: none. */
  notBeforeIn?: number;
  /** `iss`, `aud`. */
  issuer?: string;
  audience?: string | string[];
  /** The header's `kid` (default the key's; `null`: none) and `alg` (default the key's). */
  kid?: string | null;
  alg?: string;
}

/** A JWT signed by `jose` with `key`. */
export async function signToken(key: TestKey, opts: SignOptions = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const header: { alg: string; kid?: string } = { alg: opts.alg ?? key.alg };
  const kid = opts.kid === undefined ? key.kid : opts.kid;
  if (kid !== null) header.kid = kid;
  const jwt = new SignJWT(opts.claims ?? { sub: "user-1" }).setProtectedHeader(header)
    .setIssuedAt(now);
  if (opts.expiresIn !== null) jwt.setExpirationTime(now + (opts.expiresIn ?? 300));
  if (opts.notBeforeIn !== undefined) jwt.setNotBefore(now + opts.notBeforeIn);
  if (opts.issuer !== undefined) jwt.setIssuer(opts.issuer);
  if (opts.audience !== undefined) jwt.setAudience(opts.audience);
  return await jwt.sign(key.signingKey);
}

/** An unsecured token (`alg: none`) with `claims`. */
export function unsecuredToken(claims: JWTPayload): string {
  const enc = (v: unknown) => base64url.encode(JSON.stringify(v));
  return `${enc({ alg: "none", typ: "JWT" })}.${enc(claims)}.`;
}

/**
 * The RS256 → HS256 confusion: a token whose header says HS256, signed
 * with HMAC-SHA256 keyed by the RSA public key's PEM text (what a verifier
 * that takes "the key" for any algorithm would check it with).
 */
export async function confusedToken(rsa: TestKey, claims: JWTPayload): Promise<string> {
  const secret = new TextEncoder().encode(rsa.publicPem!);
  return await new SignJWT(claims).setProtectedHeader({ alg: "HS256", kid: rsa.kid })
    .setExpirationTime("5m").sign(secret);
}

/** A JWKS file's text holding `keys`. */
export function jwksText(keys: readonly TestKey[]): string {
  return JSON.stringify({ keys: keys.map((k) => k.jwk) });
}
