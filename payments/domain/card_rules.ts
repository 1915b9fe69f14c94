/**
 * Card and bank rules: Luhn, ABA routing checksum, brand detection, expiry,
 * masking and digests.
 *
 * @module
 */
import { createHash } from "node:crypto";

/** True when the digit string passes the Luhn check. */
export function luhnValid(digits: string): boolean {
  if (!/^[0-9]+$/.test(digits)) return false;
  let sum = 0;
  let double = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    let d = digits.charCodeAt(i) - 48;
    if (double) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    double = !double;
  }
  return sum % 10 === 0;
}

/** True when a 9-digit routing number passes the ABA checksum (3-7-1 weights). */
export function abaValid(routing: string): boolean {
  if (!/^[0-9]{9}$/.test(routing)) return false;
  const d = [...routing].map((c) => c.charCodeAt(0) - 48);
  const sum = 3 * (d[0] + d[3] + d[6]) + 7 * (d[1] + d[4] + d[7]) + (d[2] + d[5] + d[8]);
  return sum % 10 === 0;
}

/** Card brand label from the number's prefix. */
export function cardBrand(number: string): string {
  const p2 = Number(number.slice(0, 2));
  const p3 = Number(number.slice(0, 3));
  const p4 = Number(number.slice(0, 4));
  if (number.startsWith("4")) return "VISA";
  if ((p2 >= 51 && p2 <= 55) || (p4 >= 2221 && p4 <= 2720)) return "MC";
  if (p2 === 34 || p2 === 37) return "AMEX";
  if (p4 === 6011 || p2 === 65 || (p3 >= 644 && p3 <= 649)) return "DISCOVER";
  if (p4 >= 3528 && p4 <= 3589) return "JCB";
  if (p2 === 36 || p2 === 38 || (p3 >= 300 && p3 <= 305)) return "DINERS";
  return "UNKNOWN";
}

/** True when a card expiring at the end of month/year has expired at `now`. */
export function cardExpired(month: number, year: number, now: Date): boolean {
  const y = now.getUTCFullYear();
  const m = now.getUTCMonth() + 1;
  return year < y || (year === y && month < m);
}

/** Mask a digit string as `xxxxxxxxxxxx` plus its last four digits. */
export function maskDigits(last4: string): string {
  return `xxxxxxxxxxxx${last4}`;
}

/** Base64 SHA-512 digest of a string (used for card and account numbers). */
export function sha512Base64(value: string): Promise<string> {
  // node:crypto hashes synchronously, several times cheaper than WebCrypto's
  // thread-pool round trip for a 16-byte input.
  return Promise.resolve(createHash("sha512").update(value, "utf8").digest("base64"));
}
