import assert from "node:assert/strict";
import * as S from "../../shared/payments_schemas.ts";
import { CARD, type Harness, harness } from "../_testing.ts";

async function charge(h: Harness, extra: Record<string, unknown> = {}, rid?: string) {
  const r = await h.req(
    "POST",
    "payments/charges",
    { amount: "100.00", currency: "USD", card: CARD, ...extra },
    rid ? { "Request-Id": rid } : {},
  );
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r;
}

Deno.test("charge: capture defaults to false → AUTHORIZED; full response shape", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const r = await charge(h, {
    description: "order 1",
    context: { mobile: "true", isEcommerce: "false", tax: "1.00" },
  });
  const c = S.Charge.strict().parse(r.body);
  assert.equal(c.status, "AUTHORIZED");
  assert.equal(c.capture, false);
  assert.equal(c.amount, "100.00");
  assert.equal(c.card.number, "xxxxxxxxxxxx1111");
  assert.equal(c.card.cvc, "xxx");
  assert.equal(c.card.expMonth, "12");
  assert.equal(c.avsStreet, "Pass");
  assert.equal(c.avsZip, "Pass");
  assert.equal(c.cardSecurityCodeMatch, "NotAvailable");
  assert.deepEqual(c.context, { mobile: true, isEcommerce: false, recurring: false, tax: "1.00" });
  assert.match(c.authCode, /^[0-9A-Z]{6}$/);
  assert.equal(c.captureDetail, undefined);
  assert.match(r.headers.get("request-id") ?? "", /^req_/);
  const got = await h.req("GET", `payments/charges/${c.id}`);
  assert.deepEqual(got.body, r.body);
  assert.equal((await h.req("GET", "payments/charges/ch_nope")).status, 404);
  h.close();
});

Deno.test("charge: capture true → CAPTURED; capturing it again → 400", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const { body } = await charge(h, { capture: true, amount: 12.5 });
  assert.equal(body.status, "CAPTURED");
  assert.equal(body.amount, "12.50");
  const again = await h.req("POST", `payments/charges/${body.id}/capture`, {});
  assert.equal(again.status, 400);
  assert.equal(again.body.errors[0].code, "PMT-4000");
  h.close();
});

Deno.test("capture: once, amount ≤ authorized → CAPTURED with captureDetail; second → 400", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const { body } = await charge(h);
  const over = await h.req("POST", `payments/charges/${body.id}/capture`, { amount: "100.01" });
  assert.equal(over.status, 400);
  assert.equal(over.body.errors[0].message, "amount is invalid.");
  const cap = await h.req("POST", `payments/charges/${body.id}/capture`, {
    amount: "60.00",
    description: "ship",
    context: { mobile: false, isEcommerce: true, tax: "0.50" },
  });
  assert.equal(cap.status, 200);
  const c = S.Charge.strict().parse(cap.body);
  assert.equal(c.status, "CAPTURED");
  assert.deepEqual(c.captureDetail, {
    amount: "60.00",
    context: { mobile: false, isEcommerce: true, recurring: false, tax: "0.50" },
    created: "2026-06-15T12:00:00.000Z",
    description: "ship",
  });
  assert.equal((await h.req("POST", `payments/charges/${body.id}/capture`, {})).status, 400);
  assert.equal((await h.req("GET", `payments/charges/${body.id}`)).body.status, "CAPTURED");
  assert.equal((await h.req("POST", "payments/charges/ch_nope/capture", {})).status, 404);
  h.close();
});

Deno.test("refunds: many on a captured charge, total ≤ captured; CAPTURED until fully refunded", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const { body } = await charge(h, { capture: true });
  const r1 = await h.req("POST", `payments/charges/${body.id}/refunds`, {
    amount: "30.00",
    description: "partial",
    context: { mobile: "false", isEcommerce: "true", tax: "0" },
  });
  assert.equal(r1.status, 201);
  const rf = S.Refund.strict().parse(r1.body);
  assert.equal(rf.type, "REFUND");
  assert.equal(rf.status, "ISSUED");
  assert.equal(rf.amount, "30.00");
  const partly = (await h.req("GET", `payments/charges/${body.id}`)).body;
  assert.equal(partly.status, "CAPTURED");
  // The Java SDK's Charge.refundDetail: the full refund records.
  assert.deepEqual(partly.refundDetail, [rf]);
  const over = await h.req("POST", `payments/charges/${body.id}/refunds`, { amount: "70.01" });
  assert.equal(over.status, 400);
  assert.equal(over.body.errors[0].detail.length > 0, true);
  const r2 = await h.req("POST", `payments/charges/${body.id}/refunds`, { amount: 70 });
  assert.equal(r2.status, 201);
  const none = await h.req("POST", `payments/charges/${body.id}/refunds`, { amount: "0.01" });
  assert.equal(none.status, 400);
  const got = await h.req("GET", `payments/charges/${body.id}/refunds/${rf.id}`);
  assert.equal(got.status, 200);
  assert.deepEqual(got.body, r1.body);
  assert.equal((await h.req("GET", `payments/charges/${body.id}/refunds/rf_nope`)).status, 404);
  assert.equal((await h.req("GET", `payments/charges/ch_other/refunds/${rf.id}`)).status, 404);
  h.close();
});

