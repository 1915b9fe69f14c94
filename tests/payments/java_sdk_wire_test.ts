/**
 * Intuit's Java payments SDK (GitHub `intuit/QuickBooks-V3-Java-SDK`, module
 * `payments-api`, version 6.4.2) on the wire, reproduced from its source:
 * the requests its services build and what its `HttpRequestClient` /
 * `ServiceBase` / Jackson models demand of each response. The full flow of
 * the issue runs against `deno task payments` with its defaults; only the
 * SDK's base URL (`PAYMENTS_BASE_URL_SANDBOX`) is changed.
 *
 * What the SDK does, and this test does the same:
 *
 * - base URL `…/quickbooks/v4/payments/`; card and bank-account services
 *   replace `payments` by `customers` in it (`…/quickbooks/v4/customers/`);
 * - default headers on every request: `Accept-Encoding: utf-8`,
 *   `Accept: application/json`, `Content-Type: application/json`,
 *   `User-Agent: V3JavaSDK-payments-6.4.2`; `Request-Id` from the
 *   `RequestContext` (a dashless UUID, renewed by the caller between
 *   writes); `Authorization: Bearer …` except for tokens;
 * - request bodies are Jackson's: pretty printed (`"key" : value`), nulls
 *   left out, `BigDecimal` amounts as JSON numbers, `Card.expMonth` /
 *   `expYear` and `PaymentContext.mobile` / `isEcommerce` as strings,
 *   `Charge.cardOnFile` a String, `CheckContext.deviceInfo` an object;
 * - `getIntuitTid` reads the `intuit_tid` header of EVERY response (success
 *   or error) and throws a NullPointerException when it is absent;
 * - a 2xx body is deserialised into the model (unknown fields ignored,
 *   unknown enum values read as null, String fields accept any scalar but
 *   no object, Date fields parsed with `yyyy-MM-dd'T'HH:mm:ss`); an error
 *   body into `Errors` (`{"errors": [Error]}`).
 *
 * @module
 */
import assert from "node:assert/strict";
import { spawnServer } from "./_server_process.ts";
import { SAMPLE_BANK_ACCOUNT } from "./_sdk_samples.ts";

const TOKEN = "java-sdk-token";
const SDK_VERSION = "6.4.2";

// ------------------------------------------------------------ the models

/** A Java field type as Jackson reads it. */
type JType =
  | "String"
  | "Boolean"
  | "BigDecimal"
  | "Date"
  | { enum: readonly string[] }
  | { model: Model }
  | { list: JType };
/** A model class: its fields (ignoreUnknown = true on every one). */
type Model = { [field: string]: JType };

