/**
 * The payments rules, pure: money in integer minor units, card and bank
 * checks (Luhn, ABA, brand, masking), the charge state machine (capture,
 * refund, void), stored records and their wire views, and the one error type.
 * Nothing here does I/O; it imports only `shared/`.
 *
 * @example
 * ```ts
 * import { formatAmount, luhnValid, parseAmount } from "./mod.ts";
 *
 * parseAmount("12.34"); // 1234
 * formatAmount(1234);   // "12.34"
 * luhnValid("4111111111111111"); // true
 * ```
 *
 * @module
 */

export * from "./card_rules.ts";
export * from "./charge_rules.ts";
export * from "./errors.ts";
export * from "./ids.ts";
export * from "./money.ts";
export type * from "./records.ts";
export * from "./triggers.ts";
export * from "./views.ts";
// The wire types the views return and the error envelope (spelt out beside the zod schemas).
export type * from "../../shared/payments_wire.ts";
