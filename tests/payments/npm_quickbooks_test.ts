/**
 * The npm package `quickbooks` 1.0.4 (a QuickBooks Payments client nobody
 * here wrote, installed from npm, not vendored) drives its whole flow against
 * the sandbox started as `deno task payments` with its defaults; the only
 * change to the client is its endpoint. Its own defects (named in
 * payments/README.md) are asserted as what they are:
 *
 * - card and bank-account calls go to `/quickbooks/v4/payments/customers/…`,
 *   a path the real API does not serve (it serves `/quickbooks/v4/customers/…`,
 *   as the Java SDK and Intuit's API reference call it): 404;
 * - `deleteCard` and `deleteBankAccount` call `request.delete`, which request
 *   2.67.0 does not have (it has `request.del`): a TypeError before any
 *   request is made;
 * - `bankAccount(customerId, id)` is defined twice; the second definition
 *   (a card read) wins, so it reads a card.
 *
 * @module
 */
import assert from "node:assert/strict";
import QuickBooks from "quickbooks";
import { spawnServer } from "./_server_process.ts";
import { SAMPLE_BANK_ACCOUNT } from "./_sdk_samples.ts";

const TOKEN = "npm-sdk-token";

interface Outcome {
  // deno-lint-ignore no-explicit-any
  err: any;
  // deno-lint-ignore no-explicit-any
  body: any;
}

// deno-lint-ignore no-explicit-any
type Qbo = any;

