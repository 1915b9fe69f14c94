/**
 * Stored record types. Nothing here holds a full card number, a CVC or a
 * full bank account number: only last four digits, masks and digests.
 *
 * @module
 */
import type { Address, ChargeStatus } from "../../shared/payments_wire.ts";

/** Charge status: stored as the wire says it. */
export type { ChargeStatus };

/** Transaction context as stored. */
export interface ContextRecord {
  /** Mobile flag. */
  mobile: boolean;
  /** E-commerce flag. */
  isEcommerce: boolean;
  /** Recurring flag. */
  recurring: boolean;
  /** Tax amount as sent. */
  tax?: string;
  /** Device details as sent (kept and returned). */
  deviceInfo?: Record<string, string | boolean>;
}

/** Card details kept for a stored card, a token or a charge. */
export interface CardSummary {
  /** Last four digits. */
  last4: string;
  /** Brand label (VISA, MC, ...). */
  brand: string;
  /** Expiry month 1..12. */
  expMonth: number;
  /** Expiry year, four digits. */
  expYear: number;
  /** Base64 SHA-512 of the full number. */
  numberSHA512: string;
  /** Cvc length (for the masked cvc in charges). */
  cvcLength: number;
  /** Cardholder name. */
  name: string;
  /** Billing address. */
  address: Address;
}

/** A stored customer card. */
export interface CardRecord extends CardSummary {
  /** Card id. */
  id: string;
  /** Owning customer. */
  customerId: string;
  /** ISO timestamp. */
  created: string;
  /** ISO timestamp. */
  updated: string;
  /** Default payment method flag. */
  default: boolean;
  /** Business card flag. */
  isBusiness: boolean;
  /** Commercial card code. */
  commercialCardCode?: string;
}

/** Bank account details kept for a stored account, a token or an e-check. */
export interface BankSummary {
  /** Account holder name. */
  name: string;
  /** Last four digits of the account number. */
  last4: string;
  /** Base64 SHA-512 of the account number. */
  accountNumberSHA512: string;
  /** Account kind. */
  accountType: string;
  /** Routing number. */
  routingNumber: string;
  /** Phone, 10 digits. */
  phone: string;
  /** Input type. */
  inputType: string;
  /** Country code. */
  country: string;
  /** Bank code. */
  bankCode: string;
}

/** A stored customer bank account. */
export interface BankAccountRecord extends BankSummary {
  /** Account id. */
  id: string;
  /** Owning customer. */
  customerId: string;
  /** ISO timestamp. */
  created: string;
  /** ISO timestamp. */
  updated: string;
  /** Default flag. */
  default: boolean;
}

/** Capture details of a charge. */
export interface CaptureRecord {
  /** Captured amount, minor units. */
  amount: number;
  /** Context sent with the capture. */
  context: ContextRecord;
  /** ISO timestamp. */
  created: string;
  /** Description sent with the capture. */
  description: string;
}

/** A stored charge. */
export interface ChargeRecord {
  /** Charge id. */
  id: string;
  /** Request-Id of the create request (void addresses it). */
  requestId: string;
  /** ISO timestamp. */
  created: string;
  /** ISO timestamp of the last change. */
  updated: string;
  /** Authorized amount, minor units. */
  amount: number;
  /** Currency code. */
  currency: string;
  /** Description. */
  description: string;
  /** The create request's `capture` flag. */
  capture: boolean;
  /** Current status. */
  status: ChargeStatus;
  /** Authorization code. */
  authCode: string;
  /** Card charged. */
  card: CardSummary;
  /** Context. */
  context: ContextRecord;
  /** Card on file flag. */
  cardOnFile: boolean;
  /** Set once captured. */
  captureDetail?: CaptureRecord;
  /** Sum of refunds, minor units. */
  refunded: number;
  /** The refunds, oldest first (absent in charges stored by earlier versions). */
  refunds?: RefundEntry[];
}

/** One refund as the charge (or e-check) lists it. */
export interface RefundEntry {
  /** Refund id. */
  id: string;
  /** Amount, minor units. */
  amount: number;
  /** ISO timestamp. */
  created: string;
  /** Description (absent in refunds made by earlier versions). */
  description?: string;
  /** Context (absent in refunds made by earlier versions). */
  context?: ContextRecord;
}

/** A refund or void record. */
export interface AdjustmentRecord {
  /** Record id. */
  id: string;
  /** Charge it belongs to. */
  chargeId: string;
  /** REFUND or VOID. */
  type: "REFUND" | "VOID";
  /** Always ISSUED. */
  status: "ISSUED";
  /** Amount, minor units. */
  amount: number;
  /** ISO timestamp. */
  created: string;
  /** Description. */
  description: string;
  /** Context. */
  context: ContextRecord;
}

/** A stored e-check. */
export interface ECheckRecord {
  /** E-check id. */
  id: string;
  /** ISO timestamp. */
  created: string;
  /** Amount, minor units. */
  amount: number;
  /** Auth code. */
  authCode: string;
  /** Bank account debited. */
  bank: BankSummary;
  /** Check number. */
  checkNumber: string;
  /** Context. */
  context: ContextRecord;
  /** Description. */
  description: string;
  /** Payment mode (WEB). */
  paymentMode: string;
  /** Status: PENDING; REFUNDED once refunded in full. */
  status: string;
  /** Sum of refunds, minor units (absent: none). */
  refunded?: number;
  /** The refunds, oldest first (absent: none). */
  refunds?: RefundEntry[];
}

/** A one-time token. */
export interface TokenRecord {
  /** Token id. */
  id: string;
  /** What it stands for. */
  type: "card" | "bank_account";
  /** ISO timestamp. */
  created: string;
  /** Expiry, epoch ms. */
  expiresAt: number;
  /** Card, when type is card. */
  card?: CardSummary;
  /** Bank account, when type is bank_account. */
  bank?: BankSummary;
}
