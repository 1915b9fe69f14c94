import assert from "node:assert/strict";
import {
  capture,
  MAX_REFUNDS_PER_CHARGE,
  refund,
  refundableAmount,
  voidCharge,
} from "./charge_rules.ts";
import { PaymentsError } from "./errors.ts";
import type { ChargeRecord } from "./records.ts";

const ctx = { mobile: false, isEcommerce: true, recurring: false };
const adj = (amount?: number) => ({ amount, description: "", context: ctx, now: "t" });

function charge(over: Partial<ChargeRecord> = {}): ChargeRecord {
  return {
    id: "ch_1",
    requestId: "r1",
    created: "t",
    updated: "t",
    amount: 1000,
    currency: "USD",
    description: "",
    capture: false,
    status: "AUTHORIZED",
    authCode: "A",
    card: {
      last4: "1111",
      brand: "VISA",
      expMonth: 1,
      expYear: 2030,
      numberSHA512: "x",
      cvcLength: 3,
      name: "",
      address: {},
    },
    context: ctx,
    cardOnFile: false,
    refunded: 0,
    ...over,
  };
}

function fails(fn: () => unknown, status: number, code: string) {
  assert.throws(
    fn,
    (e) => e instanceof PaymentsError && e.status === status && e.details[0].code === code,
  );
}

Deno.test("capture: AUTHORIZED → CAPTURED with captureDetail, amount ≤ authorized", () => {
  const c = capture(charge(), adj(600));
  assert.equal(c.status, "CAPTURED");
  assert.equal(c.captureDetail?.amount, 600);
  assert.equal(capture(charge(), adj()).captureDetail?.amount, 1000);
  fails(() => capture(charge(), adj(1001)), 400, "PMT-4000");
  fails(() => capture(c, adj()), 400, "PMT-4000");
  fails(() => capture(charge({ status: "CANCELLED" }), adj()), 400, "PMT-4000");
  fails(() => capture(charge({ status: "DECLINED" }), adj()), 402, "PMT-5000");
});

Deno.test("refund: captured charge, any number, total ≤ captured", () => {
  const c = charge({ status: "CAPTURED", capture: true });
  const r1 = refund(c, adj(400), "rf_x");
  // a partial refund leaves the charge CAPTURED; the one returning the rest makes it REFUNDED
  assert.equal(r1.charge.status, "CAPTURED");
  const r2 = refund(r1.charge, adj(600), "rf_x");
  assert.equal(r2.charge.refunded, 1000);
  assert.equal(r2.charge.status, "REFUNDED");
  fails(() => refund(r1.charge, adj(601), "rf_x"), 400, "PMT-4000");
  fails(() => refund(r2.charge, adj(1), "rf_x"), 400, "PMT-4000");
  // partial capture limits refunds to the captured amount
  const pc = capture(charge(), adj(300));
  fails(() => refund(pc, adj(301), "rf_x"), 400, "PMT-4000");
  assert.equal(refund(pc, adj(), "rf_x").amount, 300);
});

Deno.test("refund: an authorization only in full → CANCELLED", () => {
  const r = refund(charge(), adj(1000), "rf_x");
  assert.equal(r.charge.status, "CANCELLED");
  fails(() => refund(charge(), adj(500), "rf_x"), 400, "PMT-4000");
  fails(() => refund(r.charge, adj(), "rf_x"), 400, "PMT-4000");
});

Deno.test("void: authorized or untouched captured → CANCELLED", () => {
  assert.equal(voidCharge(charge(), "t").charge.status, "CANCELLED");
  assert.equal(voidCharge(charge({ status: "CAPTURED", capture: true }), "t").amount, 1000);
  fails(() => voidCharge(charge({ status: "CANCELLED" }), "t"), 400, "PMT-4000");
  fails(() => voidCharge(charge({ status: "REFUNDED", refunded: 5 }), "t"), 400, "PMT-4000");
  fails(() => voidCharge(charge({ status: "DECLINED" }), "t"), 402, "PMT-5000");
});

Deno.test("refund: the charge lists each refund; refundableAmount is what remains", () => {
  const c = charge({ status: "CAPTURED", capture: true });
  assert.equal(refundableAmount(c), 1000);
  const r1 = refund(c, adj(400), "rf_1");
  const r2 = refund(r1.charge, adj(100), "rf_2");
  assert.deepEqual(r2.charge.refunds, [
    { id: "rf_1", amount: 400, created: "t", description: "", context: ctx },
    { id: "rf_2", amount: 100, created: "t", description: "", context: ctx },
  ]);
  assert.equal(refundableAmount(r2.charge), 500);
  assert.equal(refundableAmount(refund(r2.charge, adj(), "rf_3").charge), 0);
  // an authorization: its whole amount (refunded only in full); cancelled or declined: nothing
  assert.equal(refundableAmount(charge()), 1000);
  assert.equal(refundableAmount(charge({ status: "CANCELLED" })), 0);
  assert.equal(refundableAmount(charge({ status: "DECLINED" })), 0);
});

Deno.test("refund: over the remaining amount tells the rule and the remainder (moreInfo)", () => {
  const r1 = refund(charge({ status: "CAPTURED", capture: true }), adj(400), "rf_1");
  assert.throws(
    () => refund(r1.charge, adj(601), "rf_2"),
    (e) =>
      e instanceof PaymentsError &&
      e.details[0].moreInfo === "more than 0.00 and at most the remaining refundable amount, 6.00",
  );
  assert.throws(
    () => refund(charge(), adj(500), "rf_2"),
    (e) =>
      e instanceof PaymentsError &&
      e.details[0].moreInfo === "an authorization is refunded only in full (10.00)",
  );
});

Deno.test("refund: at most MAX_REFUNDS_PER_CHARGE per charge", () => {
  let c = charge({ status: "CAPTURED", capture: true, amount: 100_000 });
  for (let i = 0; i < MAX_REFUNDS_PER_CHARGE; i++) c = refund(c, adj(1), `rf_${i}`).charge;
  fails(() => refund(c, adj(1), "rf_over"), 400, "PMT-4000");
});
