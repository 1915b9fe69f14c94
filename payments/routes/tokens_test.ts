import assert from "node:assert/strict";
import * as S from "../../shared/payments_schemas.ts";
import { BANK, CARD, harness } from "../_testing.ts";

Deno.test("tokens: no auth needed; a card token pays one charge, once", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const t = await h.req("POST", "payments/tokens", { card: CARD }, { authorization: "" });
  assert.equal(t.status, 201);
  const tok = S.Token.strict().parse(t.body);
  assert.equal(tok.type, "card");
  assert.equal(tok.card?.number, "xxxxxxxxxxxx1111");
  assert.equal(Date.parse(tok.expires) - Date.parse(tok.created), 15 * 60 * 1000);
  const c = await h.req("POST", "payments/charges", {
    amount: "5",
    currency: "USD",
    token: tok.id,
  });
  assert.equal(c.status, 201);
  assert.equal(c.body.card.number, "xxxxxxxxxxxx1111");
  assert.equal(c.body.card.name, CARD.name);
  const again = await h.req("POST", "payments/charges", {
    amount: "5",
    currency: "USD",
    token: tok.id,
  });
  assert.equal(again.status, 400);
  assert.equal(again.body.errors[0].message, "token is invalid.");
  h.close();
});

Deno.test("tokens: expire after 15 minutes; kind must match the payment", async () => {
  let now = new Date("2026-06-15T12:00:00Z");
  const h = harness(await Deno.openKv(":memory:"), { now: () => now });
  const card = (await h.req("POST", "payments/tokens", { card: CARD })).body.id;
  const bank = (await h.req("POST", "payments/tokens", { bankAccount: BANK })).body.id;
  const wrongKind = await h.req("POST", "payments/echecks", {
    amount: "1",
    paymentMode: "WEB",
    token: card,
  });
  assert.equal(wrongKind.status, 400);
  const ec = await h.req("POST", "payments/echecks", {
    Amount: "1",
    PaymentMode: "WEB",
    Token: bank,
  });
  assert.equal(ec.status, 201);
  assert.equal(ec.body.bankAccount.accountNumber, "xxxxxxxxxxxx6789");
  now = new Date(now.getTime() + 15 * 60 * 1000);
  const late = await h.req("POST", "payments/charges", {
    amount: "1",
    currency: "USD",
    token: card,
  });
  assert.equal(late.status, 400);
  h.close();
});

Deno.test("tokens: validation applies; one of card or bankAccount", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  assert.equal((await h.req("POST", "payments/tokens", {})).body.errors[0].code, "PMT-4002");
  const bad = await h.req("POST", "payments/tokens", { card: { ...CARD, cvc: "12" } });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.errors[0].detail, "card.cvc");
  const both = await h.req("POST", "payments/tokens", { card: CARD, bankAccount: BANK });
  assert.equal(both.status, 400);
  h.close();
});
