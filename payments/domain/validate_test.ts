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

Deno.test("lowerFirstKeys lowers capitalised keys, no __proto__", () => {
  const out = lowerFirstKeys(JSON.parse(
    '{"Amount":"1","BankAccount":{"AccountNumber":"1"},"paymentMode":"WEB","__proto__":{"p":1}}',
  )) as Record<string, unknown>;
  assert.deepEqual(out, { amount: "1", bankAccount: { accountNumber: "1" }, paymentMode: "WEB" });
  assert.equal(Object.getPrototypeOf(out), Object.prototype);
});

Deno.test("lowerFirstKeys: a key in both forms is 400 on that field, not a silent winner", () => {
  for (
    const [json, path] of [
      ['{"paymentMode":"WEB","PaymentMode":"X"}', "paymentMode"],
      ['{"BankAccount":{"Name":"a","name":"b"}}', "bankAccount.name"],
    ]
  ) {
    assert.throws(
      () => lowerFirstKeys(JSON.parse(json), 3),
      (e) =>
        e instanceof PaymentsError && e.status === 400 && e.details[0].detail === path &&
        /not both/.test(e.details[0].moreInfo ?? ""),
    );
  }
});

Deno.test("validate: moreInfo tells the rule that failed; an absent body validates as {}", () => {
  const R = z.object({ n: z.number().max(3, { error: "at most 3" }) });
  assert.throws(
    () => validate(R, { n: 9 }),
    (e) => e instanceof PaymentsError && e.details[0].moreInfo === "at most 3",
  );
  assert.throws(
    () => validate(R, undefined),
    (e) => e instanceof PaymentsError && e.details[0].code === "PMT-4002",
  );
});
