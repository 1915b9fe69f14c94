/**
 * Zod wire schemas of the payments API (requests, responses and the error
 * envelope). The payments routes validate with them, the OpenAPI document is
 * generated from them and the typed client in `examples/` infers its types
 * from them.
 *
 * Request schemas check the shape and the syntactic bounds of each field
 * (digits, lengths, ranges). Rules that need arithmetic or a clock (Luhn, ABA
 * checksum, card expiry) live in `payments/domain/`.
 *
 * @module
 */
import { z } from "@hono/zod-openapi";

const DIGITS = /^[0-9]+$/;

/** The rule every amount follows (the `moreInfo` of an invalid amount). */
export const AMOUNT_RULE = "a decimal string or JSON number from 0.00 to 99999.99";

/** The rules an amount can break, as told in `moreInfo`. */
export const AMOUNT_RULES = {
  form: `${AMOUNT_RULE}, such as "10.00"`,
  range: "from 0.00 to 99999.99",
  decimals: "at most two decimals",
} as const;

/** Which amount rule `value` breaks, or undefined for a valid amount. */
export function amountProblem(value: unknown): string | undefined {
  if (typeof value === "number") {
    if (!Number.isFinite(value)) return AMOUNT_RULES.form;
    if (value < 0 || value > 99999.99) return AMOUNT_RULES.range;
    return Math.round(value * 100) / 100 === value ? undefined : AMOUNT_RULES.decimals;
  }
  if (typeof value !== "string") return AMOUNT_RULES.form;
  const m = /^(-?)([0-9]+)(?:\.([0-9]+))?$/.exec(value);
  if (!m) return AMOUNT_RULES.form;
  if (m[1] === "-" || m[2].length > 5) return AMOUNT_RULES.range;
  return (m[3] ?? "").length > 2 ? AMOUNT_RULES.decimals : undefined;
}

/**
 * An amount: decimal string or number, 0.00 to 99999.99, at most two
 * decimals. A JSON number is taken at its exact value: the request body
 * reader refuses one that a double cannot hold exactly.
 */
export const AmountInput = z
  .union([z.string(), z.number()], { error: AMOUNT_RULES.form })
  .superRefine((v, ctx) => {
    const problem = amountProblem(v);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  })
  .openapi({
    description: "Decimal amount, 0.00 to 99999.99, at most two decimals",
    example: "10.00",
  });

/**
 * The rules of the request fields that have one, as told in the `moreInfo`
 * of an error (rules needing arithmetic or a clock are applied in
 * `payments/domain/` with the same words).
 */
export const FIELD_RULES = {
  cardNumber: "12 to 19 digits passing the Luhn check",
  expMonth: "1 to 12",
  expYear: "four digits, not in the past",
  cvc: "3 or 4 digits",
  accountNumber: "4 to 17 digits",
  routingNumber: "9 digits with a valid ABA checksum",
  phone: "10 digits",
  flag: 'a boolean or "true"/"false"',
} as const;

/** `{ error }` parameter of a zod check. */
const says = (error: string) => ({ error });

/** A boolean flag sent as a boolean or as the strings "true"/"false". */
export const FlagInput = z.union(
  [z.boolean(), z.enum(["true", "false"], says(FIELD_RULES.flag))],
  says(FIELD_RULES.flag),
);

/** Device details of a transaction context (the Java SDK's `DeviceInfo`). */
export const DeviceInfo = z
  .object({
    id: z.string().max(100).optional(),
    type: z.string().max(100).optional(),
    longitude: z.string().max(100).optional(),
    latitude: z.string().max(100).optional(),
    encrypted: FlagInput.optional(),
    phoneNumber: z.string().max(100).optional(),
    macAddress: z.string().max(100).optional(),
    ipAddress: z.string().max(100).optional(),
  })
  .openapi("DeviceInfo");

/**
 * Transaction context in requests. The Java SDK sends `mobile` and
 * `isEcommerce` as strings, `recurring` as a boolean and `tax` as a number;
 * `deviceInfo` is kept and returned.
 */
export const ContextInput = z
  .object({
    mobile: FlagInput.optional(),
    isEcommerce: FlagInput.optional(),
    recurring: FlagInput.optional(),
    tax: z.union([z.string().max(32), z.number()]).optional(),
    deviceInfo: DeviceInfo.optional(),
  })
  .openapi("ContextRequest");