Deno.test("refunds: no amount refunds the remaining balance", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const { body } = await charge(h, { capture: true, amount: "10.00" });
  await h.req("POST", `payments/charges/${body.id}/refunds`, { amount: "4.00" });
  const rest = await h.req("POST", `payments/charges/${body.id}/refunds`, {});
  assert.equal(rest.body.amount, "6.00");
  h.close();
});

Deno.test("refund of an authorization: full → CANCELLED, partial → 400", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const { body } = await charge(h);
  const part = await h.req("POST", `payments/charges/${body.id}/refunds`, { amount: "50.00" });
  assert.equal(part.status, 400);
  const full = await h.req("POST", `payments/charges/${body.id}/refunds`, { amount: "100.00" });
  assert.equal(full.status, 201);
  assert.equal((await h.req("GET", `payments/charges/${body.id}`)).body.status, "CANCELLED");
  assert.equal((await h.req("POST", `payments/charges/${body.id}/capture`, {})).status, 400);
  h.close();
});

Deno.test("void by the charge's Request-Id → VOID ISSUED; charge CANCELLED; twice → 400", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const { body } = await charge(h, {}, "order-42");
  const v = await h.req("POST", "payments/txn-requests/order-42/void", undefined, {
    "Request-Id": "void-42",
  });
  assert.equal(v.status, 201, JSON.stringify(v.body));
  const vd = S.Void.strict().parse(v.body);
  assert.equal(vd.type, "VOID");
  assert.equal(vd.status, "ISSUED");
  assert.equal(vd.amount, "100.00");
  assert.equal((await h.req("GET", `payments/charges/${body.id}`)).body.status, "CANCELLED");
  assert.equal((await h.req("POST", "payments/txn-requests/order-42/void", {})).status, 400);
  assert.equal((await h.req("POST", `payments/charges/${body.id}/refunds`, {})).status, 400);
  assert.equal((await h.req("POST", "payments/txn-requests/unknown/void", {})).status, 404);
  h.close();
});

Deno.test("void works with the generated Request-Id returned on create", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const r = await charge(h, { capture: true });
  const rid = r.headers.get("request-id")!;
  const v = await h.req("POST", `payments/txn-requests/${rid}/void`, {});
  assert.equal(v.status, 201);
  assert.equal((await h.req("GET", `payments/charges/${r.body.id}`)).body.status, "CANCELLED");
  h.close();
});

Deno.test("triggers: emulate=10401 declines (201 DECLINED), then operations are PMT-5000", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const r = await charge(h, { card: { ...CARD, name: "Jo emulate=10401" }, capture: true });
  assert.equal(r.body.status, "DECLINED");
  for (const op of ["capture", "refunds"]) {
    const x = await h.req("POST", `payments/charges/${r.body.id}/${op}`, {});
    assert.equal(x.status, 402);
    assert.equal(x.body.errors[0].code, "PMT-5000");
  }
  h.close();
});

Deno.test("triggers: emulate=10301 → 400 PMT-4000 on card.number", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const r = await h.req("POST", "payments/charges", {
    amount: "1.00",
    currency: "USD",
    card: { ...CARD, name: "emulate=10301" },
  });
  assert.equal(r.status, 400);
  assert.equal(r.body.errors[0].code, "PMT-4000");
  assert.equal(r.body.errors[0].message, "number is invalid.");
  assert.equal(r.body.errors[0].detail, "card.number");
  h.close();
});

Deno.test("triggers: emulate=10201 → PMT-6000 system error (not 500)", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const r = await h.req("POST", "payments/charges", {
    amount: "1.00",
    currency: "USD",
    card: { ...CARD, name: "emulate=10201" },
  });
  assert.equal(r.status, 502);
  S.ErrorEnvelope.parse(r.body);
  assert.equal(r.body.errors[0].code, "PMT-6000");
  assert.equal(r.body.errors[0].type, "system_error");
  h.close();
});

