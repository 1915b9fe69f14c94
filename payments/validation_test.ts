import assert from "node:assert/strict";
import fc from "fast-check";
import { ALL_ENDPOINTS } from "./app.ts";
import { BANK, CARD, harness } from "./_testing.ts";

type Case = [string, unknown, "PMT-4000" | "PMT-4002" | null, string?];

async function check(path: string, base: Record<string, unknown>, field: string, cases: Case[]) {
  const h = harness(await Deno.openKv(":memory:"));
  try {
    for (const [label, value, code, detail] of cases) {
      const body = structuredClone(base);
      const parts = field.split(".");
      let target = body as Record<string, unknown>;
      for (const p of parts.slice(0, -1)) target = target[p] as Record<string, unknown>;
      if (value === undefined) delete target[parts.at(-1)!];
      else target[parts.at(-1)!] = value;
      const r = await h.req("POST", path, body);
      if (code === null) {
        assert.ok(r.status === 201, `${field} ${label}: ${r.status} ${JSON.stringify(r.body)}`);
      } else {
        assert.equal(r.status, 400, `${field} ${label}`);
        const e = r.body.errors[0];
        assert.equal(e.code, code, `${field} ${label}`);
        assert.equal(e.detail, detail ?? field, `${field} ${label}`);
        const leaf = (detail ?? field).split(".").at(-1);
        assert.equal(e.message, `${leaf} is ${code === "PMT-4002" ? "required" : "invalid"}.`);
        assert.equal(e.type, "invalid_request");
        assert.equal(typeof e.infoLink, "string");
      }
    }
  } finally {
    h.close();
  }
}

const charge = { amount: "1.00", currency: "USD", card: { ...CARD } };

Deno.test("bounds: card number Luhn-valid, 12–19 digits", async () => {
  await check("payments/charges", charge, "card.number", [
    ["missing", undefined, "PMT-4002"],
    ["12 digits luhn", "400000000002", null],
    ["19 digits luhn", "4000000000000000006", null],
    ["11 digits", "40000000009", "PMT-4000"],
    ["20 digits", "40000000000000000006", "PMT-4000"],
    ["luhn fail", "4111111111111112", "PMT-4000"],
    ["letters", "4111-1111-1111-1111", "PMT-4000"],
    ["number type", 4111111111111111, "PMT-4000"],
  ]);
});

Deno.test("bounds: expMonth 1–12, expYear four digits and not expired (clock 2026-06)", async () => {
  await check("payments/charges", charge, "card.expMonth", [
    ["0", 0, "PMT-4000"],
    ["1", 1, null],
    ["12", 12, null],
    ["13", 13, "PMT-4000"],
    ["string 7", "7", null],
    ["1.5", 1.5, "PMT-4000"],
    ["missing", undefined, "PMT-4002"],
  ]);
  await check("payments/charges", charge, "card.expYear", [
    ["two digits", 30, "PMT-4000"],
    ["five digits", 20300, "PMT-4000"],
    ["past year", 2025, "PMT-4000"],
    ["this year, month 12", 2026, null],
    ["string", "2031", null],
    ["missing", undefined, "PMT-4002"],
  ]);
  await check(
    "payments/charges",
    { ...charge, card: { ...CARD, expYear: 2026 } },
    "card.expMonth",
    [
      ["last month", 5, "PMT-4000", "card.expYear"],
      ["this month", 6, null],
    ],
  );
});

Deno.test("bounds: cvc 3–4 digits", async () => {
  await check("payments/charges", charge, "card.cvc", [
    ["2", "12", "PMT-4000"],
    ["3", "123", null],
    ["4", "1234", null],
    ["5", "12345", "PMT-4000"],
    ["letters", "12a", "PMT-4000"],
    ["number", 123, "PMT-4000"],
    ["missing", undefined, "PMT-4002"],
  ]);
});

Deno.test("bounds: amount 0.00–99999.99, at most two decimals; currency USD", async () => {
  await check("payments/charges", charge, "amount", [
    ["0.00", "0.00", null],
    ["0", 0, null],
    ["99999.99", "99999.99", null],
    ["number 99999.99", 99999.99, null],
    ["100000.00", "100000.00", "PMT-4000"],
    ["negative", "-1.00", "PMT-4000"],
    ["three decimals", "1.001", "PMT-4000"],
    ["number three decimals", 1.001, "PMT-4000"],
    ["text", "ten", "PMT-4000"],
    ["bool", true, "PMT-4000"],
    ["missing", undefined, "PMT-4002"],
  ]);
  await check("payments/charges", charge, "currency", [
    ["EUR", "EUR", "PMT-4000"],
    ["usd", "usd", "PMT-4000"],
    ["missing", undefined, "PMT-4002"],
  ]);
});