const Address: Model = {
  streetAddress: "String",
  city: "String",
  region: "String",
  country: "String",
  postalCode: "String",
};
const DeviceInfo: Model = {
  id: "String",
  type: "String",
  longitude: "String",
  latitude: "String",
  encrypted: "Boolean",
  phoneNumber: "String",
  macAddress: "String",
  ipAddress: "String",
};
const PaymentContext: Model = {
  tax: "BigDecimal",
  deviceInfo: { model: DeviceInfo },
  recurring: "Boolean",
  mobile: "String",
  isEcommerce: "String",
  lodging: { model: {} },
  restaurant: { model: {} },
};
const CheckContext: Model = { deviceInfo: { model: DeviceInfo } };
const Card: Model = {
  id: "String",
  number: "String",
  name: "String",
  address: { model: Address },
  created: "Date",
  updated: "Date",
  commercialCardCode: "String",
  cvcVerification: { model: { result: "String", date: "Date" } },
  cardType: "String",
  expMonth: "String",
  expYear: "String",
  isBusiness: "Boolean",
  isLevel3Eligible: "Boolean",
  default: "Boolean",
  cvc: "String",
  entityId: "String",
  entityType: "String",
  entityVersion: "String",
  cardPresent: { model: { track1: "String", track2: "String", ksn: "String", pinBlock: "String" } },
};
const BankAccount: Model = {
  id: "String",
  name: "String",
  created: "Date",
  updated: "Date",
  inputType: { enum: ["KEYED"] },
  routingNumber: "String",
  accountNumber: "String",
  accountType: {
    enum: ["PERSONAL_CHECKING", "PERSONAL_SAVINGS", "BUSINESS_CHECKING", "BUSINESS_SAVINGS"],
  },
  verificationStatus: { enum: ["VERIFIED", "NOT_VERIFIED", "VERIFICATION_PENDING"] },
  phone: "String",
  default: "Boolean",
  country: "String",
  bankCode: "String",
  entityId: "String",
  entityType: "String",
  entityVersion: "String",
};
const Refund: Model = {
  id: "String",
  created: "Date",
  status: { enum: ["ISSUED", "DECLINED", "SETTLED", "VOIDED", "SUCCEEDED"] },
  amount: "BigDecimal",
  context: { model: PaymentContext },
  description: "String",
  type: "String",
};
const Capture: Model = {
  created: "Date",
  amount: "BigDecimal",
  context: { model: PaymentContext },
  description: "String",
};
const Charge: Model = {
  id: "String",
  created: "Date",
  status: {
    enum: [
      "AUTHORIZED",
      "DECLINED",
      "CAPTURED",
      "CANCELLED",
      "REFUNDED",
      "SETTLED",
      "PENDING",
      "DISPUTED",
      "RETURNED",
      "WITHHELD",
    ],
  },
  amount: "BigDecimal",
  currency: "String",
  token: "String",
  card: { model: Card },
  context: { model: PaymentContext },
  capture: "Boolean",
  authCode: "String",
  captureDetail: { model: Capture },
  refundDetail: { list: { model: Refund } },
  description: "String",
  avsStreet: "String",
  avsZip: "String",
  cardSecurityCodeMatch: "String",
  appType: "String",
  cardOnFile: "String",
};
const ECheck: Model = {
  id: "String",
  created: "Date",
  authCode: "String",
  status: {
    enum: [
      "VOIDED",
      "PENDING",
      "SUCCEEDED",
      "DECLINED",
      "DISPUTED",
      "REFUNDED",
      "WITHHELD",
      "IN_REVIEW",
      "TRANSACTION_DELAYED",
    ],
  },
  amount: "BigDecimal",
  bankAccount: { model: BankAccount },
  token: "String",
  bankAccountOnFile: "String",
  context: { model: CheckContext },
  paymentMode: { enum: ["WEB", "CCD"] },
  description: "String",
  checkNumber: "String",
};
const Token: Model = {
  card: { model: Card },
  bankAccount: { model: BankAccount },
  value: "String",
};
const ErrorModel: Model = {
  code: "String",
  type: "String",
  message: "String",
  detail: "String",
  moreInfo: "String",
  infoLink: "String",
};
const Errors: Model = { errors: { list: { model: ErrorModel } } };

/**
 * Check `value` as Jackson would read it into `type` (with the SDK's
 * ObjectMapper settings); returns the problems found (empty: it reads).
 */
function jacksonProblems(value: unknown, type: JType, path = "$"): string[] {
  if (value === null || value === undefined) return [];
  if (typeof type === "string") {
    switch (type) {
      case "String":
        return typeof value === "object" ? [`${path}: an object or array for a String`] : [];
      case "Boolean":
        return typeof value === "boolean" || value === "true" || value === "false"
          ? []
          : [`${path}: ${JSON.stringify(value)} for a Boolean`];
      case "BigDecimal":
        return typeof value === "number" ||
            (typeof value === "string" && /^-?[0-9]+(\.[0-9]+)?$/.test(value))
          ? []
          : [`${path}: ${JSON.stringify(value)} for a BigDecimal`];
      case "Date":
        return typeof value === "number" ||
            (typeof value === "string" && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}/.test(value))
          ? []
          : [`${path}: ${JSON.stringify(value)} for a Date (yyyy-MM-dd'T'HH:mm:ss)`];
    }
  }
  if ("enum" in type) {
    // Unknown values would read as null: the test wants known ones.
    return typeof value === "string" && type.enum.includes(value)
      ? []
      : [`${path}: ${JSON.stringify(value)} is none of ${type.enum.join("|")}`];
  }
  if ("list" in type) {
    if (!Array.isArray(value)) return [`${path}: not an array`];
    return value.flatMap((v, i) => jacksonProblems(v, type.list, `${path}[${i}]`));
  }
  if (typeof value !== "object" || Array.isArray(value)) return [`${path}: not an object`];
  const o = value as Record<string, unknown>;
  return Object.entries(type.model).flatMap(([k, t]) => jacksonProblems(o[k], t, `${path}.${k}`));
}