Deno.test("charge: card or token is required; not both", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const none = await h.req("POST", "payments/charges", { amount: "1.00", currency: "USD" });
  assert.equal(none.status, 400);
  assert.equal(none.body.errors[0].code, "PMT-4002");
  const both = await h.req("POST", "payments/charges", {
    amount: "1.00",
    currency: "USD",
    card: CARD,
    token: "tok_x",
  });
  assert.equal(both.status, 400);
  assert.equal(both.body.errors[0].code, "PMT-4000");
  h.close();
});

Deno.test("get-charge: answers the response built from the record through every write", async () => {
  const { chargeView } = await import("../domain/views.ts");
  const h = harness(await Deno.openKv(":memory:"));
  const c = await charge(h, { capture: false }, "view-1");
  const id = c.body.id;
  const fromRecord = async () =>
    JSON.stringify(chargeView((await h.kv.get(["charge", id])).value as never));
  const check = async () => {
    const g = await h.req("GET", `payments/charges/${id}`);
    assert.equal(g.status, 200);
    assert.equal(JSON.stringify(g.body), await fromRecord());
    return g.body;
  };
  assert.deepEqual(await check(), c.body);
  // Read twice: the second read is served from the view cache, unchanged.
  assert.deepEqual(await check(), c.body);
  // Every write of the charge is seen by the next read (cached or not).
  const cap = await h.req("POST", `payments/charges/${id}/capture`, { amount: "60.00" });
  assert.deepEqual(await check(), cap.body);
  await h.req("POST", `payments/charges/${id}/refunds`, { amount: "10.00" });
  assert.equal((await check()).status, "CAPTURED");
  const c2 = await charge(h, {}, "view-2");
  await h.req("GET", `payments/charges/${c2.body.id}`);
  await h.req("POST", "payments/txn-requests/view-2/void", {});
  const g2 = await h.req("GET", `payments/charges/${c2.body.id}`);
  assert.equal(g2.body.status, "CANCELLED");
  // The previous version also stored each response (["charge_view", 1, id]):
  // it is not read, and a change deletes it (a process of that version
  // sharing the store must not answer from it).
  await h.kv.set(["charge_view", 1, id], new TextEncoder().encode('{"old":1}'));
  assert.equal((await check()).status, "CAPTURED");
  await h.req("POST", `payments/charges/${id}/refunds`, {});
  assert.equal((await check()).status, "REFUNDED");
  assert.equal((await h.kv.get(["charge_view", 1, id])).versionstamp, null);
  assert.equal((await h.req("GET", "payments/charges/ch_nope")).status, 404);
  h.close();
});

Deno.test("a charge shows its refunds and the refundable remainder; GET …/refunds lists them", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const { body } = await charge(h, { capture: true, amount: "25.00" });
  assert.deepEqual(
    [body.refundedAmount, body.refundableAmount, body.refunds],
    ["0.00", "25.00", []],
  );
  assert.deepEqual((await h.req("GET", `payments/charges/${body.id}/refunds`)).body, []);
  const r1 = await h.req("POST", `payments/charges/${body.id}/refunds`, { amount: "10.00" });
  const afterOne = S.Charge.strict().parse(
    (await h.req("GET", `payments/charges/${body.id}`)).body,
  );
  // a partial refund: status stays CAPTURED, the amounts tell how much
  assert.equal(afterOne.status, "CAPTURED");
  assert.equal(afterOne.refundedAmount, "10.00");
  assert.equal(afterOne.refundableAmount, "15.00");
  assert.deepEqual(afterOne.refunds, [{
    id: r1.body.id,
    amount: "10.00",
    created: r1.body.created,
  }]);
  const r2 = await h.req("POST", `payments/charges/${body.id}/refunds`, {});
  assert.equal(r2.body.amount, "15.00");
  const full = (await h.req("GET", `payments/charges/${body.id}`)).body;
  assert.deepEqual(
    [
      full.status,
      full.refundedAmount,
      full.refundableAmount,
      full.refunds.map((r: S.RefundSummary) => r.id),
    ],
    ["REFUNDED", "25.00", "0.00", [r2.body.id, r1.body.id]],
  );
  const list = await h.req("GET", `payments/charges/${body.id}/refunds`);
  assert.equal(list.status, 200);
  assert.deepEqual(S.RefundList.parse(list.body), [r2.body, r1.body]);
  assert.equal((await h.req("GET", "payments/charges/ch_nope/refunds")).status, 404);
  // an authorization may be refunded only in full; cancelled: nothing refundable
  const auth = (await charge(h, { amount: "8.00" })).body;
  assert.equal(auth.refundableAmount, "8.00");
  await h.req("POST", `payments/charges/${auth.id}/refunds`, {});
  const cancelled = (await h.req("GET", `payments/charges/${auth.id}`)).body;
  assert.deepEqual([cancelled.status, cancelled.refundableAmount], ["CANCELLED", "0.00"]);
  h.close();
});

