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

function encode(value: bigint, length: number): string {
  let out = "";
  for (let i = 0; i < length; i++) {
    out = ALPHABET[Number(value % 32n)] + out;
    value /= 32n;
  }
  return out;
}

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
  let lastTail = 0n;
  const MAX_TAIL = 32n ** 14n - 1n;
  return (prefix: string) => {
    const ms = Math.max(now(), lastMs);
    let tail: bigint;
    if (ms === lastMs && lastTail < MAX_TAIL) {
      tail = lastTail + 1n;
    } else {
      const bytes = new Uint8Array(9);
      random(bytes);
      tail = 0n;
      for (const b of bytes) tail = (tail << 8n) | BigInt(b);
      tail = tail % (MAX_TAIL / 2n);
    }
    lastMs = ms;
    lastTail = tail;
    return `${prefix}${encode(BigInt(ms), 10)}${encode(tail, 14)}`;
  };
}

/** A random alphanumeric code (auth codes). */
export function randomCode(length: number, random: (b: Uint8Array) => void): string {
  const bytes = new Uint8Array(length);
  random(bytes);
  return [...bytes].map((b) => ALPHABET[b % 32]).join("");
}
