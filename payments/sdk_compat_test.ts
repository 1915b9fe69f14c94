/**
 * What the real QuickBooks Payments clients need of the sandbox (issue #22):
 * intuit_tid, both base paths, createFromToken, e-check refunds, the SDK
 * model shapes, string flags, `?count=`, CORS on the token endpoint, errors
 * a client can act on, the OpenAPI document.
 */
import assert from "node:assert/strict";
import { BANK, CARD, harness, TEST_TOKEN } from "./_testing.ts";

const tokenOf = async (h: ReturnType<typeof harness>, body: unknown) => {
  const r = await h.req("POST", "payments/tokens", body, { authorization: "" });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body.value as string;
};

Deno.test("intuit_tid: on every response (success, error, health, docs, preflight), each its own", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const tids = new Set<string>();
  const seen = (r: { headers: Headers }) => {
    const tid = r.headers.get("intuit_tid");
    assert.ok(tid, "intuit_tid missing");
    assert.ok(!tids.has(tid), "intuit_tid repeated");
    tids.add(tid);
  };
  seen(await h.req("POST", "payments/charges", { amount: "1.00", currency: "USD", card: CARD }));
  seen(await h.req("GET", "payments/charges/ch_none"));
  seen(await h.req("GET", "payments/charges/ch_none", undefined, { authorization: "" }));
  seen(await h.req("POST", "payments/charges", { amount: "x" }));
  seen(await h.req("GET", "/nowhere"));
  seen(await h.req("GET", "/health"));
  seen(await h.req("GET", "/openapi.json"));
  seen(await h.app.request("/docs"));
  seen(await h.app.request("/quickbooks/v4/payments/tokens", { method: "OPTIONS" }));
  assert.equal(tids.size, 9);
  h.close();
});

Deno.test("base paths: /quickbooks/v4 and /vendor/v4 by default, one state; more can be added", async () => {
  const h = harness(await Deno.openKv(":memory:"), { basePaths: ["/acme/v4"] });
  const c = await h.req("POST", "/quickbooks/v4/payments/charges", {
    amount: "2.00",
    currency: "USD",
    card: CARD,
  });
  assert.equal(c.status, 201);
  for (const base of ["/quickbooks/v4", "/vendor/v4", "/acme/v4"]) {
    const r = await h.req("GET", `${base}/payments/charges/${c.body.id}`);
    assert.equal(r.status, 200, base);
  }
  const doc = (await h.req("GET", "/openapi.json")).body;
  assert.deepEqual(doc.servers.map((s: { url: string }) => s.url), [
    "/quickbooks/v4",
    "/vendor/v4",
    "/acme/v4",
  ]);
  assert.deepEqual(doc.paths["/health"].get.servers, [{ url: "/" }]);
  h.close();
});

Deno.test("createFromToken: cards and bank accounts, token spent once, exactly once under concurrency", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const cardToken = await tokenOf(h, { card: { ...CARD, expMonth: 2 } });
  const made = await h.req("POST", "customers/cu1/cards/createFromToken", { value: cardToken });
  assert.equal(made.status, 201);
  assert.equal(made.body.number, "xxxxxxxxxxxx1111");
  assert.equal(made.body.expMonth, "02");
  const again = await h.req("POST", "customers/cu1/cards/createFromToken", { value: cardToken });
  assert.equal(again.status, 400);
  assert.equal(again.body.errors[0].detail, "token");
  // A bank-account token does not make a card, nor a card token a bank account.
  const bankToken = await tokenOf(h, { bankAccount: BANK });
  const wrong = await h.req("POST", "customers/cu1/cards/createFromToken", { value: bankToken });
  assert.equal(wrong.status, 400);
  assert.match(wrong.body.errors[0].moreInfo, /bank_account token/);
  // 12 concurrent uses of one token (distinct Request-Ids): one account.
  const outs = await Promise.all(
    Array.from(
      { length: 12 },
      (_, i) =>
        h.req("POST", "customers/cu2/bank-accounts/createFromToken", { value: bankToken }, {
          "request-id": `bft-${i}`,
        }),
    ),
  );
  assert.equal(outs.filter((r) => r.status === 201).length, 1);
  assert.equal(outs.filter((r) => r.status === 400).length, 11);
  const list = await h.req("GET", "customers/cu2/bank-accounts");
  assert.equal(list.body.length, 1);
  // The winner's Request-Id replays; missing value is 400 value is required.
  const winner = outs.findIndex((r) => r.status === 201);
  const replay = await h.req("POST", "customers/cu2/bank-accounts/createFromToken", {
    value: bankToken,
  }, { "request-id": `bft-${winner}` });
  assert.equal(replay.status, 201);
  assert.equal(replay.headers.get("idempotent-replayed"), "true");
  assert.equal(replay.body.id, outs[winner].body.id);
  const none = await h.req("POST", "customers/cu2/cards/createFromToken", {});
  assert.equal(none.body.errors[0].message, "value is required.");
  h.close();
});