// ----------------------------------------------------- the SDK on the wire

/** Jackson's `INDENT_OUTPUT` (DefaultPrettyPrinter), nulls left out. */
function jacksonJson(value: unknown, indent = ""): string {
  if (value === null || typeof value !== "object") {
    // A BigDecimal is written as a plain number.
    if (value instanceof BigDecimalText) return value.text;
    return JSON.stringify(value);
  }
  if (value instanceof BigDecimalText) return value.text;
  if (Array.isArray(value)) {
    return value.length ? `[ ${value.map((v) => jacksonJson(v, indent)).join(", ")} ]` : "[ ]";
  }
  const inner = indent + "  ";
  const fields = Object.entries(value).filter(([, v]) => v !== null && v !== undefined);
  if (fields.length === 0) return "{ }";
  return `{\n${
    fields.map(([k, v]) => `${inner}${JSON.stringify(k)} : ${jacksonJson(v, inner)}`).join(",\n")
  }\n${indent}}`;
}

/** `new BigDecimal("10.55")`: serialised as the number 10.55 exactly as written. */
class BigDecimalText {
  constructor(readonly text: string) {}
}
const bd = (s: string) => new BigDecimalText(s);

/** `RequestContext`: a Request-Id (dashless UUID) and the access token. */
class RequestContext {
  requestId = crypto.randomUUID().replaceAll("-", "");
  constructor(readonly accessToken: string, readonly baseUrl: string) {}
  /** What the SDK's samples do between writes. */
  renew(): void {
    this.requestId = crypto.randomUUID().replaceAll("-", "");
  }
}

interface SdkResponse {
  status: number;
  intuitTid: string;
  // deno-lint-ignore no-explicit-any
  object: any;
}

const seenTids = new Set<string>();

/**
 * `ServiceBase.sendRequest` + `HttpRequestClient.makeRequest`: send, read
 * `intuit_tid` (the SDK's NullPointerException when absent), deserialise a
 * 2xx body into `model` or an error body into `Errors`; throws on non-2xx
 * like the SDK (with the parsed errors).
 */
