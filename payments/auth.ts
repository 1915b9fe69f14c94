/**
 * Bearer token check in constant time.
 *
 * @module
 */

const enc = new TextEncoder();

/** Compare two strings in time independent of where they differ. */
export function constantTimeEqual(a: string, b: string): boolean {
  const x = enc.encode(a);
  const y = enc.encode(b);
  const n = Math.max(x.length, y.length);
  let diff = x.length ^ y.length;
  for (let i = 0; i < n; i++) diff |= (x[i] ?? 0) ^ (y[i] ?? 0);
  return diff === 0;
}

/**
 * True when the `Authorization` header carries one of the tokens as
 * `Bearer <token>`. Every configured token is compared, whatever matches.
 */
export function bearerAllowed(header: string | undefined, tokens: readonly string[]): boolean {
  const m = /^Bearer[ ]+(\S+)\s*$/i.exec(header ?? "");
  const given = m?.[1] ?? "";
  let ok = false;
  for (const t of tokens) ok = constantTimeEqual(given, t) || ok;
  return ok && given !== "";
}