/** Billing address as an object. */
export const Address = z
  .object({
    streetAddress: z.string().max(200).optional(),
    city: z.string().max(100).optional(),
    region: z.string().max(100).optional(),
    postalCode: z.string().max(20).optional(),
    country: z.string().max(60).optional(),
  })
  .openapi("Address");

/** A month 1..12 given as integer or digit string. */
const MonthInput = z.union([
  z.number().int(says(FIELD_RULES.expMonth)).min(1, says(FIELD_RULES.expMonth))
    .max(12, says(FIELD_RULES.expMonth)),
  z.string().regex(/^(0?[1-9]|1[0-2])$/, says(FIELD_RULES.expMonth)),
], says(FIELD_RULES.expMonth));
/** A four-digit year given as integer or digit string. */
const YearInput = z.union([
  z.number().int(says(FIELD_RULES.expYear)).min(1000, says(FIELD_RULES.expYear))
    .max(9999, says(FIELD_RULES.expYear)),
  z.string().regex(/^[0-9]{4}$/, says(FIELD_RULES.expYear)),
], says(FIELD_RULES.expYear));

/** A string of digits, `min` to `max` long, breaking `rule` otherwise. */
const digits = (min: number, max: number, rule: string) =>
  z.string(says(rule)).min(min, says(rule)).max(max, says(rule)).regex(DIGITS, says(rule));

/** Card as sent by a client (create card, charge, token). */
export const CardInput = z
  .object({
    number: digits(12, 19, FIELD_RULES.cardNumber).openapi({ example: "4111111111111111" }),
    expMonth: MonthInput.openapi({ example: 12 }),
    expYear: YearInput.openapi({ example: 2030 }),
    cvc: digits(3, 4, FIELD_RULES.cvc).openapi({ example: "123" }),
    name: z.string().max(100).optional(),
    default: FlagInput.optional(),
    commercialCardCode: z.string().max(50).optional(),
    address: z.union([z.string().max(400), Address]).optional(),
    isBusiness: FlagInput.optional(),
    cardType: z.string().max(40).optional(),
  })
  .openapi("CardRequest");

/** Bank account kinds accepted. */
export const AccountType = z.enum([
  "PERSONAL_CHECKING",
  "PERSONAL_SAVINGS",
  "BUSINESS_CHECKING",
  "BUSINESS_SAVINGS",
], says("PERSONAL_CHECKING, PERSONAL_SAVINGS, BUSINESS_CHECKING or BUSINESS_SAVINGS"));

/** Bank account as sent by a client (create, e-check, token). */
export const BankAccountInput = z
  .object({
    name: z.string().min(1).max(100),
    accountNumber: digits(4, 17, FIELD_RULES.accountNumber).openapi({ example: "000123456789" }),
    accountType: AccountType,
    routingNumber: digits(9, 9, FIELD_RULES.routingNumber).openapi({ example: "011000015" }),
    phone: digits(10, 10, FIELD_RULES.phone).openapi({ example: "5555550100" }),
    default: FlagInput.optional(),
    country: z.string().max(3).optional(),
    bankCode: z.string().max(40).optional(),
    inputType: z.enum(["KEYED"]).optional(),
  })
  .openapi("BankAccountRequest");

/** Create-charge request: `token` or `card` (one of the two). */
export const ChargeInput = z
  .object({
    amount: AmountInput,
    currency: z.literal("USD", says('"USD"')),
    token: z.string().min(1).max(200).optional().openapi({
      description:
        "The `value` of a one-time token (POST /payments/tokens), instead of the details",
    }),
    card: CardInput.optional(),
    context: ContextInput.optional(),
    capture: FlagInput.optional().openapi({
      description: 'Capture at once; a boolean or "true"/"false" (default false)',
    }),
    description: z.string().max(500).optional(),
    cardOnFile: FlagInput.optional().openapi({
      description: 'A boolean or "true"/"false" (a String in the Java SDK model)',
    }),
  })
  .openapi("ChargeRequest", {
    example: {
      amount: "10.55",
      currency: "USD",
      capture: false,
      card: {
        number: "4111111111111111",
        expMonth: "02",
        expYear: "2030",
        cvc: "123",
        name: "emulate=0",
        address: { streetAddress: "1130 Kifer Rd", city: "Sunnyvale", region: "CA" },
      },
      context: { mobile: "false", isEcommerce: "true" },
    },
  });

