/**
 * The one grammar of `Authorization: Bearer <token>` (RFC 6750 §2.1) in the
 * project, and a constant-time check against configured tokens: the payments
 * API and the proxy's admin API both use it.
 *
 * The scheme is matched in any case, one or more spaces follow it, and the
 * token is everything after them up to trailing whitespace: one run without
 * whitespace (a token containing a space or tab never matches).
 *
 * @example
 * ```ts
 * import { bearerChecker, bearerToken } from "./bearer.ts";
 *
 * bearerToken("Bearer abc"); // "abc"
 * bearerToken("Basic abc"); // null
 * const allowed = bearerChecker(["t1", "t2"]);
 * allowed("bearer t2"); // true
 * ```
 *
 * @module
 */

import { constantTimeEqual } from "./constant_time.ts";

const BEARER = /^Bearer[ ]+(\S+)\s*$/i;

/** The token of an `Authorization` header value, or `null` when it is no `Bearer <token>`. */
export function bearerToken(header: string | null | undefined): string | null {
  return BEARER.exec(header ?? "")?.[1] ?? null;
}

/**
 * A check of `Authorization` headers against fixed tokens: true when the
 * header carries one of them as `Bearer <token>`. Every token is compared in
 * constant time, whatever matches. Header values are byte strings, so
 * comparing code units compares their bytes.
 */
export function bearerChecker(
  tokens: readonly string[],
): (header: string | null | undefined) => boolean {
  const expected = [...tokens];
  return (header) => {
    const given = bearerToken(header) ?? "";
    let ok = false;
    for (const t of expected) ok = constantTimeEqual(given, t) || ok;
    return ok && given !== "";
  };
}