Deno.test("bounds: card fields types (name, default, isBusiness, address)", async () => {
  await check("customers/c/cards", { ...CARD }, "default", [
    ["string", "yes", "PMT-4000"],
    ["true", true, null],
  ]);
  await check("customers/c/cards", { ...CARD }, "address", [
    ["string", "1 Main St", null],
    ["object", { city: "X" }, null],
    ["number", 5, "PMT-4000"],
  ]);
  await check("customers/c/cards", { ...CARD }, "isBusiness", [["string", "no", "PMT-4000"]]);
  await check("customers/c/cards", { ...CARD }, "number", [["missing", undefined, "PMT-4002"]]);
});

Deno.test("bounds: bank accountNumber 4–17 digits, routing 9 digits + ABA, phone 10 digits", async () => {
  const path = "customers/c/bank-accounts";
  await check(path, { ...BANK }, "accountNumber", [
    ["3", "123", "PMT-4000"],
    ["4", "1234", null],
    ["17", "12345678901234567", null],
    ["18", "123456789012345678", "PMT-4000"],
    ["letters", "12345a", "PMT-4000"],
    ["missing", undefined, "PMT-4002"],
  ]);
  await check(path, { ...BANK }, "routingNumber", [
    ["8 digits", "01100001", "PMT-4000"],
    ["10 digits", "0110000150", "PMT-4000"],
    ["bad checksum", "011000016", "PMT-4000"],
    ["valid", "021000021", null],
    ["missing", undefined, "PMT-4002"],
  ]);
  await check(path, { ...BANK }, "phone", [
    ["9", "555555010", "PMT-4000"],
    ["11", "55555501000", "PMT-4000"],
    ["formatted", "555-555-0100", "PMT-4000"],
    ["missing", undefined, "PMT-4002"],
  ]);
  await check(path, { ...BANK }, "accountType", [
    ["unknown", "CHEQUING", "PMT-4000"],
    ["savings", "PERSONAL_SAVINGS", null],
    ["missing", undefined, "PMT-4002"],
  ]);
  await check(path, { ...BANK }, "name", [["missing", undefined, "PMT-4002"]]);
  await check(path, { ...BANK }, "inputType", [["KEYED", "KEYED", null], ["x", "X", "PMT-4000"]]);
});

Deno.test("bounds: context flags are booleans or 'true'/'false'", async () => {
  await check("payments/charges", { ...charge, context: {} }, "context.mobile", [
    ["string true", "true", null],
    ["bool", false, null],
    ["other", "yes", "PMT-4000"],
  ]);
});

Deno.test("several bad fields are all listed", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const r = await h.req("POST", "payments/charges", { amount: "x", card: { number: "1" } });
  assert.equal(r.status, 400);
  const details = r.body.errors.map((e: { detail: string }) => e.detail);
  for (const d of ["amount", "currency", "card.number", "card.expMonth", "card.cvc"]) {
    assert.ok(details.includes(d), d);
  }
  h.close();
});

Deno.test("never a 500: arbitrary JSON bodies and headers on every endpoint taking a body", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const writes = ALL_ENDPOINTS.filter((e) => e.route.method === "post" || e.route.request?.body);
  assert.ok(writes.some((e) => e.route.method === "delete"));
  try {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...writes),
        fc.oneof(
          fc.json(),
          fc.string(),
          fc.record({ amount: fc.anything(), currency: fc.anything(), card: fc.anything() }),
          fc.record({ card: fc.record({ number: fc.string(), expMonth: fc.anything() }) }),
        ),
        fc.option(fc.string({ maxLength: 200 })),
        async (ep, body, rid) => {
          const path = ep.route.path.replace(/\{[^}]+\}/g, "x");
          const r = await h.req(
            ep.route.method.toUpperCase(),
            `/vendor/v4${path}`,
            typeof body === "string" ? body : JSON.stringify(body),
            rid === null ? {} : { "Request-Id": rid },
          );
          assert.ok(r.status < 500, `${ep.route.path} ${r.status} ${JSON.stringify(r.body)}`);
          if (r.status >= 400) assert.ok(Array.isArray(r.body.errors));
        },
      ),
      { numRuns: 300 },
    );
  } finally {
    h.close();
  }
});

Deno.test("never a 500: arbitrary path identifiers, percent-escapes and methods", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const templates = ALL_ENDPOINTS.map((e) => e.route.path);
  try {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...templates),
        fc.array(
          fc.oneof(
            fc.string({ minLength: 1, maxLength: 40 }).map(encodeURIComponent),
            fc.constantFrom("%", "%E0%A4%A", "%00", "%2F", "..", "%FF%FE", "%25"),
          ),
          { minLength: 3, maxLength: 3 },
        ),
        fc.constantFrom("GET", "POST", "DELETE", "PUT", "PATCH", "OPTIONS", "HEAD"),
        async (template, ids, method) => {
          let i = 0;
          const path = template.replace(/\{[^}]+\}/g, () => ids[i++] || "x");
          const res = await h.app.request(`/vendor/v4${path}`, {
            method,
            headers: { authorization: "Bearer test-token", "content-type": "application/json" },
            body: method === "POST" ? "{}" : undefined,
          });
          await res.body?.cancel();
          assert.ok(res.status < 500, `${method} ${path} → ${res.status}`);
        },
      ),
      { numRuns: 300 },
    );
  } finally {
    h.close();
  }
});
