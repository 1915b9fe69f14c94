/**
 * Time-ordered identifiers: a prefix, 10 characters of milliseconds and 14 of
 * randomness+sequence in Crockford base32, so that ids created later sort
 * after earlier ones (lists are read newest first by key order).
 *
 * @module
 */

const ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/** A function returning a new id with the given prefix. */
export type IdGenerator = (prefix: string) => string;

/** `length` base32 digits of `value` (a safe integer), most significant first. */
function encode(value: number, length: number): string {
  let out = "";
  for (let i = 0; i < length; i++) {
    out = ALPHABET[value % 32] + out;
    value = Math.floor(value / 32);
  }
  return out;
}

/** 2^35: the tail is kept as two 35-bit halves (7 base32 digits each), no BigInt. */
const HALF = 2 ** 35;

/**
 * Build a monotonic id generator.
 *
 * @param now clock in epoch milliseconds
 * @param random fills a byte array with random bytes
 */
export function createIdGenerator(
  now: () => number = Date.now,
  random: (b: Uint8Array) => void = (b) => crypto.getRandomValues(b),
): IdGenerator {
  let lastMs = -1;
  // The 70-bit tail as hi * 2^35 + lo; below MAX_TAIL = 32^14 - 1 unless both halves are full.
  let hi = 0;
  let lo = 0;
  const MAX_TAIL = 32n ** 14n - 1n;
  return (prefix: string) => {
    const ms = Math.max(now(), lastMs);
    if (ms === lastMs && !(hi === HALF - 1 && lo === HALF - 1)) {
      lo++;
      if (lo === HALF) {
        lo = 0;
        hi++;
      }
    } else {
      const bytes = new Uint8Array(9);
      random(bytes);
      let tail = 0n;
      for (const b of bytes) tail = (tail << 8n) | BigInt(b);
      tail = tail % (MAX_TAIL / 2n);
      hi = Number(tail >> 35n);
      lo = Number(tail & BigInt(HALF - 1));
    }
    lastMs = ms;
    return `${prefix}${encode(ms % 2 ** 50, 10)}${encode(hi, 7)}${encode(lo, 7)}`;
  };
}

/** A random alphanumeric code (auth codes). */
export function randomCode(length: number, random: (b: Uint8Array) => void): string {
  const bytes = new Uint8Array(length);
  random(bytes);
  let out = "";
  for (let i = 0; i < length; i++) out += ALPHABET[bytes[i] % 32];
  return out;
}
