import assert from "node:assert/strict";
import { z } from "@hono/zod-openapi";
import { PaymentsError } from "./errors.ts";
import { lowerFirstKeys, validate } from "./validate.ts";

const S = z.object({ a: z.string(), b: z.object({ c: z.number().max(3) }) });

Deno.test("validate maps missing to PMT-4002 and invalid to PMT-4000 with paths", () => {
  try {
    validate(S, { b: { c: 9 } }, "x");
    assert.fail("should throw");
  } catch (e) {
    assert.ok(e instanceof PaymentsError);
    assert.deepEqual(e.details.map((d) => [d.code, d.message, d.detail]), [
      ["PMT-4002", "a is required.", "x.a"],
      ["PMT-4000", "c is invalid.", "x.b.c"],
    ]);
  }
});

Deno.test("lowerFirstKeys lowers capitalised keys, lower camelCase wins, no __proto__", () => {
  const out = lowerFirstKeys(JSON.parse(
    '{"Amount":"1","BankAccount":{"AccountNumber":"1"},"paymentMode":"WEB","PaymentMode":"X","__proto__":{"p":1}}',
  )) as Record<string, unknown>;
  assert.deepEqual(out, { amount: "1", bankAccount: { accountNumber: "1" }, paymentMode: "WEB" });
  assert.equal(Object.getPrototypeOf(out), Object.prototype);
});
