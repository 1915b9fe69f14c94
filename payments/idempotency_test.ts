import assert from "node:assert/strict";
import { IDEMPOTENCY_TTL_MS } from "./store/idempotency.ts";
import { CARD, countKeys, type Harness, harness } from "./_testing.ts";

const count = (h: Harness, prefix: Deno.KvKey) => countKeys(h.kv, prefix);

const CHARGE = { amount: "100.00", currency: "USD", card: CARD };

Deno.test("idempotency: a repeated create returns the original status and body, one charge", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const a = await h.req("POST", "payments/charges", CHARGE, { "Request-Id": "r-1" });
  // the identical request: same data, keys in another order and other white space
  const b = await h.req(
    "POST",
    "payments/charges",
    `{ "card": ${JSON.stringify(CARD)},\n "currency": "USD", "amount": "100.00" }`,
    { "Request-Id": "r-1" },
  );
  assert.equal(a.status, 201);
  assert.equal(b.status, 201);
  assert.deepEqual(b.body, a.body);
  assert.equal(b.headers.get("request-id"), "r-1");
  assert.equal(a.headers.get("idempotent-replayed"), null);
  assert.equal(b.headers.get("idempotent-replayed"), "true");
  assert.equal(await count(h, ["charge"]), 1);
  const rec = await h.kv.get(["idem", "r-1"]);
  assert.ok(rec.versionstamp);
  assert.equal(IDEMPOTENCY_TTL_MS, 24 * 60 * 60 * 1000);
  h.close();
});

Deno.test("idempotency: a repeated capture replays 200 instead of failing as a second capture", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const c = await h.req("POST", "payments/charges", CHARGE);
  const x = await h.req("POST", `payments/charges/${c.body.id}/capture`, {}, {
    "Request-Id": "cap",
  });
  const y = await h.req("POST", `payments/charges/${c.body.id}/capture`, {}, {
    "Request-Id": "cap",
  });
  assert.equal(x.status, 200);
  assert.equal(y.status, 200);
  assert.equal(x.headers.get("request-id"), "cap");
  assert.deepEqual(y.body, x.body);
  const z = await h.req("POST", `payments/charges/${c.body.id}/capture`, {}, {
    "Request-Id": "c2",
  });
  assert.equal(z.status, 400);
  h.close();
});

Deno.test("idempotency: same Request-Id on another operation → 400 requestId is invalid.", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const c = await h.req("POST", "payments/charges", CHARGE, { "Request-Id": "shared" });
  const r = await h.req("POST", `payments/charges/${c.body.id}/capture`, {}, {
    "Request-Id": "shared",
  });
  assert.equal(r.status, 400);
  assert.deepEqual(
    [r.body.errors[0].code, r.body.errors[0].message, r.body.errors[0].detail],
    ["PMT-4000", "requestId is invalid.", "requestId"],
  );
  const card = await h.req("POST", "customers/c/cards", CARD, { "Request-Id": "shared" });
  assert.equal(card.status, 400);
  // the same operation on another resource is another operation
  const c2 = await h.req("POST", "payments/charges", CHARGE);
  await h.req("POST", `payments/charges/${c.body.id}/refunds`, {}, { "Request-Id": "ref" });
  const other = await h.req("POST", `payments/charges/${c2.body.id}/refunds`, {}, {
    "Request-Id": "ref",
  });
  assert.equal(other.status, 400);
  const bad = await h.req("POST", "payments/charges", CHARGE, { "Request-Id": "a b" });
  assert.equal(bad.body.errors[0].message, "requestId is invalid.");
  h.close();
});

