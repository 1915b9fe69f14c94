/**
 * Money: integer minor units inside, two-decimal strings on the wire.
 *
 * @module
 */

/** Largest amount accepted, in minor units (99999.99). */
export const MAX_AMOUNT_MINOR = 9_999_999;

/**
 * Parse a validated wire amount (decimal string or number) into minor units.
 * Returns `undefined` when the value is not a valid amount.
 *
 * @example
 * ```ts
 * parseAmount("10.5"); // 1050
 * ```
 */
export function parseAmount(value: string | number): number | undefined {
  let text: string;
  if (typeof value === "number") {
    if (!Number.isFinite(value) || value < 0) return undefined;
    const cents = Math.round(value * 100);
    if (cents / 100 !== value) return undefined;
    return cents <= MAX_AMOUNT_MINOR ? cents : undefined;
  } else {
    text = value;
  }
  const m = /^([0-9]{1,5})(?:\.([0-9]{1,2}))?$/.exec(text);
  if (!m) return undefined;
  const cents = Number(m[1]) * 100 + Number((m[2] ?? "0").padEnd(2, "0"));
  return cents <= MAX_AMOUNT_MINOR ? cents : undefined;
}

/**
 * Format minor units as a two-decimal string.
 *
 * @example
 * ```ts
 * formatAmount(1050); // "10.50"
 * ```
 */
export function formatAmount(minor: number): string {
  const whole = Math.trunc(minor / 100);
  const frac = minor % 100;
  return `${whole}.${String(frac).padStart(2, "0")}`;
}
