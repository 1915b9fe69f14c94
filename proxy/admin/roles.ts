/**
 * Roles of the admin API: which role each call needs, and the tokens that
 * carry roles.
 *
 * | Role       | May call                                                                 |
 * | ---------- | ------------------------------------------------------------------------ |
 * | (none)     | `GET /health`, `GET /metrics` and every path outside `/admin/` (probes)  |
 * | `viewer`   | + `GET /admin/backends`, `GET /admin/connections` (any read of `/admin/`) |
 * | `operator` | + enable, disable, weights, drain                                        |
 * | `admin`    | + reload, and any other call under `/admin/`                             |
 *
 * Tokens come from `admin.tokens` (each from its own file) and
 * `admin.token` (role `admin`, as it always was). They are kept only as
 * SHA-256 digests; a request's token is hashed, looked up, and the digest
 * found compared in constant time. Each has an id for the audit log, never
 * the token: its file's name, or `admin.token`.
 *
 * @example
 * ```ts
 * const need = requiredRole("POST", "/admin/reload"); // "admin"
 * roleAllows("operator", need); // false
 * ```
 *
 * @module
 */

import type { Buffer } from "node:buffer";
import { createHash, timingSafeEqual } from "node:crypto";
import type { AdminRole } from "../config/types.ts";

/** Rank of each role: a role may do what every lower one may. */
const RANK: Readonly<Record<AdminRole, number>> = { viewer: 0, operator: 1, admin: 2 };

/** Calls of the `operator` role (the rest of `/admin/` but reads is `admin`'s). */
const OPERATOR_CALLS = [
  /^POST \/admin\/backends\/[^/]+\/(enable|disable)$/,
  /^PUT \/admin\/backends\/[^/]+\/weight$/,
  /^POST \/admin\/drain$/,
];

/** Shortest token a token file may hold. */
export const MIN_ADMIN_TOKEN_LENGTH = 16;

/**
 * The role a call needs; `null` for calls outside `/admin/` (`/health`,
 * `/metrics`, probes), which need none. An unknown call under `/admin/`
 * needs `admin` (fail closed).
 */
export function requiredRole(method: string, path: string): AdminRole | null {
  if (path !== "/admin" && !path.startsWith("/admin/")) return null;
  if (method === "GET" || method === "HEAD") return "viewer";
  const call = `${method} ${path}`;
  return OPERATOR_CALLS.some((re) => re.test(call)) ? "operator" : "admin";
}

/** Whether `role` may make a call that needs `needed`. */
export function roleAllows(role: AdminRole, needed: AdminRole | null): boolean {
  return needed === null || RANK[role] >= RANK[needed];
}

/** A token as the proxy keeps it: its id, role and digest. */
export interface AdminToken {
  /** The id the audit log names: the token file's name, or `admin.token`. */
  readonly id: string;
  /** What it may do. */
  readonly role: AdminRole;
  /** SHA-256 of the token. */
  readonly digest: Uint8Array;
}

/** A token file's text checked, as a digest, or why it cannot be used. */
export type AdminTokenParse = { ok: true; digest: Uint8Array } | { ok: false; message: string };

/**
 * Parses a token file: one token, surrounding whitespace trimmed, at least
 * {@link MIN_ADMIN_TOKEN_LENGTH} visible ASCII characters.
 */
export function parseAdminToken(text: string): AdminTokenParse {
  const token = text.trim();
  if (token === "") return { ok: false, message: "holds no token" };
  if (!/^[\x21-\x7e]+$/.test(token)) {
    return {
      ok: false,
      message: "must hold one token of visible ASCII characters (no spaces or second line)",
    };
  }
  if (token.length < MIN_ADMIN_TOKEN_LENGTH) {
    return {
      ok: false,
      message: `the token is shorter than ${MIN_ADMIN_TOKEN_LENGTH} characters (too easy to guess)`,
    };
  }
  return { ok: true, digest: sha256(token) };
}

/** The digest of a token given in the configuration (`admin.token`). */
export function tokenDigest(token: string): Uint8Array {
  return sha256(token);
}

/** The admin tokens of one configuration. */
export class AdminTokenSet {
  readonly #byDigest: ReadonlyMap<string, AdminToken>;

  /** A set of `tokens` (their digests distinct). */
  constructor(tokens: readonly AdminToken[]) {
    this.#byDigest = new Map(tokens.map((t) => [digestKey(t.digest), t]));
  }

  /** How many tokens the set holds. */
  get size(): number {
    return this.#byDigest.size;
  }

  /** The token `token` is, or `null`. */
  find(token: string): AdminToken | null {
    const digest = sha256(token);
    const found = this.#byDigest.get(digestKey(digest));
    return found !== undefined && timingSafeEqual(found.digest, digest) ? found : null;
  }
}

function sha256(text: string): Buffer {
  return createHash("sha256").update(text).digest();
}

/** base64 of a digest, the key of a lookup. */
function digestKey(digest: Uint8Array): string {
  return btoa(String.fromCharCode(...digest));
}
