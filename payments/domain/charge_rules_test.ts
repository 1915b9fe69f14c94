import assert from "node:assert/strict";
import { capture, refund, voidCharge } from "./charge_rules.ts";
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
  const r1 = refund(c, adj(400));
  assert.equal(r1.charge.status, "REFUNDED");
  const r2 = refund(r1.charge, adj(600));
  assert.equal(r2.charge.refunded, 1000);
  fails(() => refund(r1.charge, adj(601)), 400, "PMT-4000");
  fails(() => refund(r2.charge, adj(1)), 400, "PMT-4000");
  // partial capture limits refunds to the captured amount
  const pc = capture(charge(), adj(300));
  fails(() => refund(pc, adj(301)), 400, "PMT-4000");
  assert.equal(refund(pc, adj()).amount, 300);
});

Deno.test("refund: an authorization only in full → CANCELLED", () => {
  const r = refund(charge(), adj(1000));
  assert.equal(r.charge.status, "CANCELLED");
  fails(() => refund(charge(), adj(500)), 400, "PMT-4000");
  fails(() => refund(r.charge, adj()), 400, "PMT-4000");
});

Deno.test("void: authorized or untouched captured → CANCELLED", () => {
  assert.equal(voidCharge(charge(), "t").charge.status, "CANCELLED");
  assert.equal(voidCharge(charge({ status: "CAPTURED", capture: true }), "t").amount, 1000);
  fails(() => voidCharge(charge({ status: "CANCELLED" }), "t"), 400, "PMT-4000");
  fails(() => voidCharge(charge({ status: "REFUNDED", refunded: 5 }), "t"), 400, "PMT-4000");
  fails(() => voidCharge(charge({ status: "DECLINED" }), "t"), 402, "PMT-5000");
});
