import assert from "node:assert/strict";
import * as S from "../../shared/payments_schemas.ts";
import { BANK, harness } from "../_testing.ts";

Deno.test("e-checks: capitalised spec form → PENDING, masked account and routing", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const r = await h.req("POST", "payments/echecks", {
    Amount: "25.5",
    PaymentMode: "WEB",
    BankAccount: {
      Name: BANK.name,
      AccountNumber: BANK.accountNumber,
      AccountType: BANK.accountType,
      RoutingNumber: BANK.routingNumber,
      Phone: BANK.phone,
    },
    Description: "rent",
    CheckNumber: "1001",
    Context: { mobile: "false", isEcommerce: "true" },
  });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  const ec = S.ECheck.strict().parse(r.body);
  assert.equal(ec.status, "PENDING");
  assert.equal(ec.amount, "25.50");
  assert.equal(ec.paymentMode, "WEB");
  assert.equal(ec.checkNumber, "1001");
  assert.equal(ec.description, "rent");
  assert.equal(ec.bankAccount.accountNumber, "xxxxxxxxxxxx6789");
  assert.equal(ec.bankAccount.routingNumber, "xxxxx0015");
  assert.equal(ec.context.isEcommerce, true);
  assert.deepEqual(ec.context.deviceInfo, {});
  const got = await h.req("GET", `payments/echecks/${ec.id}`);
  assert.equal(got.status, 200);
  assert.deepEqual(got.body, r.body);
  h.close();
});

Deno.test("e-checks: lower camelCase form; paymentMode must be WEB; bank account or token", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const ok = await h.req("POST", "payments/echecks", {
    amount: 10,
    paymentMode: "WEB",
    bankAccount: BANK,
  });
  assert.equal(ok.status, 201);
  assert.equal(ok.body.amount, "10.00");
  const tel = await h.req("POST", "payments/echecks", {
    amount: 10,
    paymentMode: "TEL",
    bankAccount: BANK,
  });
  assert.equal(tel.status, 400);
  assert.equal(tel.body.errors[0].detail, "paymentMode");
  const none = await h.req("POST", "payments/echecks", { amount: 10, paymentMode: "WEB" });
  assert.equal(none.status, 400);
  assert.equal(none.body.errors[0].code, "PMT-4002");
  assert.equal(none.body.errors[0].message, "bankAccount is required.");
  const bad = await h.req("POST", "payments/echecks", {
    amount: 10,
    paymentMode: "WEB",
    bankAccount: { ...BANK, routingNumber: "011000016" },
  });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.errors[0].detail, "bankAccount.routingNumber");
  assert.equal((await h.req("GET", "payments/echecks/ec_nope")).status, 404);
  h.close();
});
