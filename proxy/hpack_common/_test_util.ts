/**
 * Test helpers of the shared HPACK/QPACK pieces: hex conversion both ways.
 *
 * @module
 */

/** Bytes of a hex string (whitespace ignored). */
export function hex(s: string): Uint8Array {
  const clean = s.replace(/\s+/g, "");
  const out = new Uint8Array(clean.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(clean.slice(i * 2, i * 2 + 2), 16);
  return out;
}

/** Hex string of bytes. */
export function toHex(b: Uint8Array | null): string {
  if (b === null) return "";
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}