Deno.test("idempotency: the same Request-Id with another body is 400, never the original response", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const a = await h.req("POST", "payments/charges", CHARGE, { "Request-Id": "m-1" });
  assert.equal(a.status, 201);
  for (
    const other of [
      { ...CHARGE, amount: "5.00" },
      { ...CHARGE, capture: true },
      { ...CHARGE, description: "" },
    ]
  ) {
    const b = await h.req("POST", "payments/charges", other, { "Request-Id": "m-1" });
    assert.equal(b.status, 400, JSON.stringify(other));
    const e = b.body.errors[0];
    assert.deepEqual(
      [e.code, e.type, e.message, e.detail],
      ["PMT-4000", "invalid_request", "requestId is invalid.", "requestId"],
    );
    assert.match(e.moreInfo, /identical request.*different body/);
    assert.equal(b.headers.get("idempotent-replayed"), null);
  }
  assert.equal(await count(h, ["charge"]), 1);
  // ... and on a capture: another amount is refused, the identical repeat replays
  const cap = await h.req("POST", `payments/charges/${a.body.id}/capture`, { amount: "10.00" }, {
    "Request-Id": "m-cap",
  });
  assert.equal(cap.status, 200);
  const capOther = await h.req("POST", `payments/charges/${a.body.id}/capture`, {
    amount: "20.00",
  }, { "Request-Id": "m-cap" });
  assert.equal(capOther.status, 400);
  const capSame = await h.req("POST", `payments/charges/${a.body.id}/capture`, {
    amount: "10.00",
  }, { "Request-Id": "m-cap" });
  assert.equal(capSame.status, 200);
  assert.equal(capSame.headers.get("idempotent-replayed"), "true");
  // an empty body and {} are the same request
  const v1 = await h.req("POST", "payments/txn-requests/m-1/void", undefined, {
    "Request-Id": "m-void",
  });
  const v2 = await h.req("POST", "payments/txn-requests/m-1/void", {}, { "Request-Id": "m-void" });
  assert.equal(v1.status, 201);
  assert.deepEqual([v2.status, v2.body], [201, v1.body]);
  // another method and path with the same key: another operation, also 400
  const card = await h.req("POST", "customers/c/cards", CARD, { "Request-Id": "m-1" });
  assert.equal(card.status, 400);
  assert.match(card.body.errors[0].moreInfo, /another operation/);
  h.close();
});

Deno.test("idempotency: failures are not recorded; a fixed retry succeeds", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const bad = await h.req("POST", "payments/charges", { ...CHARGE, amount: "x" }, {
    "Request-Id": "retry",
  });
  assert.equal(bad.status, 400);
  const ok = await h.req("POST", "payments/charges", CHARGE, { "Request-Id": "retry" });
  assert.equal(ok.status, 201);
  h.close();
});

Deno.test("idempotency: 20 concurrent duplicates create exactly one resource", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const results = await Promise.all(
    Array.from(
      { length: 20 },
      () => h.req("POST", "payments/charges", CHARGE, { "Request-Id": "dup" }),
    ),
  );
  assert.ok(results.every((r) => r.status === 201));
  assert.equal(new Set(results.map((r) => r.body.id)).size, 1);
  assert.equal(await count(h, ["charge"]), 1);
  const cards = await Promise.all(
    Array.from(
      { length: 10 },
      () => h.req("POST", "customers/c/cards", CARD, { "Request-Id": "dup-card" }),
    ),
  );
  assert.equal(new Set(cards.map((r) => r.body.id)).size, 1);
  assert.equal(await count(h, ["card", "c"]), 1);
  h.close();
});

Deno.test("race: 20 concurrent full refunds of one charge → exactly one succeeds", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const c = await h.req("POST", "payments/charges", { ...CHARGE, capture: true });
  const results = await Promise.all(
    Array.from(
      { length: 20 },
      () => h.req("POST", `payments/charges/${c.body.id}/refunds`, { amount: "100.00" }),
    ),
  );
  assert.equal(results.filter((r) => r.status === 201).length, 1);
  assert.ok(results.every((r) => r.status === 201 || r.status === 400));
  assert.equal(await count(h, ["refund", c.body.id]), 1);
  h.close();
});

Deno.test("race: concurrent partial refunds never exceed the captured amount", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const c = await h.req("POST", "payments/charges", { ...CHARGE, capture: true });
  const results = await Promise.all(
    Array.from(
      { length: 30 },
      (_, i) =>
        h.req("POST", `payments/charges/${c.body.id}/refunds`, { amount: i % 2 ? "7.00" : "9.00" }),
    ),
  );
  const ok = results.filter((r) => r.status === 201);
  const total = ok.reduce((s, r) => s + Math.round(Number(r.body.amount) * 100), 0);
  assert.ok(total <= 10000, `refunded ${total}`);
  assert.ok(total > 10000 - 900, `refunded only ${total}`);
  assert.equal(await count(h, ["refund", c.body.id]), ok.length);
  h.close();
});

