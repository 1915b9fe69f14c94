/**
 * Money: integer minor units inside, two-decimal strings on the wire.
 *
 * @module
 */

import { AMOUNT_RULE } from "../../shared/payments_schemas.ts";
import { PaymentsError } from "./errors.ts";

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
 * {@link parseAmount} of a validated request field at `path`: undefined
 * when absent, 400 `<field> is invalid.` when it is not an amount.
 */
export function amountAt(value: string | number | undefined, path: string): number | undefined {
  if (value === undefined) return undefined;
  const minor = parseAmount(value);
  if (minor === undefined) throw PaymentsError.invalid(path, undefined, AMOUNT_RULE);
  return minor;
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