Deno.test("errors tell the rule that failed in moreInfo; message and detail keep their shape", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const cases: [unknown, RegExp][] = [
    ["100000000.00", /from 0\.00 to 99999\.99/],
    [-5, /from 0\.00 to 99999\.99/],
    ["-5", /from 0\.00 to 99999\.99/],
    ["1.005", /at most two decimals/],
    [1.005, /at most two decimals/],
    ["ten", /decimal string or JSON number/],
  ];
  for (const [amount, rule] of cases) {
    const r = await h.req("POST", "payments/charges", { amount, currency: "USD", card: CARD });
    assert.equal(r.status, 400, String(amount));
    const e = r.body.errors[0];
    assert.deepEqual([e.code, e.message, e.detail], ["PMT-4000", "amount is invalid.", "amount"]);
    assert.match(e.moreInfo, rule, String(amount));
  }
  const { body } = await charge(h, { capture: true, amount: "25.00" });
  await h.req("POST", `payments/charges/${body.id}/refunds`, { amount: "10.00" });
  const over = await h.req("POST", `payments/charges/${body.id}/refunds`, { amount: "15.01" });
  assert.equal(over.status, 400);
  assert.deepEqual(
    [over.body.errors[0].message, over.body.errors[0].detail],
    ["amount is invalid.", "amount"],
  );
  assert.match(over.body.errors[0].moreInfo, /remaining refundable amount, 15\.00/);
  const month = await h.req("POST", "payments/charges", {
    amount: "1.00",
    currency: "USD",
    card: { ...CARD, expMonth: 13 },
  });
  assert.equal(month.body.errors[0].moreInfo, "1 to 12");
  h.close();
});

Deno.test("a JSON number amount a double cannot hold exactly is 400, not rounded", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const body = (amount: string) =>
    `{"amount":${amount},"currency":"USD","card":${JSON.stringify(CARD)}}`;
  for (const amount of ["99999.989999999999", "0.1000000000000000055511151231257827", "1e400"]) {
    const r = await h.req("POST", "payments/charges", body(amount));
    assert.equal(r.status, 400, amount);
    assert.deepEqual([r.body.errors[0].message, r.body.errors[0].detail], [
      "amount is invalid.",
      "amount",
    ]);
    assert.match(r.body.errors[0].moreInfo, /cannot be taken exactly/);
  }
  // exact numbers are amounts at their value, whatever their spelling
  for (const [amount, wire] of [["99999.99", "99999.99"], ["12.50", "12.50"], ["1.2e1", "12.00"]]) {
    const r = await h.req("POST", "payments/charges", body(amount));
    assert.equal(r.status, 201, amount);
    assert.equal(r.body.amount, wire);
  }
  h.close();
});

Deno.test("a card number of all zeros is rejected although Luhn-valid", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  for (const number of ["0000000000000000", "000000000000"]) {
    const r = await h.req("POST", "payments/charges", {
      amount: "1.00",
      currency: "USD",
      card: { ...CARD, number },
    });
    assert.equal(r.status, 400);
    assert.deepEqual([r.body.errors[0].message, r.body.errors[0].detail], [
      "number is invalid.",
      "card.number",
    ]);
    assert.match(r.body.errors[0].moreInfo, /not a card number/);
    const card = await h.req("POST", "customers/c/cards", { ...CARD, number });
    assert.equal(card.status, 400);
  }
  h.close();
});

Deno.test("refunds: a refund of the rest records and answers the amount it refunded", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const { body } = await charge(h, { capture: true, amount: "10.00" });
  await h.req("POST", `payments/charges/${body.id}/refunds`, { amount: "9.25" });
  const rest = await h.req("POST", `payments/charges/${body.id}/refunds`, {});
  assert.equal(rest.status, 201);
  assert.equal(rest.body.amount, "0.75");
  const got = await h.req("GET", `payments/charges/${body.id}/refunds/${rest.body.id}`);
  assert.deepEqual(got.body, rest.body);
  const listed = (await h.req("GET", `payments/charges/${body.id}`)).body.refunds;
  assert.deepEqual(listed[0], { id: rest.body.id, amount: "0.75", created: rest.body.created });
  h.close();
});
