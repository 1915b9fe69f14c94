import assert from "node:assert/strict";
import { Validator } from "@seriousme/openapi-schema-validator";
import { ErrorEnvelope, Health } from "../shared/payments_schemas.ts";
import { ALL_ENDPOINTS, createApp } from "./app.ts";
import { createPaymentsService } from "./server.ts";
import { honoPath } from "./routes/_endpoint.ts";
import {
  CARD,
  countKeys,
  failingCommits,
  type Harness,
  harness,
  rejectWith,
  TEST_TOKEN,
} from "./_testing.ts";

/** POSTs `body` as it is (no Content-Type) to the charges route, with the test token. */
async function postRawCharge(h: Harness, body: BodyInit): Promise<Response> {
  return await h.app.request("/vendor/v4/payments/charges", {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}` },
    body,
  });
}

/** A body stream of `chunks`, whose length is not known up front. */
function streamOf(chunks: Uint8Array[]): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(c) {
      for (const chunk of chunks) c.enqueue(chunk);
      c.close();
    },
  });
}

Deno.test("GET /health is public and returns status ok with a timestamp", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const r = await h.req("GET", "/health", undefined, { authorization: "" });
  assert.equal(r.status, 200);
  Health.parse(r.body);
  assert.equal(r.body.timestamp, "2026-06-15T12:00:00.000Z");
  h.close();
});

Deno.test("auth: missing, wrong or non-Bearer token → 401 envelope; any configured token works", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  for (const auth of ["", "Bearer nope", `Basic ${TEST_TOKEN}`, "Bearer"]) {
    const r = await h.req("GET", "customers/c1/cards", undefined, { authorization: auth });
    assert.equal(r.status, 401, auth);
    ErrorEnvelope.parse(r.body);
    assert.equal(r.body.errors[0].code, "PMT-4010");
    assert.match(r.headers.get("www-authenticate") ?? "", /^Bearer/);
  }
  const ok = await h.req("GET", "customers/c1/cards", undefined, {
    authorization: "Bearer second-token",
  });
  assert.equal(ok.status, 200);
  h.close();
});

Deno.test("unknown path → 404 PMT-4000 envelope (with and without base path)", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  for (const p of ["/nope", "/vendor/v4/nope", "/vendor/v4/payments/charges/x/y/z"]) {
    const r = await h.req("GET", p);
    assert.equal(r.status, 404, p);
    ErrorEnvelope.parse(r.body);
    assert.equal(r.body.errors[0].code, "PMT-4000");
    assert.equal(r.body.errors[0].type, "invalid_request");
  }
  h.close();
});

Deno.test("under a base path an unauthenticated caller learns nothing: 401 for known and unknown paths", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  for (const p of ["/vendor/v4/nope", "/vendor/v4/payments/charges/x/y/z", "/vendor/v4"]) {
    const r = await h.req("GET", p, undefined, { authorization: "" });
    assert.equal(r.status, 401, p);
    assert.equal(r.body.errors[0].code, "PMT-4010");
  }
  // Outside the base paths there is no API to protect: plain 404.
  assert.equal((await h.req("GET", "/nope", undefined, { authorization: "" })).status, 404);
  // The public token route needs no token.
  const t = await h.req("POST", "payments/tokens", { card: CARD }, { authorization: "" });
  assert.equal(t.status, 201);
  h.close();
});

Deno.test("malformed JSON, non-object JSON and non-UTF-8 bodies → 400 envelope", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  for (const body of ["{", "[1]", "42", "null", '"s"', '{"amount":}']) {
    const r = await h.req("POST", "payments/charges", body);
    assert.equal(r.status, 400, body);
    assert.equal(r.body.errors[0].code, "PMT-4000");
    assert.equal(r.body.errors[0].detail.length > 0, true);
  }
  const res = await postRawCharge(h, new Uint8Array([0x7b, 0xff, 0x7d]));
  assert.equal(res.status, 400);
  await res.body?.cancel();
  h.close();
});

Deno.test("body over 64 KiB → 413, by content-length and by streamed size", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const big = JSON.stringify({ description: "x".repeat(70 * 1024) });
  const r = await h.req("POST", "payments/charges", big);
  assert.equal(r.status, 413);
  ErrorEnvelope.parse(r.body);
  const spaces = Array.from({ length: 70 }, () => new Uint8Array(1024).fill(0x20));
  const res = await postRawCharge(h, streamOf(spaces));
  assert.equal(res.status, 413);
  await res.body?.cancel();
  // exactly at the limit is fine (and then fails validation, not size)
  const at = JSON.stringify({ description: "" }).length;
  const ok = await h.req(
    "POST",
    "payments/charges",
    JSON.stringify({
      description: "y".repeat(64 * 1024 - at),
    }),
  );
  assert.equal(ok.status, 400);
  h.close();
});

Deno.test("extra base paths serve the same API; state is shared", async () => {
  const h = harness(await Deno.openKv(":memory:"), { basePaths: ["/vendor/v4", "/acme/v4/"] });
  const a = await h.req("POST", "/acme/v4/customers/c1/cards", CARD);
  assert.equal(a.status, 201);
  const b = await h.req("GET", `/vendor/v4/customers/c1/cards/${a.body.id}`);
  assert.equal(b.status, 200);
  h.close();
});

Deno.test("OpenAPI: a valid 3.1 document listing every route and operation, bearer security", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const r = await h.req("GET", "/openapi.json", undefined, { authorization: "" });
  assert.equal(r.status, 200);
  const doc = r.body;
  assert.match(doc.openapi, /^3\.1\.\d+$/);
  for (const ep of ALL_ENDPOINTS) {
    const op = doc.paths[ep.route.path]?.[ep.route.method];
    assert.ok(op, `${ep.route.method} ${ep.route.path} missing`);
    assert.equal(op.operationId, ep.route.operationId);
    assert.deepEqual(op.security, ep.public ? [] : [{ bearerAuth: [] }]);
  }
  assert.ok(doc.paths["/health"].get);
  assert.equal(doc.components.securitySchemes.bearerAuth.scheme, "bearer");
  assert.ok(doc.components.schemas.Charge);
  assert.ok(doc.components.schemas.Errors);
  // Valid against the OpenAPI 3.1 JSON schema; the validator does reject a broken document.
  const validator = new Validator();
  assert.deepEqual(await validator.validate(structuredClone(doc)), { valid: true });
  assert.equal(validator.version, "3.1");
  const broken = structuredClone(doc);
  delete broken.info;
  assert.equal((await new Validator().validate(broken)).valid, false);
  // every operation is routed by the app (no doc-only routes)
  assert.equal(ALL_ENDPOINTS.length, 23);
  for (const ep of ALL_ENDPOINTS) assert.ok(!honoPath(ep.route.path).includes("{"));
  h.close();
});

Deno.test("GET /docs serves a self-contained page without external resources", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const res = await h.app.request("/docs");
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /text\/html/);
  const html = await res.text();
  assert.match(html, /fetch\("\/openapi\.json"\)/);
  assert.match(html, /Try it/);
  assert.doesNotMatch(html, /<script[^>]+src=|<link[^>]+href=|https?:\/\/(?!www\.w3)/);
  h.close();
});

Deno.test("createApp requires a token", async () => {
  const kv = await Deno.openKv(":memory:");
  assert.throws(() => createApp({ service: createPaymentsService({ kv }), tokens: [] }));
  kv.close();
});

Deno.test("oversized path identifiers are 404, never a storage error", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const long = "x".repeat(5000);
  for (
    const [m, p] of [
      ["GET", `payments/charges/${long}`],
      ["POST", `customers/${long}/cards`],
      ["GET", `customers/${long}/bank-accounts`],
      ["POST", `payments/txn-requests/${long}/void`],
      ["GET", `payments/echecks/${long}`],
    ]
  ) {
    const r = await h.req(m, p, m === "POST" ? CARD : undefined);
    assert.equal(r.status, 404, p.slice(0, 30));
    assert.equal(r.body.errors[0].code, "PMT-4000");
  }
  // at the limit works
  const ok = await h.req("POST", `customers/${"c".repeat(256)}/cards`, CARD);
  assert.equal(ok.status, 201);
  h.close();
});

Deno.test("trailing slashes are accepted", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  assert.equal((await h.req("GET", "customers/c/cards/")).status, 200);
  h.close();
});

Deno.test("a body without Content-Length is streamed: chunks join into one JSON document", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const text = JSON.stringify({ amount: "1.00", currency: "USD", card: CARD });
  const bytes = new TextEncoder().encode(text);
  const pieces = Array.from(
    { length: Math.ceil(bytes.length / 7) },
    (_, i) => bytes.slice(i * 7, i * 7 + 7),
  );
  const res = await postRawCharge(h, streamOf(pieces));
  assert.equal(res.status, 201);
  assert.equal((await res.json()).amount, "1.00");
  h.close();
});

Deno.test("a write the store cannot commit for a locked database is 503 with Retry-After, nothing stored", async () => {
  const kv = await Deno.openKv(":memory:");
  const locked = failingCommits(kv, rejectWith("database is locked"));
  const service = createPaymentsService({ kv: locked, lockedWaitMs: 20 });
  const app = createApp({ service, tokens: ["t"] });
  const res = await app.request("/vendor/v4/payments/charges", {
    method: "POST",
    headers: { authorization: "Bearer t", "content-type": "application/json" },
    body: JSON.stringify({
      amount: "1.00",
      currency: "USD",
      card: { number: "4111111111111111", expMonth: 12, expYear: 2039, cvc: "123" },
    }),
  });
  assert.equal(res.status, 503);
  assert.equal(res.headers.get("retry-after"), "1");
  const body = ErrorEnvelope.parse(await res.json());
  assert.equal(body.errors[0].code, "PMT-6000");
  assert.equal(await countKeys(kv), 0);
  kv.close();
});

Deno.test("a request body that stalls is 408 PMT-4008 after the body deadline, not a request held forever", async () => {
  const kv = await Deno.openKv(":memory:");
  const app = createApp({
    service: createPaymentsService({ kv }),
    tokens: ["t"],
    bodyTimeoutMs: 50,
  });
  const started = performance.now();
  const stalled = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(new TextEncoder().encode('{"amount":'));
      // ... and nothing more, ever.
    },
  });
  const res = await app.request("/vendor/v4/payments/charges", {
    method: "POST",
    headers: { authorization: "Bearer t", "content-type": "application/json" },
    body: stalled,
    duplex: "half",
  } as RequestInit);
  assert.equal(res.status, 408);
  const body = ErrorEnvelope.parse(await res.json());
  assert.equal(body.errors[0].code, "PMT-4008");
  assert.ok(performance.now() - started < 5_000);
  assert.equal(await countKeys(kv), 0);
  kv.close();
});

Deno.test("a body whose Content-Type is not JSON → 415 PMT-4015; JSON types are read", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const charge = JSON.stringify({ amount: "1.00", currency: "USD", card: CARD });
  const notJson = [
    "application/x-www-form-urlencoded",
    "text/plain",
    "multipart/form-data; boundary=x",
    "application/json; charset=iso-8859-1",
    "application/jsonx",
  ];
  const json = [
    "application/json",
    "Application/JSON; charset=UTF-8",
    'application/json;charset="utf-8"',
    "application/merchant+json",
  ];
  for (const type of notJson) {
    const r = await h.req("POST", "payments/charges", charge, { "content-type": type });
    assert.equal(r.status, 415, type);
    ErrorEnvelope.parse(r.body);
    assert.deepEqual(
      [r.body.errors[0].code, r.body.errors[0].message],
      ["PMT-4015", "contentType is invalid."],
    );
    assert.match(r.body.errors[0].moreInfo, /application\/json/);
  }
  assert.equal(await countKeys(h.kv, ["charge"]), 0);
  for (const type of json) {
    const r = await h.req("POST", "payments/charges", charge, { "content-type": type });
    assert.equal(r.status, 201, type);
  }
  // no Content-Type at all is read as JSON (a string body would get text/plain from fetch)
  const bare = await postRawCharge(h, new TextEncoder().encode(charge));
  assert.equal(bare.status, 201);
  await bare.body?.cancel();
  // a write without a body needs no Content-Type
  const c = await h.req("POST", "payments/charges", charge, { "Request-Id": "ct-1" });
  const v = await h.req("POST", "payments/txn-requests/ct-1/void", undefined, {
    "content-type": "text/plain",
  });
  assert.equal(v.status, 201, JSON.stringify(v.body));
  assert.equal(c.status, 201);
  h.close();
});

Deno.test("duplicate keys in a JSON body → 400 on that field, at any depth and in any spelling", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const card = JSON.stringify(CARD).slice(1, -1);
  const cases: [string, string][] = [
    [`{"amount":"1.00","currency":"USD","amount":"100.00","card":{${card}}}`, "amount"],
    [
      `{"amount":"1.00","currency":"USD","card":{${card},"number":"4000000000000002"}}`,
      "card.number",
    ],
    [`{"amount":"1.00","\\u0061mount":"2.00","currency":"USD","card":{${card}}}`, "amount"],
  ];
  for (const [body, field] of cases) {
    const r = await h.req("POST", "payments/charges", body);
    assert.equal(r.status, 400, body);
    const e = r.body.errors[0];
    assert.deepEqual([e.code, e.detail], ["PMT-4000", field]);
    assert.match(e.moreInfo, /duplicate key/);
  }
  // the same key in two different objects is fine
  const ok = await h.req(
    "POST",
    "payments/charges",
    `{"amount":"1.00","currency":"USD","card":{${card}},"context":{"tax":"1"},"description":"tax"}`,
  );
  assert.equal(ok.status, 201);
  assert.equal(await countKeys(h.kv, ["charge"]), 1);
  // the e-check's two spellings of one field are the same trap
  const echeck = await h.req("POST", "payments/echecks", {
    Amount: "1.00",
    amount: "50.00",
    paymentMode: "WEB",
    bankAccount: {
      name: "Jo",
      accountNumber: "000123456789",
      accountType: "PERSONAL_CHECKING",
      routingNumber: "011000015",
      phone: "5555550100",
    },
  });
  assert.equal(echeck.status, 400);
  assert.equal(echeck.body.errors[0].detail, "amount");
  h.close();
});

Deno.test("OpenAPI: shows token value, charge refunds, the refund list, moreInfo, 415 and 429", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const doc = (await h.req("GET", "/openapi.json")).body;
  const schemas = doc.components.schemas;
  assert.ok(schemas.Token.properties.value);
  assert.ok(schemas.Token.required.includes("value"));
  for (const f of ["refunds", "refundableAmount", "refundedAmount"]) {
    assert.ok(schemas.Charge.properties[f], f);
  }
  assert.ok(schemas.ErrorItem.properties.moreInfo);
  const list = doc.paths["/payments/charges/{chargeId}/refunds"].get;
  assert.equal(list.operationId, "listRefunds");
  assert.ok(list.responses[200].content["application/json"].schema);
  const token = doc.paths["/payments/tokens"].post;
  assert.ok(token.responses[429].headers["Retry-After"]);
  assert.ok(token.responses[415]);
  assert.ok(doc.paths["/payments/charges"].post.responses[415]);
  assert.equal(doc.paths["/payments/charges/{chargeId}"].get.responses[415], undefined);
  h.close();
});