Deno.test("e-check refunds: never above the amount under concurrency; get; REFUNDED when done", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const ec = await h.req("POST", "payments/echecks", {
    amount: "10.00",
    paymentMode: "WEB",
    bankAccount: BANK,
    context: { deviceInfo: { id: "d1", ipAddress: "203.0.113.9", encrypted: "true" } },
  });
  assert.equal(ec.status, 201);
  assert.deepEqual(ec.body.context.deviceInfo, {
    id: "d1",
    ipAddress: "203.0.113.9",
    encrypted: true,
  });
  const outs = await Promise.all(
    Array.from(
      { length: 15 },
      (_, i) =>
        h.req("POST", `payments/echecks/${ec.body.id}/refunds`, { amount: "1.00" }, {
          "request-id": `ecr-${i}`,
        }),
    ),
  );
  const ok = outs.filter((r) => r.status === 201);
  assert.equal(ok.length, 10);
  assert.equal(outs.filter((r) => r.status === 400).length, 5);
  const got = await h.req("GET", `payments/echecks/${ec.body.id}/refunds/${ok[0].body.id}`);
  assert.deepEqual(got.body, ok[0].body);
  const after = await h.req("GET", `payments/echecks/${ec.body.id}`);
  assert.equal(after.body.status, "REFUNDED");
  assert.equal(after.body.refundableAmount, "0.00");
  assert.equal(
    (await h.req("GET", `payments/echecks/${ec.body.id}/refunds/rf_none`)).status,
    404,
  );
  assert.equal((await h.req("POST", "payments/echecks/ec_none/refunds", {})).status, 404);
  h.close();
});

Deno.test("charge shapes the SDKs read: capture after a capture, appType, refundDetail, string flags", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  // The npm SDK sends capture as a string; the Java SDK sends cardOnFile as one.
  const c = await h.req("POST", "payments/charges", {
    amount: 20,
    currency: "USD",
    capture: "false",
    cardOnFile: "true",
    card: { ...CARD, expMonth: "3", default: "true", isBusiness: "false" },
    context: { mobile: "false", isEcommerce: "true", recurring: false, tax: 1.5 },
  });
  assert.equal(c.status, 201, JSON.stringify(c.body));
  assert.equal(c.body.status, "AUTHORIZED");
  assert.equal(c.body.capture, false);
  assert.equal(c.body.card.expMonth, "03");
  assert.equal(c.body.card.expYear, "2030");
  assert.equal(typeof c.body.appType, "string");
  assert.deepEqual(c.body.refundDetail, []);
  const cap = await h.req("POST", `payments/charges/${c.body.id}/capture`, {});
  assert.equal(cap.body.capture, true);
  const rf = await h.req("POST", `payments/charges/${c.body.id}/refunds`, {
    amount: "5.00",
    description: "part",
  });
  const got = (await h.req("GET", `payments/charges/${c.body.id}`)).body;
  assert.equal(got.status, "CAPTURED");
  assert.deepEqual(got.refundDetail, [rf.body]);
  const now = await h.req("POST", "payments/charges", {
    amount: "1.00",
    currency: "USD",
    capture: "true",
    card: CARD,
  });
  assert.equal(now.body.status, "CAPTURED");
  h.close();
});

Deno.test("?count= on card and bank-account lists: newest first, at most count", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    ids.push((await h.req("POST", "customers/cc/cards", CARD)).body.id);
    await h.req("POST", "customers/cc/bank-accounts", BANK);
  }
  const two = await h.req("GET", "customers/cc/cards?count=2");
  assert.deepEqual(two.body.map((c: { id: string }) => c.id), [ids[2], ids[1]]);
  assert.equal((await h.req("GET", "customers/cc/bank-accounts?count=1")).body.length, 1);
  assert.equal((await h.req("GET", "customers/cc/bank-accounts")).body.length, 3);
  for (const bad of ["0", "-1", "x", "1001"]) {
    const r = await h.req("GET", `customers/cc/cards?count=${bad}`);
    assert.equal(r.status, 400, bad);
    assert.equal(r.body.errors[0].message, "count is invalid.");
  }
  h.close();
});

