/**
 * The payments API's responses and error envelope as TypeScript types,
 * spelt out: what the payments packages' public signatures name. The zod
 * schemas of `payments_schemas.ts` stay the one description of the wire
 * (they validate, and the OpenAPI document is generated from them); their
 * inferred types cannot be documented (they are zod's `output<…>`), so
 * these are written out, and `payments_wire_test.ts` fails to compile when
 * one of them is not exactly what its schema infers.
 *
 * @example
 * ```ts
 * import type { Charge } from "./payments_wire.ts";
 *
 * declare const charge: Charge;
 * charge.status; // "AUTHORIZED" | "CAPTURED" | "REFUNDED" | "CANCELLED" | "DECLINED"
 * ```
 *
 * @module
 */

/** Context in responses: flags are booleans. */
export interface ContextOutput {
  /** Paid from a mobile device. */
  mobile: boolean;
  /** An e-commerce payment. */
  isEcommerce: boolean;
  /** A recurring payment. */
  recurring: boolean;
  /** Tax amount, as sent. */
  tax?: string;
  /** Device information, as sent. */
  deviceInfo?: Record<string, unknown>;
}

/** Billing address. */
export interface Address {
  /** Street and number. */
  streetAddress?: string;
  /** City. */
  city?: string;
  /** Region or state. */
  region?: string;
  /** Postal code. */
  postalCode?: string;
  /** Country. */
  country?: string;
}

/** Card as returned on create (subset). */
export interface CardCreated {
  /** Card id. */
  id: string;
  /** Creation time (ISO 8601). */
  created: string;
  /** Last change (ISO 8601). */
  updated: string;
  /** Cardholder name. */
  name: string;
  /** Masked number, e.g. `xxxxxxxxxxxx1111`. */
  number: string;
  /** Expiry month, two digits. */
  expMonth: string;
  /** Expiry year, four digits. */
  expYear: string;
  /** The customer's default card. */
  default: boolean;
  /** A business card. */
  isBusiness: boolean;
  /** Billing address. */
  address: Address;
}

/** Card as returned on read and list. */
export interface Card extends CardCreated {
  /** Brand, e.g. `VISA`. */
  cardType: string;
  /** Result of the card security code check. */
  cvcVerification: { date: string; result: string };
  /** Owning entity id. */
  entityId: string;
  /** Owning entity type. */
  entityType: string;
  /** Owning entity version. */
  entityVersion: string;
  /** Eligible for level 3 data. */
  isLevel3Eligible: boolean;
  /** SHA-512 of the number. */
  numberSHA512: string;
  /** Card status. */
  status: string;
  /** Result of the zero-dollar verification. */
  zeroDollarVerification: { status: string };
}

/** Bank account as returned. `accountNumberSHA512` only on create. */
export interface BankAccount {
  /** Bank account id. */
  id: string;
  /** Masked account number. */
  accountNumber: string;
  /** SHA-512 of the account number (on create only). */
  accountNumberSHA512?: string;
  /** Account type, e.g. `PERSONAL_CHECKING`. */
  accountType: string;
  /** Bank code. */
  bankCode: string;
  /** Bank name. */
  bankName: string;
  /** Country. */
  country: string;
  /** Creation time (ISO 8601). */
  created: string;
  /** Last change (ISO 8601). */
  updated: string;
  /** The customer's default account. */
  default: boolean;
  /** Owning entity id. */
  entityId: string;
  /** Owning entity type. */
  entityType: string;
  /** Owning entity version. */
  entityVersion: string;
  /** How the account was entered. */
  inputType: string;
  /** Account holder name. */
  name: string;
  /** Phone number. */
  phone: string;
  /** ABA routing number. */
  routingNumber: string;
  /** Verification status. */
  verificationStatus: string;
}

/** Card summary inside a charge. */
export interface ChargeCard {
  /** Brand. */
  cardType: string;
  /** Card security code, masked. */
  cvc: string;
  /** Expiry month. */
  expMonth: string;
  /** Expiry year. */
  expYear: string;
  /** Cardholder name. */
  name: string;
  /** Masked number. */
  number: string;
  /** Billing address. */
  address: Address;
}

/** Capture detail of a captured charge. */
export interface CaptureDetail {
  /** Amount captured. */
  amount: string;
  /** Context of the capture. */
  context: ContextOutput;
  /** Capture time (ISO 8601). */
  created: string;
  /** Description of the capture. */
  description: string;
}

/** One refund as a charge lists it. */
export interface RefundSummary {
  /** Refund id. */
  id: string;
  /** Amount refunded. */
  amount: string;
  /** Refund time (ISO 8601). */
  created: string;
}

