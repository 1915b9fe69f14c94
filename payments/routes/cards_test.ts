import assert from "node:assert/strict";
import * as S from "../../shared/payments_schemas.ts";
import { sha512Base64 } from "../domain/card_rules.ts";
import { CARD, harness } from "../_testing.ts";

Deno.test("cards: create returns the create subset, masked, expiry as strings", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const r = await h.req("POST", "customers/cust1/cards", {
    ...CARD,
    default: true,
    address: { streetAddress: "1 Main St", city: "Springfield", postalCode: "12345" },
  });
  assert.equal(r.status, 201);
  const body = S.CardCreated.strict().parse(r.body);
  assert.equal(body.number, "xxxxxxxxxxxx1111");
  assert.equal(body.expMonth, "12");
  assert.equal(body.expYear, "2030");
  assert.equal(body.default, true);
  assert.equal(body.isBusiness, false);
  assert.equal(body.address.city, "Springfield");
  assert.equal(body.created, "2026-06-15T12:00:00.000Z");
  h.close();
});

Deno.test("cards: get returns the full card with digest and observed constants", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const { body: created } = await h.req("POST", "customers/cust1/cards", {
    ...CARD,
    address: "1 Main St, Springfield",
    isBusiness: true,
  });
  const r = await h.req("GET", `customers/cust1/cards/${created.id}`);
  assert.equal(r.status, 200);
  const card = S.Card.strict().parse(r.body);
  assert.equal(card.cardType, "VISA");
  assert.equal(card.numberSHA512, await sha512Base64(CARD.number));
  assert.equal(card.status, "ACTIVE");
  assert.equal(card.entityId, "cust1");
  assert.equal(card.entityType, "customers");
  assert.deepEqual(card.cvcVerification, { date: card.created, result: "NOT_DONE" });
  assert.deepEqual(card.zeroDollarVerification, { status: "NOT_VERIFIED" });
  assert.deepEqual(card.address, { streetAddress: "1 Main St, Springfield" });
  assert.equal(card.isBusiness, true);
  assert.equal(JSON.stringify(r.body).includes(CARD.number), false);
  assert.equal(JSON.stringify(r.body).includes(CARD.cvc + '"'), false);
  h.close();
});

Deno.test("cards: list is newest first and per customer; delete removes", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const ids: string[] = [];
  for (const number of ["4111111111111111", "5555555555554444", "378282246310005"]) {
    const r = await h.req("POST", "customers/c9/cards", { ...CARD, number });
    ids.push(r.body.id);
  }
  await h.req("POST", "customers/other/cards", CARD);
  const list = await h.req("GET", "customers/c9/cards");
  assert.equal(list.status, 200);
  S.CardList.parse(list.body);
  assert.deepEqual(list.body.map((c: { id: string }) => c.id), [...ids].reverse());
  assert.deepEqual(list.body.map((c: { cardType: string }) => c.cardType), ["AMEX", "MC", "VISA"]);

  const del = await h.req("DELETE", `customers/c9/cards/${ids[1]}`);
  assert.equal(del.status, 200);
  S.CardDeleted.strict().parse(del.body);
  assert.equal((await h.req("GET", `customers/c9/cards/${ids[1]}`)).status, 404);
  assert.equal((await h.req("DELETE", `customers/c9/cards/${ids[1]}`)).status, 404);
  assert.equal((await h.req("GET", "customers/c9/cards")).body.length, 2);
  // a card is only visible under its customer
  assert.equal((await h.req("GET", `customers/other/cards/${ids[0]}`)).status, 404);
  h.close();
});

Deno.test("cards: empty list and unknown card", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  assert.deepEqual((await h.req("GET", "customers/nobody/cards")).body, []);
  const r = await h.req("GET", "customers/nobody/cards/card_x");
  assert.equal(r.status, 404);
  assert.equal(r.body.errors[0].code, "PMT-4000");
  h.close();
});

Deno.test("cards: a new default card clears default on the customer's other cards", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const a = await h.req("POST", "customers/d/cards", { ...CARD, default: true });
  const b = await h.req("POST", "customers/d/cards", { ...CARD, default: false });
  const c = await h.req("POST", "customers/d/cards", { ...CARD, default: true });
  await h.req("POST", "customers/other/cards", { ...CARD, default: true });
  const byId = new Map(
    (await h.req("GET", "customers/d/cards")).body.map((x: { id: string; default: boolean }) => [
      x.id,
      x.default,
    ]),
  );
  assert.deepEqual([byId.get(a.body.id), byId.get(b.body.id), byId.get(c.body.id)], [
    false,
    false,
    true,
  ]);
  const other = await h.req("GET", "customers/other/cards");
  assert.equal(other.body[0].default, true);
  h.close();
});
