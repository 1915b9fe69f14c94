import assert from "node:assert/strict";
import * as S from "../../shared/payments_schemas.ts";
import { createApp } from "../app.ts";
import { createPaymentsService } from "../server.ts";
import { BANK, CARD, harness, TEST_NOW } from "../_testing.ts";

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

Deno.test("tokens: the response carries `value`; charges and e-checks take it as `token`", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const t = await h.req("POST", "payments/tokens", { card: CARD }, { authorization: "" });
  const tok = S.Token.strict().parse(t.body);
  // the same string as `id`, and 130 random bits: a token cannot be guessed from another
  assert.equal(tok.value, tok.id);
  assert.match(tok.value, /^tok_[0-9A-Z]{26}$/);
  const c = await h.req("POST", "payments/charges", {
    amount: "7.00",
    currency: "USD",
    token: tok.value,
  });
  assert.equal(c.status, 201, JSON.stringify(c.body));
  assert.equal(c.body.card.number, "xxxxxxxxxxxx1111");
  const bt = await h.req("POST", "payments/tokens", { bankAccount: BANK }, { authorization: "" });
  const e = await h.req("POST", "payments/echecks", {
    amount: "3.00",
    paymentMode: "WEB",
    token: bt.body.value,
  });
  assert.equal(e.status, 201, JSON.stringify(e.body));
  assert.equal(e.body.bankAccount.accountNumber, "xxxxxxxxxxxx6789");
  // a token pays once: the error says why
  const again = await h.req("POST", "payments/charges", {
    amount: "7.00",
    currency: "USD",
    token: tok.value,
  });
  assert.equal(again.status, 400);
  assert.match(again.body.errors[0].moreInfo, /pays once/);
  h.close();
});

Deno.test("tokens: one client address past the limit gets 429 PMT-4029 with Retry-After; others do not", async () => {
  const kv = await Deno.openKv(":memory:");
  let now = TEST_NOW.getTime();
  const app = createApp({
    service: createPaymentsService({ kv, now: () => new Date(now) }),
    tokens: ["t"],
    now: () => new Date(now),
    tokenRateLimit: { perMinute: 6, burst: 2 },
  });
  const post = async (hostname: string) => {
    const res = await app.request("/vendor/v4/payments/tokens", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ card: CARD }),
    }, { remoteAddr: { transport: "tcp", hostname, port: 40000 } });
    return {
      status: res.status,
      retryAfter: res.headers.get("retry-after"),
      body: await res.json(),
    };
  };
  assert.equal((await post("192.0.2.1")).status, 201);
  assert.equal((await post("192.0.2.1")).status, 201);
  const limited = await post("192.0.2.1");
  assert.equal(limited.status, 429);
  assert.equal(limited.retryAfter, "10"); // 6 a minute: one every 10 s
  S.ErrorEnvelope.parse(limited.body);
  assert.equal(limited.body.errors[0].code, "PMT-4029");
  assert.match(limited.body.errors[0].moreInfo, /6 requests a minute per client address/);
  // another address has its own budget; the same /64 of IPv6 shares one
  assert.equal((await post("192.0.2.2")).status, 201);
  assert.equal((await post("2001:db8:1:2::10")).status, 201);
  assert.equal((await post("2001:db8:1:2::11")).status, 201);
  assert.equal((await post("2001:db8:1:2:ffff::12")).status, 429);
  // the budget refills with time
  now += 10_000;
  assert.equal((await post("192.0.2.1")).status, 201);
  assert.equal((await post("192.0.2.1")).status, 429);
  // authenticated routes are not limited
  for (let i = 0; i < 5; i++) {
    const res = await app.request("/vendor/v4/customers/c/cards", {
      headers: { authorization: "Bearer t" },
    }, { remoteAddr: { transport: "tcp", hostname: "192.0.2.1", port: 1 } });
    assert.equal(res.status, 200);
    await res.body?.cancel();
  }
  kv.close();
});