/** Capture or refund request. `amount` defaults to the full remaining amount. */
export const AdjustInput = z
  .object({
    amount: AmountInput.optional(),
    description: z.string().max(500).optional(),
    context: ContextInput.optional(),
  })
  .openapi("AdjustRequest", {
    example: {
      amount: "5.00",
      description: "partial",
      context: { mobile: "false", isEcommerce: "true" },
    },
  });

/** Void request (body optional). */
export const VoidInput = z
  .object({
    description: z.string().max(500).optional(),
    context: ContextInput.optional(),
  })
  .openapi("VoidRequest", { example: { description: "order cancelled" } });

/**
 * Create-e-check request, lower camelCase form. The capitalised form of the
 * spec (`Amount`, `PaymentMode`, `BankAccount`, ...) is accepted too: the
 * server lowers the first letter of each key before validating.
 */
export const ECheckInput = z
  .object({
    amount: AmountInput,
    paymentMode: z.literal("WEB", says('"WEB"')),
    bankAccount: BankAccountInput.optional(),
    token: z.string().min(1).max(200).optional().openapi({
      description:
        "The `value` of a one-time token (POST /payments/tokens), instead of the details",
    }),
    description: z.string().max(500).optional(),
    checkNumber: z.string().max(20).optional(),
    context: ContextInput.optional(),
  })
  .openapi("ECheckRequest", {
    example: {
      amount: "2.22",
      paymentMode: "WEB",
      bankAccount: {
        name: "Jo Doe",
        accountNumber: "11000000333456781",
        accountType: "PERSONAL_CHECKING",
        routingNumber: "322079353",
        phone: "1234567890",
      },
      checkNumber: "12345678",
      description: "Check auth",
      context: { deviceInfo: { id: "1", type: "mobile", ipAddress: "203.0.113.9" } },
    },
  });

/** One-time token request: a card or a bank account. */
export const TokenInput = z
  .object({
    card: CardInput.optional(),
    bankAccount: BankAccountInput.optional(),
  })
  .openapi("TokenRequest", {
    example: {
      card: { number: "4111111111111111", expMonth: "02", expYear: "2030", cvc: "123", name: "Jo" },
    },
  });

/** Store a card or bank account from a one-time token: `{"value": "<token>"}`. */
export const FromTokenInput = z
  .object({
    value: z.string().min(1).max(200).openapi({
      description: "The `value` of a one-time token (POST /payments/tokens)",
    }),
  })
  .openapi("FromTokenRequest", { example: { value: "tok_0123456789abcdefghijklmnop" } });

// ---------------------------------------------------------------- responses

/** Context in responses: flags are booleans. */
export const ContextOutput = z
  .object({
    mobile: z.boolean(),
    isEcommerce: z.boolean(),
    recurring: z.boolean(),
    tax: z.string().optional(),
    deviceInfo: z.record(z.string(), z.unknown()).optional(),
  })
  .openapi("Context");

/** A refund or void record as returned (also inside a charge's `refundDetail`). */
const RefundShape = z.object({
  id: z.string(),
  amount: z.string(),
  context: ContextOutput,
  created: z.string(),
  description: z.string(),
  status: z.literal("ISSUED"),
  type: z.literal("REFUND"),
});

/** Card as returned on create (subset). */
export const CardCreated = z
  .object({
    id: z.string(),
    created: z.string(),
    updated: z.string(),
    name: z.string(),
    number: z.string().openapi({ example: "xxxxxxxxxxxx1111" }),
    expMonth: z.string(),
    expYear: z.string(),
    default: z.boolean(),
    isBusiness: z.boolean(),
    address: Address,
  })
  .openapi("CardCreated");

/** Card as returned on read and list. */
export const Card = CardCreated.extend({
  cardType: z.string(),
  cvcVerification: z.object({ date: z.string(), result: z.string() }),
  entityId: z.string(),
  entityType: z.string(),
  entityVersion: z.string(),
  isLevel3Eligible: z.boolean(),
  numberSHA512: z.string(),
  status: z.string(),
  zeroDollarVerification: z.object({ status: z.string() }),
}).openapi("Card");

/** Card list. */
export const CardList = z.array(Card).openapi("CardList");

