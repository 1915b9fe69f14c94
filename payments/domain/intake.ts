/**
 * Validated wire input → stored summaries, applying the rules zod cannot:
 * Luhn, card expiry, ABA checksum. Full numbers and CVCs stop here: the
 * summaries keep last four digits and digests only.
 *
 * @module
 */
import {
  type Address,
  AdjustInput,
  type BankAccountInput,
  type CardInput,
  type ContextInput,
  FIELD_RULES,
} from "../../shared/payments_schemas.ts";
import { abaValid, cardBrand, cardExpired, luhnValid, sha512Base64 } from "./card_rules.ts";
import type { Adjustment } from "./charge_rules.ts";
import { PaymentsError } from "./errors.ts";
import { amountAt } from "./money.ts";
import type { BankSummary, CardSummary, ContextRecord, TokenRecord } from "./records.ts";
import { validate } from "./validate.ts";

/** A flag sent as a boolean or as "true"/"false" → boolean (absent: false). */
export function flag(v: boolean | "true" | "false" | undefined): boolean {
  return v === true || v === "true";
}

/** Request context → stored context (device details kept as sent, flags as booleans). */
export function contextFrom(c: ContextInput | undefined): ContextRecord {
  let deviceInfo: Record<string, string | boolean> | undefined;
  if (c?.deviceInfo) {
    deviceInfo = {};
    for (const [k, v] of Object.entries(c.deviceInfo)) {
      if (v !== undefined) deviceInfo[k] = k === "encrypted" ? flag(v as "true") : v;
    }
  }
  return {
    mobile: flag(c?.mobile),
    isEcommerce: flag(c?.isEcommerce),
    recurring: flag(c?.recurring),
    ...(c?.tax !== undefined ? { tax: String(c.tax) } : {}),
    ...(deviceInfo ? { deviceInfo } : {}),
  };
}

/** Address given as a string or an object → address object. */
export function addressFrom(a: string | Address | undefined): Address {
  if (a === undefined) return {};
  if (typeof a === "string") return a === "" ? {} : { streetAddress: a };
  return { ...a };
}

/**
 * Check a validated card (Luhn, expiry) and reduce it to a summary.
 *
 * @param path field path of the card in the request (`"card"` or `""`).
 */
export async function cardSummaryFrom(
  card: CardInput,
  now: Date,
  path: string,
): Promise<CardSummary> {
  const at = (f: string) => (path ? `${path}.${f}` : f);
  if (!luhnValid(card.number)) {
    throw PaymentsError.invalid(at("number"), undefined, FIELD_RULES.cardNumber);
  }
  if (/^0+$/.test(card.number)) {
    throw PaymentsError.invalid(at("number"), undefined, "not a card number: every digit is 0");
  }
  const expMonth = Number(card.expMonth);
  const expYear = Number(card.expYear);
  if (cardExpired(expMonth, expYear, now)) {
    throw PaymentsError.invalid(at("expYear"), undefined, "the card has expired");
  }
  const detected = cardBrand(card.number);
  return {
    last4: card.number.slice(-4),
    brand: detected === "UNKNOWN" && card.cardType ? card.cardType : detected,
    expMonth,
    expYear,
    numberSHA512: await sha512Base64(card.number),
    cvcLength: card.cvc.length,
    name: card.name ?? "",
    address: addressFrom(card.address),
  };
}

/** Check a validated bank account (ABA checksum) and reduce it to a summary. */
export async function bankSummaryFrom(
  account: BankAccountInput,
  path: string,
): Promise<BankSummary> {
  const at = (f: string) => (path ? `${path}.${f}` : f);
  if (!abaValid(account.routingNumber)) {
    throw PaymentsError.invalid(at("routingNumber"), undefined, FIELD_RULES.routingNumber);
  }
  return {
    name: account.name,
    last4: account.accountNumber.slice(-4),
    accountNumberSHA512: await sha512Base64(account.accountNumber),
    accountType: account.accountType,
    routingNumber: account.routingNumber,
    phone: account.phone,
    inputType: account.inputType ?? "KEYED",
    country: account.country ?? "US",
    bankCode: account.bankCode ?? "",
  };
}

/**
 * Why a one-time token (null: none stored under the value sent) cannot pay
 * for a payment of `type` at `nowMs`; undefined when it can.
 */
export function tokenProblem(
  token: TokenRecord | null,
  type: TokenRecord["type"],
  nowMs: number,
): string | undefined {
  if (token === null) return "no live token has this value (a token pays once)";
  if (token.type !== type) return `a ${token.type} token cannot pay for this`;
  if (token.expiresAt <= nowMs) return "the token has expired (tokens live 15 minutes)";
  return undefined;
}

/** A capture or refund request: amount (minor units; undefined: all), description, context. */
export function adjustmentOf(raw: unknown): Omit<Adjustment, "now"> {
  const input = validate(AdjustInput, raw);
  return {
    amount: amountAt(input.amount, "amount"),
    description: input.description ?? "",
    context: contextFrom(input.context),
  };
}