/** Charge statuses this sandbox produces. */
export type ChargeStatus = "AUTHORIZED" | "CAPTURED" | "REFUNDED" | "CANCELLED" | "DECLINED";

/** A refund record (also inside a charge's `refundDetail`). */
export interface Refund {
  /** Refund id. */
  id: string;
  /** Amount refunded. */
  amount: string;
  /** Context of the refund. */
  context: ContextOutput;
  /** Refund time (ISO 8601). */
  created: string;
  /** Description of the refund. */
  description: string;
  /** Always `ISSUED`. */
  status: "ISSUED";
  /** Always `REFUND`. */
  type: "REFUND";
}

/** Charge as returned. */
export interface Charge {
  /** Charge id. */
  id: string;
  /** Amount. */
  amount: string;
  /** Currency, e.g. `USD`. */
  currency: string;
  /** Description. */
  description: string;
  /** Creation time (ISO 8601). */
  created: string;
  /** Status. */
  status: ChargeStatus;
  /** True once captured (at create or later). */
  capture: boolean;
  /** Authorization code. */
  authCode: string;
  /** Application type; this sandbox says SANDBOX. */
  appType: string;
  /** Address verification of the street. */
  avsStreet: string;
  /** Address verification of the postal code. */
  avsZip: string;
  /** Card security code match. */
  cardSecurityCodeMatch: string;
  /** The card charged. */
  card: ChargeCard;
  /** Context of the charge. */
  context: ContextOutput;
  /** Capture detail, once captured after create. */
  captureDetail?: CaptureDetail;
  /** Sum of the refunds issued. */
  refundedAmount: string;
  /** What a refund may still return. */
  refundableAmount: string;
  /** The refunds, newest first. */
  refunds: RefundSummary[];
  /** The refunds as full records, oldest first; absent before the first refund. */
  refundDetail?: Refund[];
}

/** Void record. */
export interface Void {
  /** Void id. */
  id: string;
  /** Amount voided. */
  amount: string;
  /** Context of the void. */
  context: ContextOutput;
  /** Void time (ISO 8601). */
  created: string;
  /** Always `ISSUED`. */
  status: "ISSUED";
  /** Always `VOID`. */
  type: "VOID";
}

/** The bank account an e-check debits, as returned. */
export interface ECheckBankAccount {
  /** Masked account number. */
  accountNumber: string;
  /** Account type. */
  accountType: string;
  /** How the account was entered. */
  inputType: string;
  /** Account holder name. */
  name: string;
  /** Phone number. */
  phone: string;
  /** ABA routing number. */
  routingNumber: string;
}

/** E-check as returned. */
export interface ECheck {
  /** E-check id. */
  id: string;
  /** Amount. */
  amount: string;
  /** Authorization code. */
  authCode: string;
  /** The account debited. */
  bankAccount: ECheckBankAccount;
  /** Check number. */
  checkNumber: string;
  /** Context of the e-check. */
  context: ContextOutput;
  /** Creation time (ISO 8601). */
  created: string;
  /** Description. */
  description: string;
  /** Payment mode, e.g. `WEB`. */
  paymentMode: string;
  /** Status. */
  status: string;
  /** Sum of the refunds issued. */
  refundedAmount?: string;
  /** What a refund may still return. */
  refundableAmount?: string;
}

/** One-time token as returned. */
export interface Token {
  /** Token id. */
  id: string;
  /** The token to send as a charge's or e-check's `token` (the same string as `id`). */
  value: string;
  /** What the token stands for. */
  type: "card" | "bank_account";
  /** Creation time (ISO 8601). */
  created: string;
  /** Expiry time (ISO 8601). */
  expires: string;
  /** The card, masked, for a card token. */
  card?: { number: string; expMonth: string; expYear: string; cardType: string; name: string };
  /** The bank account, masked, for a bank account token. */
  bankAccount?: { accountNumber: string; accountType: string; name: string; routingNumber: string };
}

/** One error in the envelope. */
export interface ErrorItem {
  /** Error code, e.g. `PMT-4000`. */
  code: string;
  /** Error type, e.g. `invalid_request`. */
  type: string;
  /** What went wrong, e.g. `expMonth is invalid.`. */
  message: string;
  /** Where, e.g. `card.expMonth`. */
  detail: string;
  /** The rule that failed, when one did. */
  moreInfo?: string;
  /** The page documenting the codes. */
  infoLink: string;
}

/** The error envelope every failure uses. */
export interface ErrorEnvelope {
  /** The errors, at least one. */
  errors: ErrorItem[];
}