/** Call an SDK method in its callback style; bounded to 10 s. */
function call(qbo: Qbo, method: string, ...args: unknown[]): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${method}: no answer in 10 s`)), 10_000);
    qbo[method](...args, (err: unknown, body: unknown) => {
      clearTimeout(timer);
      resolve({ err, body });
    });
  });
}

const card = {
  number: "4111111111111111",
  expMonth: "02",
  expYear: "2031",
  cvc: "123",
  name: "emulate=0",
  address: {
    region: "CA",
    postalCode: "94086",
    streetAddress: "1130 Kifer Rd",
    country: "US",
    city: "Sunnyvale",
  },
};

const bankAccount = SAMPLE_BANK_ACCOUNT;

Deno.test({
  name: "npm quickbooks@1.0.4: tokens, charges with capture and refund, e-checks; its defects",
  // request's keep-alive agent and timers outlive the calls
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const srv = await spawnServer(["--port", "0", "--kv", ":memory:", "--token", TOKEN]);
    try {
      // OAuth 2.0 form of the constructor (positional: key, secret, token,
      // tokenSecret, realmId, refreshToken, oauthversion, useSandbox, debug).
      const qbo: Qbo = new QuickBooks("", "", TOKEN, false, "realm-1", null, "2.0", true, false);
      assert.equal(qbo.endpoint, "https://sandbox.api.intuit.com/quickbooks/v4");
      qbo.endpoint = `${srv.url}/quickbooks/v4`; // the only change

      // Tokens (no Authorization header is sent for them).
      const cardToken = await call(qbo, "createToken", { card });
      assert.equal(cardToken.err, null, JSON.stringify(cardToken.err));
      assert.match(cardToken.body.value, /^tok_/);
      const bankToken = await call(qbo, "createToken", { bankAccount });
      assert.equal(bankToken.err, null, JSON.stringify(bankToken.err));

      // The SDK's own test flow: capture sent as the string "false".
      const auth = await call(qbo, "charge", {
        amount: "10.55",
        card,
        currency: "USD",
        capture: "false",
        context: { mobile: "false", isEcommerce: "true" },
      });
      assert.equal(auth.err, null, JSON.stringify(auth.err));
      assert.equal(auth.body.status, "AUTHORIZED");
      assert.equal(auth.body.capture, false);
      const got = await call(qbo, "getCharge", auth.body.id);
      assert.equal(got.err, null);
      assert.equal(got.body.id, auth.body.id);
      const captured = await call(qbo, "capture", auth.body.id, { amount: "10.55" });
      assert.equal(captured.err, null, JSON.stringify(captured.err));
      assert.equal(captured.body.status, "CAPTURED");
      assert.equal(captured.body.capture, true);
      const refund = await call(qbo, "refundCharge", auth.body.id, { amount: "5.00" });
      assert.equal(refund.err, null, JSON.stringify(refund.err));
      assert.equal(refund.body.type, "REFUND");
      const gotRefund = await call(qbo, "getChargeRefund", auth.body.id, refund.body.id);
      assert.equal(gotRefund.err, null);
      assert.deepEqual(gotRefund.body, refund.body);
      const after = await call(qbo, "getCharge", auth.body.id);
      assert.equal(after.body.status, "CAPTURED"); // partly refunded
      assert.equal(after.body.refundDetail.length, 1);
      const rest = await call(qbo, "refundCharge", auth.body.id, {});
      assert.equal(rest.body.amount, "5.55");
      assert.equal((await call(qbo, "getCharge", auth.body.id)).body.status, "REFUNDED");

      // A charge paid by the card token, captured at once ("true" as a string).
      const paid = await call(qbo, "charge", {
        amount: "3.00",
        currency: "USD",
        token: cardToken.body.value,
        capture: "true",
      });
      assert.equal(paid.err, null, JSON.stringify(paid.err));
      assert.equal(paid.body.status, "CAPTURED");
      // The token paid once.
      const again = await call(qbo, "charge", {
        amount: "3.00",
        currency: "USD",
        token: cardToken.body.value,
      });
      assert.equal(again.err.errors[0].detail, "token");

      // E-checks: with details, and with the bank-account token; refunds.
      const echeck = await call(qbo, "echeck", {
        amount: "2.22",
        paymentMode: "WEB",
        bankAccount,
        checkNumber: "12345678",
        description: "Check Auth test call",
      });
      assert.equal(echeck.err, null, JSON.stringify(echeck.err));
      assert.equal(echeck.body.status, "PENDING");
      const gotECheck = await call(qbo, "getEcheck", echeck.body.id);
      assert.equal(gotECheck.body.id, echeck.body.id);
      const ecRefund = await call(qbo, "refundEcheck", echeck.body.id, { amount: "1.00" });
      assert.equal(ecRefund.err, null, JSON.stringify(ecRefund.err));
      assert.equal(ecRefund.body.amount, "1.00");
      const gotEcRefund = await call(qbo, "getEcheckRefund", echeck.body.id, ecRefund.body.id);
      assert.deepEqual(gotEcRefund.body, ecRefund.body);
      const tooMuch = await call(qbo, "refundEcheck", echeck.body.id, { amount: "1.23" });
      assert.equal(tooMuch.err.errors[0].message, "amount is invalid.");
      const byToken = await call(qbo, "echeck", {
        amount: "1.00",
        paymentMode: "WEB",
        token: bankToken.body.value,
      });
      assert.equal(byToken.err, null, JSON.stringify(byToken.err));

      // Defect: card and bank-account paths start with /payments/customers.
      for (
        const [method, args] of [
          ["createCard", ["cust-1", card]],
          ["cards", ["cust-1"]],
          ["createCardFromToken", ["cust-1", { value: "tok_x" }]],
          ["createBankAccount", ["cust-1", bankAccount]],
          ["bankAccounts", ["cust-1"]],
          ["createBankAccountFromToken", ["cust-1", { value: "tok_x" }]],
          ["bankAccount", ["cust-1", "card_x"]],
        ] as const
      ) {
        const out = await call(qbo, method, ...args);
        assert.equal(out.err?.errors?.[0]?.code, "PMT-4000", `${method}: ${JSON.stringify(out)}`);
        assert.equal(out.err.errors[0].detail, "No such resource or path", method);
      }
      // Defect: bankAccount() is the card read (its second definition wins).
      assert.match(String(qbo.bankAccount), /\/cards\//);
      // Defect: deleteCard / deleteBankAccount call request.delete, which does not exist.
      for (const method of ["deleteCard", "deleteBankAccount"]) {
        assert.throws(() => qbo[method]("cust-1", "id-1", () => {}), TypeError, method);
      }
    } finally {
      await srv.stop();
    }
  },
});