Deno.test("race: concurrent captures → exactly one; concurrent voids → exactly one", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const c = await h.req("POST", "payments/charges", CHARGE, { "Request-Id": "v1" });
  const caps = await Promise.all(
    Array.from({ length: 10 }, () => h.req("POST", `payments/charges/${c.body.id}/capture`, {})),
  );
  assert.equal(caps.filter((r) => r.status === 200).length, 1);
  const voids = await Promise.all(
    Array.from({ length: 10 }, () => h.req("POST", "payments/txn-requests/v1/void", {})),
  );
  assert.equal(voids.filter((r) => r.status === 201).length, 1);
  h.close();
});

Deno.test("race: one token used by concurrent charges pays exactly one", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const t = await h.req("POST", "payments/tokens", { card: CARD });
  const results = await Promise.all(
    Array.from(
      { length: 10 },
      () => h.req("POST", "payments/charges", { amount: "1", currency: "USD", token: t.body.id }),
    ),
  );
  assert.equal(results.filter((r) => r.status === 201).length, 1);
  assert.equal(await count(h, ["charge"]), 1);
  h.close();
});

Deno.test("idempotency: concurrent duplicates of a capture all get the original 200", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const c = await h.req("POST", "payments/charges", CHARGE);
  const results = await Promise.all(
    Array.from(
      { length: 15 },
      () => h.req("POST", `payments/charges/${c.body.id}/capture`, {}, { "Request-Id": "cap-dup" }),
    ),
  );
  assert.deepEqual(results.map((r) => r.status), Array(15).fill(200));
  assert.equal(new Set(results.map((r) => JSON.stringify(r.body))).size, 1);
  const t = await h.req("POST", "payments/tokens", { card: CARD });
  const charges = await Promise.all(
    Array.from(
      { length: 10 },
      () =>
        h.req("POST", "payments/charges", { amount: "1", currency: "USD", token: t.body.id }, {
          "Request-Id": "tok-dup",
        }),
    ),
  );
  assert.deepEqual(charges.map((r) => r.status), Array(10).fill(201));
  assert.equal(new Set(charges.map((r) => r.body.id)).size, 1);
  h.close();
});

Deno.test("idempotency: a Request-Id of a charge whose record expired is still taken → 400", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const a = await h.req("POST", "payments/charges", CHARGE, { "Request-Id": "old-1" });
  assert.equal(a.status, 201);
  await h.kv.delete(["idem", "old-1"]); // the 24 h record is gone, the charge stays
  const b = await h.req("POST", "payments/charges", CHARGE, { "Request-Id": "old-1" });
  assert.equal(b.status, 400);
  assert.equal(b.body.errors[0].message, "requestId is invalid.");
  assert.equal(await count(h, ["charge"]), 1);
  // the void still finds the charge by that Request-Id
  const v = await h.req("POST", "payments/txn-requests/old-1/void", {});
  assert.equal(v.status, 201);
  h.close();
});

Deno.test("idempotency: replays records stored as JSON text and older records with a body object", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const a = await h.req("POST", "payments/charges", CHARGE, { "Request-Id": "j-1" });
  const rec = await h.kv.get<{ json?: string; body?: unknown }>(["idem", "j-1"]);
  assert.equal(typeof rec.value?.json, "string");
  assert.deepEqual(JSON.parse(rec.value!.json!), a.body);
  const again = await h.req("POST", "payments/charges", CHARGE, { "Request-Id": "j-1" });
  assert.deepEqual(again.body, a.body);
  assert.equal(again.headers.get("idempotent-replayed"), "true");
  // a record written by an earlier version (body object, no json)
  await h.kv.set(["idem", "legacy"], {
    op: "createCharge",
    status: 201,
    body: a.body,
    headers: { "Request-Id": "legacy" },
  });
  const legacy = await h.req("POST", "payments/charges", CHARGE, { "Request-Id": "legacy" });
  assert.equal(legacy.status, 201);
  assert.deepEqual(legacy.body, a.body);
  assert.equal(legacy.headers.get("request-id"), "legacy");
  assert.equal(await count(h, ["charge"]), 1);
  h.close();
});

Deno.test("idempotency: concurrent repeats of a create whose plan succeeds commit nothing twice", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const first = await h.req("POST", "payments/charges", CHARGE, { "Request-Id": "rep" });
  const repeats = await Promise.all(
    Array.from(
      { length: 10 },
      () => h.req("POST", "payments/charges", CHARGE, { "Request-Id": "rep" }),
    ),
  );
  assert.ok(repeats.every((r) => r.status === 201 && r.body.id === first.body.id));
  assert.equal(await count(h, ["charge"]), 1);
  assert.equal(await count(h, ["charge_req"]), 1);
  h.close();
});
