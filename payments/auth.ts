/**
 * Bearer token check in constant time.
 *
 * @module
 */

import { constantTimeEqual } from "../shared/constant_time.ts";

const BEARER = /^Bearer[ ]+(\S+)\s*$/i;

/**
 * A check of `Authorization` headers against fixed tokens: true when the
 * header carries one of them as `Bearer <token>`. Every token is compared in
 * constant time, whatever matches. Header values are byte strings, so
 * comparing code units compares their bytes.
 */
export function bearerChecker(tokens: readonly string[]): (header: string | undefined) => boolean {
  const expected = [...tokens];
  return (header) => {
    const given = BEARER.exec(header ?? "")?.[1] ?? "";
    let ok = false;
    for (const t of expected) ok = constantTimeEqual(given, t) || ok;
    return ok && given !== "";
  };
}

/**
 * True when the `Authorization` header carries one of the tokens as
 * `Bearer <token>`. Every configured token is compared, whatever matches.
 */
export function bearerAllowed(header: string | undefined, tokens: readonly string[]): boolean {
  return bearerChecker(tokens)(header);
}
