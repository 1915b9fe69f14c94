/**
 * Bearer token check in constant time.
 *
 * @module
 */

const enc = new TextEncoder();

function equalBytes(x: Uint8Array, y: Uint8Array): boolean {
  const n = Math.max(x.length, y.length);
  let diff = x.length ^ y.length;
  for (let i = 0; i < n; i++) diff |= (x[i] ?? 0) ^ (y[i] ?? 0);
  return diff === 0;
}

/** Compare two strings in time independent of where they differ. */
export function constantTimeEqual(a: string, b: string): boolean {
  return equalBytes(enc.encode(a), enc.encode(b));
}

const BEARER = /^Bearer[ ]+(\S+)\s*$/i;

/** Compare two strings code unit by code unit, in time independent of where they differ. */
function equalCodeUnits(a: string, b: string): boolean {
  const n = Math.max(a.length, b.length);
  let diff = a.length ^ b.length;
  // charCodeAt past the end is NaN, and NaN | 0 is 0.
  for (let i = 0; i < n; i++) diff |= (a.charCodeAt(i) | 0) ^ (b.charCodeAt(i) | 0);
  return diff === 0;
}

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
    for (const t of expected) ok = equalCodeUnits(given, t) || ok;
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