/** Card delete result. */
export const CardDeleted = z
  .object({ status: z.string(), message: z.string(), code: z.string() })
  .openapi("CardDeleted");

/** Bank account as returned. `accountNumberSHA512` only on create. */
export const BankAccount = z
  .object({
    id: z.string(),
    accountNumber: z.string(),
    accountNumberSHA512: z.string().optional(),
    accountType: z.string(),
    bankCode: z.string(),
    bankName: z.string(),
    country: z.string(),
    created: z.string(),
    updated: z.string(),
    default: z.boolean(),
    entityId: z.string(),
    entityType: z.string(),
    entityVersion: z.string(),
    inputType: z.string(),
    name: z.string(),
    phone: z.string(),
    routingNumber: z.string(),
    verificationStatus: z.string(),
  })
  .openapi("BankAccount");

/** Bank account list. */
export const BankAccountList = z.array(BankAccount).openapi("BankAccountList");

/** Bank account delete result. */
export const BankAccountDeleted = z
  .object({ status: z.string(), message: z.string() })
  .openapi("BankAccountDeleted");

/** Card summary inside a charge. */
export const ChargeCard = z
  .object({
    cardType: z.string(),
    cvc: z.string(),
    expMonth: z.string(),
    expYear: z.string(),
    name: z.string(),
    number: z.string(),
    address: Address,
  })
  .openapi("ChargeCard");

/** Capture detail of a captured charge. */
export const CaptureDetail = z
  .object({
    amount: z.string(),
    context: ContextOutput,
    created: z.string(),
    description: z.string(),
  })
  .openapi("CaptureDetail");

/** One refund as a charge lists it. */
export const RefundSummary = z
  .object({ id: z.string(), amount: z.string(), created: z.string() })
  .openapi("RefundSummary");

/** Charge statuses this sandbox produces. */
export const ChargeStatus = z.enum([
  "AUTHORIZED",
  "CAPTURED",
  "REFUNDED",
  "CANCELLED",
  "DECLINED",
]);

/** Charge as returned. */
export const Charge = z
  .object({
    id: z.string(),
    amount: z.string(),
    currency: z.string(),
    description: z.string(),
    created: z.string(),
    status: ChargeStatus,
    capture: z.boolean().openapi({ description: "True once captured (at create or later)" }),
    authCode: z.string(),
    appType: z.string().openapi({ description: "Application type; this sandbox says SANDBOX" }),
    avsStreet: z.string(),
    avsZip: z.string(),
    cardSecurityCodeMatch: z.string(),
    card: ChargeCard,
    context: ContextOutput,
    captureDetail: CaptureDetail.optional(),
    refundedAmount: z.string().openapi({
      description: "Sum of the refunds issued",
      example: "10.00",
    }),
    refundableAmount: z.string().openapi({
      description: "What a refund may still return: the rest of the captured amount " +
        "(an authorization: its whole amount, refunded only in full); 0.00 once fully " +
        "refunded, cancelled or declined",
      example: "15.00",
    }),
    refunds: z.array(RefundSummary).openapi({ description: "The refunds, newest first" }),
    refundDetail: z.array(RefundShape).optional().openapi({
      description: "The refunds as full records, oldest first (the Java SDK's `refundDetail`); " +
        "absent before the first refund",
    }),
  })
  .openapi("Charge");

/** Refund record. */
export const Refund = RefundShape.openapi("Refund");

/** A charge's refunds, newest first. */
export const RefundList = z.array(Refund).openapi("RefundList");

/** Void record. */
export const Void = z
  .object({
    id: z.string(),
    amount: z.string(),
    context: ContextOutput,
    created: z.string(),
    status: z.literal("ISSUED"),
    type: z.literal("VOID"),
  })
  .openapi("Void");

/** E-check as returned. */
export const ECheck = z
  .object({
    id: z.string(),
    amount: z.string(),
    authCode: z.string(),
    bankAccount: z.object({
      accountNumber: z.string(),
      accountType: z.string(),
      inputType: z.string(),
      name: z.string(),
      phone: z.string(),
      routingNumber: z.string(),
    }),
    checkNumber: z.string(),
    context: ContextOutput,
    created: z.string(),
    description: z.string(),
    paymentMode: z.string(),
    status: z.string(),
    refundedAmount: z.string().optional(),
    refundableAmount: z.string().optional(),
  })
  .openapi("ECheck");