Deno.test("CORS: the token endpoint answers preflights and labels responses; authenticated routes do not", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const pre = await h.app.request("/quickbooks/v4/payments/tokens", {
    method: "OPTIONS",
    headers: {
      origin: "https://shop.example",
      "access-control-request-method": "POST",
      "access-control-request-headers": "content-type",
    },
  });
  assert.equal(pre.status, 204);
  assert.equal(pre.headers.get("access-control-allow-origin"), "*");
  assert.match(pre.headers.get("access-control-allow-methods")!, /POST/);
  assert.match(pre.headers.get("access-control-allow-headers")!, /Content-Type/i);
  const ok = await h.req("POST", "/quickbooks/v4/payments/tokens", { card: CARD }, {
    authorization: "",
    origin: "https://shop.example",
  });
  assert.equal(ok.status, 201);
  assert.equal(ok.headers.get("access-control-allow-origin"), "*");
  assert.match(ok.headers.get("access-control-expose-headers")!, /intuit_tid/);
  const bad = await h.req("POST", "payments/tokens", { card: { ...CARD, cvc: "1" } }, {
    authorization: "",
    origin: "https://shop.example",
  });
  assert.equal(bad.status, 400);
  assert.equal(bad.headers.get("access-control-allow-origin"), "*");
  // Authenticated routes: no CORS headers at all, preflight not answered.
  const charge = await h.req("POST", "payments/charges", {
    amount: "1.00",
    currency: "USD",
    card: CARD,
  }, { origin: "https://shop.example" });
  assert.equal(charge.headers.get("access-control-allow-origin"), null);
  const prePrivate = await h.app.request("/vendor/v4/payments/charges", {
    method: "OPTIONS",
    headers: { origin: "https://shop.example", "access-control-request-method": "POST" },
  });
  assert.notEqual(prePrivate.status, 204);
  assert.equal(prePrivate.headers.get("access-control-allow-origin"), null);
  h.close();

  // A configured list: only its origins, echoed with Vary.
  const h2 = harness(await Deno.openKv(":memory:"), {
    deps: { corsOrigins: ["https://shop.example"] },
  });
  const mine = await h2.req("POST", "payments/tokens", { card: CARD }, {
    authorization: "",
    origin: "https://shop.example",
  });
  assert.equal(mine.headers.get("access-control-allow-origin"), "https://shop.example");
  assert.equal(mine.headers.get("vary"), "Origin");
  const other = await h2.req("POST", "payments/tokens", { card: CARD }, {
    authorization: "",
    origin: "https://evil.example",
  });
  assert.equal(other.headers.get("access-control-allow-origin"), null);
  assert.equal(other.headers.get("vary"), "Origin");
  h2.close();
});

Deno.test("errors: Request-Id echoed, moreInfo on 401 and 404, infoLink configurable, no validator wording", async () => {
  const h = harness(await Deno.openKv(":memory:"), {
    deps: { infoLink: "https://docs.example/errors" },
  });
  const rid = { "request-id": "err-1" };
  const r400 = await h.req("POST", "payments/charges", { amount: "1.00" }, rid);
  const r401 = await h.req("GET", "payments/charges/x", undefined, { ...rid, authorization: "" });
  const r404 = await h.req("GET", "payments/charges/x", undefined, rid);
  const rPath = await h.req("GET", "payments/nothing-here", undefined, rid);
  for (const [r, status] of [[r400, 400], [r401, 401], [r404, 404], [rPath, 404]] as const) {
    assert.equal(r.status, status);
    assert.equal(r.headers.get("request-id"), "err-1", String(status));
    assert.ok(r.body.errors[0].moreInfo, `moreInfo on ${status}`);
    assert.equal(r.body.errors[0].infoLink, "https://docs.example/errors");
  }
  assert.match(rPath.body.errors[0].moreInfo, /\/quickbooks\/v4/);
  // A Request-Id that is no valid one is not echoed.
  const junk = await h.req("GET", "payments/charges/x", undefined, { "request-id": "a b" });
  assert.equal(junk.headers.get("request-id"), null);
  // Validator wording never reaches the client; the rule names the field.
  const flags = await h.req("POST", "payments/charges", {
    amount: "1.00",
    currency: "USD",
    card: CARD,
    description: "d".repeat(501),
    context: { deviceInfo: "phone" },
  });
  assert.equal(flags.status, 400);
  const infos = flags.body.errors.map((e: { moreInfo: string }) => e.moreInfo);
  for (const m of infos) assert.doesNotMatch(m, /Invalid input|Too big|expected/, m);
  assert.ok(infos.includes("description must be at most 500 characters"), infos.join(" | "));
  assert.ok(infos.includes("deviceInfo must be an object"), infos.join(" | "));
  const name = await h.req("POST", "customers/c/bank-accounts", { ...BANK, name: "" });
  assert.equal(name.body.errors[0].moreInfo, "name must not be empty");
  const type = await h.req("POST", "customers/c/bank-accounts", { ...BANK, inputType: "SWIPED" });
  assert.equal(type.body.errors[0].moreInfo, "inputType must be KEYED");
  assert.equal(TEST_TOKEN.length > 0, true);
  h.close();
});

Deno.test("OpenAPI: every write documents 503 PMT-6000 with Retry-After; request bodies carry examples", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const doc = (await h.req("GET", "/openapi.json")).body;
  let writes = 0;
  for (const [path, item] of Object.entries(doc.paths)) {
    // deno-lint-ignore no-explicit-any
    for (const [method, op] of Object.entries(item as Record<string, any>)) {
      if (method === "get") continue;
      writes++;
      assert.ok(op.responses[503]?.headers?.["Retry-After"], `${method} ${path}: no 503`);
      const body = op.requestBody?.content?.["application/json"]?.schema;
      if (!body) continue;
      const name = body.$ref?.split("/").pop();
      const schema = name ? doc.components.schemas[name] : body;
      const example = schema.example ?? op.requestBody.content["application/json"].example;
      assert.ok(
        example !== undefined || name === "BankAccountDeleteRequest" ||
          Object.values(schema.properties ?? {}).some((p) =>
            (p as { example?: unknown }).example !== undefined
          ),
        `${method} ${path}: request body without an example`,
      );
    }
  }
  assert.ok(writes >= 14, String(writes));
  h.close();
});