async function sdkRequest(
  ctx: RequestContext,
  method: "GET" | "POST" | "DELETE",
  url: string,
  opts: { body?: unknown; ignoreAuth?: boolean; model?: JType } = {},
): Promise<SdkResponse> {
  const headers: Record<string, string> = {
    "Accept-Encoding": "utf-8",
    "Accept": "application/json",
    "Content-Type": "application/json",
    "User-Agent": `V3JavaSDK-payments-${SDK_VERSION}`,
    "Request-Id": ctx.requestId,
  };
  if (!opts.ignoreAuth) headers["Authorization"] = `Bearer ${ctx.accessToken}`;
  const res = await fetch(url, {
    method,
    headers,
    body: method === "POST" && opts.body !== undefined ? jacksonJson(opts.body) : undefined,
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  const tid = res.headers.get("intuit_tid");
  if (tid === null) throw new Error(`NullPointerException: no intuit_tid on ${method} ${url}`);
  assert.ok(!seenTids.has(tid), `intuit_tid ${tid} repeated`);
  seenTids.add(tid);
  if (res.status >= 200 && res.status <= 299) {
    let object: unknown;
    if (text !== "" && opts.model) {
      object = JSON.parse(text);
      assert.deepEqual(jacksonProblems(object, opts.model), [], `${method} ${url}`);
    }
    return { status: res.status, intuitTid: tid, object };
  }
  const errors = JSON.parse(text);
  assert.deepEqual(jacksonProblems(errors, { model: Errors }), []);
  const err = new Error(`HTTP ${res.status}: ${text}`) as Error & SdkResponse;
  Object.assign(err, { status: res.status, intuitTid: tid, object: errors });
  throw err;
}

/** The SDK's services over one context (paths exactly as the services build them). */
function services(ctx: RequestContext) {
  const base = ctx.baseUrl; // ".../quickbooks/v4/payments/"
  const customers = base.replaceAll("payments", "customers");
  return {
    createToken: (token: unknown) =>
      sdkRequest(ctx, "POST", `${base}tokens`, {
        body: token,
        ignoreAuth: true,
        model: { model: Token },
      }),
    createCard: (card: unknown, customerId: string) =>
      sdkRequest(ctx, "POST", `${customers}${customerId}/cards`, {
        body: card,
        model: { model: Card },
      }),
    createCardFromToken: (token: unknown, customerId: string) =>
      sdkRequest(ctx, "POST", `${customers}${customerId}/cards/createFromToken`, {
        body: token,
        model: { model: Card },
      }),
    getCard: (customerId: string, cardId: string) =>
      sdkRequest(ctx, "GET", `${customers}${customerId}/cards/${cardId}`, {
        model: { model: Card },
      }),
    getAllCards: (customerId: string, count = 0) =>
      sdkRequest(
        ctx,
        "GET",
        `${customers}${customerId}/cards${count > 0 ? `?count=${count}` : ""}`,
        { model: { list: { model: Card } } },
      ),
    deleteCard: (customerId: string, cardId: string) =>
      sdkRequest(ctx, "DELETE", `${customers}${customerId}/cards/${cardId}`),
    createBankAccount: (account: unknown, customerId: string) =>
      sdkRequest(ctx, "POST", `${customers}${customerId}/bank-accounts`, {
        body: account,
        model: { model: BankAccount },
      }),
    createBankAccountFromToken: (token: unknown, customerId: string) =>
      sdkRequest(ctx, "POST", `${customers}${customerId}/bank-accounts/createFromToken`, {
        body: token,
        model: { model: BankAccount },
      }),
    getBankAccount: (customerId: string, id: string) =>
      sdkRequest(ctx, "GET", `${customers}${customerId}/bank-accounts/${id}`, {
        model: { model: BankAccount },
      }),
    getAllBankAccounts: (customerId: string, count = 0) =>
      sdkRequest(
        ctx,
        "GET",
        `${customers}${customerId}/bank-accounts${count > 0 ? `?count=${count}` : ""}`,
        { model: { list: { model: BankAccount } } },
      ),
    deleteBankAccount: (customerId: string, id: string) =>
      sdkRequest(ctx, "DELETE", `${customers}${customerId}/bank-accounts/${id}`),
    createCharge: (charge: unknown) =>
      sdkRequest(ctx, "POST", `${base}charges`, { body: charge, model: { model: Charge } }),
    retrieveCharge: (id: string) =>
      sdkRequest(ctx, "GET", `${base}charges/${id}`, { model: { model: Charge } }),
    capture: (id: string, capture: unknown) =>
      sdkRequest(ctx, "POST", `${base}charges/${id}/capture`, {
        body: capture,
        model: { model: Charge },
      }),
    refund: (id: string, refund: unknown) =>
      sdkRequest(ctx, "POST", `${base}charges/${id}/refunds`, {
        body: refund,
        model: { model: Refund },
      }),
    getRefund: (id: string, refundId: string) =>
      sdkRequest(ctx, "GET", `${base}charges/${id}/refunds/${refundId}`, {
        model: { model: Refund },
      }),
    voidTransaction: (chargeRequestId: string) =>
      sdkRequest(ctx, "POST", `${base}txn-requests/${chargeRequestId}/void`, {
        model: { model: Refund },
      }),
    createECheck: (echeck: unknown) =>
      sdkRequest(ctx, "POST", `${base}echecks`, { body: echeck, model: { model: ECheck } }),
    retrieveECheck: (id: string) =>
      sdkRequest(ctx, "GET", `${base}echecks/${id}`, { model: { model: ECheck } }),
    refundECheck: (id: string, refund: unknown) =>
      sdkRequest(ctx, "POST", `${base}echecks/${id}/refunds`, {
        body: refund,
        model: { model: Refund },
      }),
    getECheckRefund: (id: string, refundId: string) =>
      sdkRequest(ctx, "GET", `${base}echecks/${id}/refunds/${refundId}`, {
        model: { model: Refund },
      }),
  };
}

// ----------------------------------------------------------------- the flow

const address = {
  region: "CA",
  postalCode: "94086",
  streetAddress: "1130 Kifer Rd",
  city: "Sunnyvale",
  country: "US",
};
/** `new Card.Builder().expYear("2031").expMonth("02")…` as Jackson writes it. */
const card = {
  number: "4111111111111111",
  name: "emulate=0",
  address,
  cvc: "123",
  expMonth: "02",
  expYear: "2031",
};
const bankAccount = SAMPLE_BANK_ACCOUNT;
const paymentContext = { mobile: "false", isEcommerce: "true" };
const deviceInfo = {
  id: "1",
  type: "type",
  longitude: "longitude",
  phoneNumber: "phoneNumber",
  macAddress: "macAddress",
  ipAddress: "34",
};

Deno.test({
  name: "Java payments SDK 6.4.2 wire flow: every call succeeds against the defaults",
  async fn() {
    const srv = await spawnServer(["--port", "0", "--kv", ":memory:", "--token", TOKEN]);
    try {
      const ctx = new RequestContext(TOKEN, `${srv.url}/quickbooks/v4/payments/`);
      const sdk = services(ctx);
      const write = () => ctx.renew(); // a new Request-Id per write, as the samples do

      // Tokens for a card and a bank account.
      write();
      const cardToken = (await sdk.createToken({ card })).object;
      assert.match(cardToken.value, /^tok_/);
      write();
      const cardToken2 = (await sdk.createToken({ card })).object;
      write();
      const bankToken = (await sdk.createToken({ bankAccount })).object;

      // Cards: create, createFromToken, get, list (with count), delete.
      write();
      const c1 = (await sdk.createCard({ ...card, default: true }, "cust-j")).object;
      assert.equal(c1.expMonth, "02");
      assert.equal(c1.expYear, "2031");
      write();
      const c2 = (await sdk.createCardFromToken({ value: cardToken2.value }, "cust-j")).object;
      assert.equal(c2.number, "xxxxxxxxxxxx1111");
      assert.equal(c2.name, "emulate=0");
      write();
      await assert.rejects(
        sdk.createCardFromToken({ value: cardToken2.value }, "cust-j"),
        (e: SdkResponse) => e.status === 400 && e.object.errors[0].detail === "token",
      );
      assert.equal((await sdk.getCard("cust-j", c1.id)).object.id, c1.id);
      assert.equal((await sdk.getAllCards("cust-j")).object.length, 2);
      const newest = (await sdk.getAllCards("cust-j", 1)).object;
      assert.deepEqual(newest.map((c: { id: string }) => c.id), [c2.id]);
      write();
      await sdk.deleteCard("cust-j", c1.id);
      assert.equal((await sdk.getAllCards("cust-j")).object.length, 1);

      // Bank accounts: create, createFromToken, get, list, delete.
      write();
      const b1 = (await sdk.createBankAccount(bankAccount, "cust-j")).object;
      write();
      const b2 = (await sdk.createBankAccountFromToken({ value: bankToken.value }, "cust-j"))
        .object;
      assert.equal(b2.accountType, "PERSONAL_CHECKING");
      assert.equal((await sdk.getBankAccount("cust-j", b2.id)).object.id, b2.id);
      assert.equal((await sdk.getAllBankAccounts("cust-j")).object.length, 2);
      assert.equal((await sdk.getAllBankAccounts("cust-j", 1)).object.length, 1);
      write();
      await sdk.deleteBankAccount("cust-j", b1.id);

      // Charge without capture, capture, partial refund, get refund, retrieve.
      write();
      const auth = (await sdk.createCharge({
        amount: bd("10.55"),
        card,
        currency: "USD",
        context: paymentContext,
        capture: false,
        cardOnFile: "false",
      })).object;
      assert.equal(auth.status, "AUTHORIZED");
      write();
      const captured = (await sdk.capture(auth.id, {
        amount: bd("10.55"),
        context: paymentContext,
        description: "capture",
      })).object;
      assert.equal(captured.status, "CAPTURED");
      assert.equal(captured.capture, true);
      assert.equal(captured.captureDetail.amount, "10.55");
      write();
      const refund = (await sdk.refund(auth.id, {
        amount: bd("5.00"),
        description: "partial",
        context: { ...paymentContext, tax: bd("0") },
      })).object;
      assert.equal(refund.status, "ISSUED");
      assert.deepEqual((await sdk.getRefund(auth.id, refund.id)).object, refund);
      const after = (await sdk.retrieveCharge(auth.id)).object;
      assert.equal(after.status, "CAPTURED");
      assert.deepEqual(after.refundDetail, [refund]);
      assert.equal(typeof after.appType, "string");

      // Charge with capture (by token), and a void by its Request-Id.
      write();
      const paid = await sdk.createCharge({
        amount: bd("3.00"),
        token: cardToken.value,
        currency: "USD",
        context: paymentContext,
        capture: true,
      });
      assert.equal(paid.object.status, "CAPTURED");
      const chargeRequestId = ctx.requestId;
      write(); // "set new request id" before the void, as the SDK's sample does
      const voided = (await sdk.voidTransaction(chargeRequestId)).object;
      assert.equal(voided.status, "ISSUED");
      assert.equal(voided.type, "VOID");
      assert.equal((await sdk.retrieveCharge(paid.object.id)).object.status, "CANCELLED");

      // E-checks: create (with deviceInfo), retrieve, refund, get refund.
      write();
      const echeck = (await sdk.createECheck({
        amount: bd("2.22"),
        bankAccount,
        context: { deviceInfo },
        paymentMode: "WEB",
        checkNumber: "12345678",
        description: "Check Auth test call",
      })).object;
      assert.equal(echeck.status, "PENDING");
      assert.deepEqual(echeck.context.deviceInfo, deviceInfo);
      const gotECheck = (await sdk.retrieveECheck(echeck.id)).object;
      assert.deepEqual(gotECheck.context.deviceInfo, deviceInfo);
      write();
      const ecRefund = (await sdk.refundECheck(echeck.id, {
        amount: bd("2.22"),
        description: "refund",
      })).object;
      assert.equal(ecRefund.amount, "2.22");
      assert.deepEqual((await sdk.getECheckRefund(echeck.id, ecRefund.id)).object, ecRefund);
      assert.equal((await sdk.retrieveECheck(echeck.id)).object.status, "REFUNDED");

      // Errors carry intuit_tid too, and parse as the SDK's Errors.
      write();
      await assert.rejects(sdk.retrieveCharge("ch_missing"), (e: SdkResponse) => {
        assert.equal(e.status, 404);
        assert.ok(e.object.errors[0].moreInfo);
        return true;
      });
      const bad = new RequestContext("wrong-token", ctx.baseUrl);
      await assert.rejects(services(bad).retrieveCharge(auth.id), (e: SdkResponse) => {
        assert.equal(e.status, 401);
        assert.ok(e.object.errors[0].moreInfo);
        return true;
      });
      // Every response had its own intuit_tid (checked as they came).
      assert.ok(seenTids.size >= 30, String(seenTids.size));
    } finally {
      await srv.stop();
    }
  },
});

Deno.test("the Jackson reading model of this test refuses what the SDK cannot read", () => {
  // A String field given an object, a bad Date, an unknown enum value.
  assert.notDeepEqual(jacksonProblems({ expMonth: { m: 2 } }, { model: Card }), []);
  assert.notDeepEqual(jacksonProblems({ created: "25/11/2026" }, { model: Charge }), []);
  assert.notDeepEqual(jacksonProblems({ status: "PARTIAL" }, { model: Charge }), []);
  assert.notDeepEqual(jacksonProblems({ refundDetail: {} }, { model: Charge }), []);
  assert.deepEqual(jacksonProblems({ mobile: true, extra: [1] }, { model: PaymentContext }), []);
  assert.equal(
    jacksonJson({ a: bd("1.50"), b: null, c: { d: "x" } }),
    '{\n  "a" : 1.50,\n  "c" : {\n    "d" : "x"\n  }\n}',
  );
});
