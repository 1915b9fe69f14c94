/**
 * Stored records → wire responses (masked numbers, two-decimal amounts,
 * string expiry fields, boolean context flags).
 *
 * @module
 */
import type * as W from "../../shared/payments_wire.ts";
import { maskDigits } from "./card_rules.ts";
import { echeckRefundable, refundableAmount } from "./charge_rules.ts";
import { formatAmount } from "./money.ts";
import type {
  AdjustmentRecord,
  BankAccountRecord,
  CardRecord,
  ChargeRecord,
  ContextRecord,
  ECheckRecord,
  RefundEntry,
  TokenRecord,
} from "./records.ts";

/** Context record → wire. */
export function contextView(c: ContextRecord): W.ContextOutput {
  return {
    mobile: c.mobile,
    isEcommerce: c.isEcommerce,
    recurring: c.recurring,
    ...(c.tax !== undefined ? { tax: c.tax } : {}),
    ...(c.deviceInfo !== undefined ? { deviceInfo: c.deviceInfo } : {}),
  };
}

/**
 * An expiry month as the real API returns it: a two-digit string (`"02"`),
 * the form the Java SDK's `Card.expMonth` (a String) carries.
 */
export function monthText(m: number): string {
  return String(m).padStart(2, "0");
}

/** A charge's or e-check's refund entry → refund record. */
function refundEntryView(f: RefundEntry): W.Refund {
  return {
    id: f.id,
    amount: formatAmount(f.amount),
    context: contextView(f.context ?? { mobile: false, isEcommerce: false, recurring: false }),
    created: f.created,
    description: f.description ?? "",
    status: "ISSUED",
    type: "REFUND",
  };
}

/** The app type charges report (the real API's values are not documented). */
export const APP_TYPE = "SANDBOX";

/** Card record → create response (subset). */
export function cardCreatedView(r: CardRecord): W.CardCreated {
  return {
    updated: r.updated,
    name: r.name,
    created: r.created,
    default: r.default,
    number: maskDigits(r.last4),
    expMonth: monthText(r.expMonth),
    address: r.address,
    expYear: String(r.expYear),
    isBusiness: r.isBusiness,
    id: r.id,
  };
}

/** Card record → read response. */
export function cardView(r: CardRecord): W.Card {
  return {
    ...cardCreatedView(r),
    cardType: r.brand,
    cvcVerification: { date: r.created, result: "NOT_DONE" },
    entityId: r.customerId,
    entityType: "customers",
    entityVersion: "1",
    isLevel3Eligible: false,
    numberSHA512: r.numberSHA512,
    status: "ACTIVE",
    zeroDollarVerification: { status: "NOT_VERIFIED" },
  };
}

/** Bank account record → response (`withDigest` on create only). */
export function bankAccountView(r: BankAccountRecord, withDigest = false): W.BankAccount {
  return {
    accountNumber: maskDigits(r.last4),
    ...(withDigest ? { accountNumberSHA512: r.accountNumberSHA512 } : {}),
    accountType: r.accountType,
    bankCode: r.bankCode,
    bankName: "SANDBOX BANK",
    country: r.country,
    created: r.created,
    default: r.default,
    entityId: r.customerId,
    entityType: "customers",
    entityVersion: "1",
    id: r.id,
    inputType: r.inputType,
    name: r.name,
    phone: r.phone,
    routingNumber: r.routingNumber,
    updated: r.updated,
    verificationStatus: "NOT_VERIFIED",
  };
}

/** Charge record → response. */
export function chargeView(r: ChargeRecord): W.Charge {
  return {
    id: r.id,
    amount: formatAmount(r.amount),
    currency: r.currency,
    description: r.description,
    created: r.created,
    status: r.status,
    capture: r.capture || r.captureDetail !== undefined,
    authCode: r.authCode,
    appType: APP_TYPE,
    avsStreet: "Pass",
    avsZip: "Pass",
    cardSecurityCodeMatch: "NotAvailable",
    card: {
      cardType: r.card.brand,
      cvc: "x".repeat(r.card.cvcLength),
      expMonth: monthText(r.card.expMonth),
      expYear: String(r.card.expYear),
      name: r.card.name,
      number: maskDigits(r.card.last4),
      address: r.card.address,
    },
    context: contextView(r.context),
    ...(r.captureDetail
      ? {
        captureDetail: {
          amount: formatAmount(r.captureDetail.amount),
          context: contextView(r.captureDetail.context),
          created: r.captureDetail.created,
          description: r.captureDetail.description,
        },
      }
      : {}),
    refundedAmount: formatAmount(r.refunded),
    refundableAmount: formatAmount(refundableAmount(r)),
    refunds: (r.refunds ?? []).map((f) => ({
      id: f.id,
      amount: formatAmount(f.amount),
      created: f.created,
    })).reverse(),
    refundDetail: (r.refunds ?? []).map(refundEntryView),
  };
}

/** Refund record → response. */
export function refundView(r: AdjustmentRecord): W.Refund {
  return {
    amount: formatAmount(r.amount),
    context: contextView(r.context),
    created: r.created,
    description: r.description,
    id: r.id,
    status: "ISSUED",
    type: "REFUND",
  };
}

/** Void record → response. */
export function voidView(r: AdjustmentRecord): W.Void {
  return {
    status: "ISSUED",
    created: r.created,
    amount: formatAmount(r.amount),
    context: contextView(r.context),
    type: "VOID",
    id: r.id,
  };
}

/** E-check record → response. */
export function echeckView(r: ECheckRecord): W.ECheck {
  return {
    amount: formatAmount(r.amount),
    authCode: r.authCode,
    bankAccount: {
      accountNumber: maskDigits(r.bank.last4),
      accountType: r.bank.accountType,
      inputType: r.bank.inputType,
      name: r.bank.name,
      phone: r.bank.phone,
      routingNumber: `xxxxx${r.bank.routingNumber.slice(-4)}`,
    },
    checkNumber: r.checkNumber,
    context: { ...contextView(r.context), deviceInfo: r.context.deviceInfo ?? {} },
    created: r.created,
    description: r.description,
    id: r.id,
    paymentMode: r.paymentMode,
    status: r.status,
    refundedAmount: formatAmount(r.refunded ?? 0),
    refundableAmount: formatAmount(echeckRefundable(r)),
  };
}

/** Token record → response. */
export function tokenView(r: TokenRecord): W.Token {
  return {
    id: r.id,
    value: r.id,
    type: r.type,
    created: r.created,
    expires: new Date(r.expiresAt).toISOString(),
    ...(r.card
      ? {
        card: {
          number: maskDigits(r.card.last4),
          expMonth: monthText(r.card.expMonth),
          expYear: String(r.card.expYear),
          cardType: r.card.brand,
          name: r.card.name,
        },
      }
      : {}),
    ...(r.bank
      ? {
        bankAccount: {
          accountNumber: maskDigits(r.bank.last4),
          accountType: r.bank.accountType,
          name: r.bank.name,
          routingNumber: r.bank.routingNumber,
        },
      }
      : {}),
  };
}
