/**
 * The proxy's answers to a request its pool's `auth` refuses (RFC 6750 §3):
 * 401 with a `WWW-Authenticate: Bearer` challenge, and 403 for a valid
 * token that lacks a required claim, each with a JSON body like the
 * proxy's other answers.
 *
 * - no credential at all (or one of another scheme): 401, the challenge
 *   with no error code (RFC 6750 §3.1: the client may not know it needs
 *   one), body `{"error": "unauthorized"}`;
 * - a malformed request (two credentials, `Bearer` without a token):
 *   401 `invalid_request`;
 * - a credential that is wrong, expired, for another audience, …:
 *   401 `invalid_token`;
 * - a valid token without a required claim: 403 `insufficient_scope`.
 *
 * Descriptions are the proxy's own fixed words: nothing of the request is
 * echoed.
 *
 * @example
 * ```ts
 * const res = authRefusal("api", { error: "invalid_token", description: "the token has expired" });
 * res.status; // 401
 * ```
 *
 * @module
 */

import { errorResponse } from "../server/error_response.ts";
import type { OutgoingResponse } from "../server/types.ts";

/** RFC 6750 §3.1 error codes. */
export type BearerError = "invalid_request" | "invalid_token" | "insufficient_scope";

/** Why a request was refused: an error code (none: no credential) and a description. */
export interface AuthFailure {
  /** The RFC 6750 code; absent when the request carried no credential. */
  readonly error?: BearerError;
  /** What was wrong, in the proxy's words. */
  readonly description: string;
}

/** The 401 or 403 answer for `failure` in the pool `realm`. */
export function authRefusal(realm: string, failure: AuthFailure): OutgoingResponse {
  const status = failure.error === "insufficient_scope" ? 403 : 401;
  const res = errorResponse(status, failure.error ?? "unauthorized", failure.description);
  res.headers = [...res.headers, ["www-authenticate", challenge(realm, failure)]];
  return res;
}

/** The `WWW-Authenticate` value: `Bearer realm="…"[, error="…", error_description="…"]`. */
export function challenge(realm: string, failure: AuthFailure): string {
  const parts = [`Bearer realm=${quoted(realm)}`];
  if (failure.error !== undefined) {
    parts.push(`error="${failure.error}"`, `error_description=${quoted(failure.description)}`);
  }
  return parts.join(", ");
}

/**
 * A quoted-string (RFC 9110 §5.6.4) of visible ASCII: `"` and `\` escaped,
 * anything else outside %x20-7E replaced (RFC 6750 §3 allows only those).
 */
function quoted(text: string): string {
  return `"${text.replace(/[^\x20-\x7e]/g, "?").replace(/["\\]/g, "\\$&")}"`;
}