/** One-time token as returned. */
export const Token = z
  .object({
    id: z.string(),
    value: z.string().openapi({
      description: "The token to send as a charge's or e-check's `token` (the same string as `id`)",
    }),
    type: z.enum(["card", "bank_account"]),
    created: z.string(),
    expires: z.string(),
    card: z
      .object({
        number: z.string(),
        expMonth: z.string(),
        expYear: z.string(),
        cardType: z.string(),
        name: z.string(),
      })
      .optional(),
    bankAccount: z
      .object({
        accountNumber: z.string(),
        accountType: z.string(),
        name: z.string(),
        routingNumber: z.string(),
      })
      .optional(),
  })
  .openapi("Token");

/** The fields of one error in the envelope (spelt out: the package's public API has explicit types). */
type ErrorItemShape = {
  code: z.ZodString;
  type: z.ZodString;
  message: z.ZodString;
  detail: z.ZodString;
  moreInfo: z.ZodOptional<z.ZodString>;
  infoLink: z.ZodString;
};

/** One error in the envelope. */
export const ErrorItem: z.ZodObject<ErrorItemShape> = z
  .object({
    code: z.string().openapi({ example: "PMT-4000" }),
    type: z.string().openapi({ example: "invalid_request" }),
    message: z.string().openapi({ example: "expMonth is invalid." }),
    detail: z.string().openapi({ example: "card.expMonth" }),
    moreInfo: z.string().optional().openapi({
      description: "The rule that failed, when one did",
      example: "1 to 12",
    }),
    infoLink: z.string(),
  })
  .openapi("ErrorItem");

/** The error envelope every failure uses. */
export const ErrorEnvelope: z.ZodObject<{ errors: z.ZodArray<typeof ErrorItem> }> = z.object({
  errors: z.array(ErrorItem),
}).openapi("Errors");

/** Health response. */
export const Health = z
  .object({ status: z.literal("ok"), timestamp: z.string() })
  .openapi("Health");

/** Inferred wire types. */
export type CardInput = z.infer<typeof CardInput>;
/** Bank account request type. */
export type BankAccountInput = z.infer<typeof BankAccountInput>;
/** Charge request type. */
export type ChargeInput = z.infer<typeof ChargeInput>;
/** Capture/refund request type. */
export type AdjustInput = z.infer<typeof AdjustInput>;
/** Void request type. */
export type VoidInput = z.infer<typeof VoidInput>;
/** E-check request type. */
export type ECheckInput = z.infer<typeof ECheckInput>;
/** Token request type. */
export type TokenInput = z.infer<typeof TokenInput>;
/** Create-from-token request type. */
export type FromTokenInput = z.infer<typeof FromTokenInput>;
/** Device info type. */
export type DeviceInfo = z.infer<typeof DeviceInfo>;
/** Context request type. */
export type ContextInput = z.infer<typeof ContextInput>;
/** Address type. */
export type Address = z.infer<typeof Address>;
/** Card response type. */
export type Card = z.infer<typeof Card>;
/** Card create response type. */
export type CardCreated = z.infer<typeof CardCreated>;
/** Card delete response type. */
export type CardDeleted = z.infer<typeof CardDeleted>;
/** Bank account response type. */
export type BankAccount = z.infer<typeof BankAccount>;
/** Bank account delete response type. */
export type BankAccountDeleted = z.infer<typeof BankAccountDeleted>;
/** Charge response type. */
export type Charge = z.infer<typeof Charge>;
/** Charge status type. */
export type ChargeStatus = z.infer<typeof ChargeStatus>;
/** Context response type. */
export type ContextOutput = z.infer<typeof ContextOutput>;
/** Refund response type. */
export type Refund = z.infer<typeof Refund>;
/** Refund summary (inside a charge) type. */
export type RefundSummary = z.infer<typeof RefundSummary>;
/** Void response type. */
export type Void = z.infer<typeof Void>;
/** E-check response type. */
export type ECheck = z.infer<typeof ECheck>;
/** Token response type. */
export type Token = z.infer<typeof Token>;
/** Error envelope type. */
export type ErrorEnvelope = z.infer<typeof ErrorEnvelope>;
/** Error item type. */
export type ErrorItem = z.infer<typeof ErrorItem>;
