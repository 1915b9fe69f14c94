import assert from "node:assert/strict";
import * as S from "../../shared/payments_schemas.ts";
import { sha512Base64 } from "../domain/card_rules.ts";
import { BANK, harness } from "../_testing.ts";

Deno.test("bank accounts: create masks the number and returns its digest once", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const r = await h.req("POST", "customers/c1/bank-accounts", { ...BANK, default: true });
  assert.equal(r.status, 201);
  const ba = S.BankAccount.strict().parse(r.body);
  assert.equal(ba.accountNumber, "xxxxxxxxxxxx6789");
  assert.equal(ba.accountNumberSHA512, await sha512Base64(BANK.accountNumber));
  assert.equal(ba.verificationStatus, "NOT_VERIFIED");
  assert.equal(ba.inputType, "KEYED");
  assert.equal(ba.country, "US");
  assert.equal(ba.default, true);
  assert.equal(ba.routingNumber, BANK.routingNumber);

  const got = await h.req("GET", `customers/c1/bank-accounts/${ba.id}`);
  assert.equal(got.status, 200);
  S.BankAccount.strict().parse(got.body);
  assert.equal(got.body.accountNumberSHA512, undefined);
  assert.equal(JSON.stringify(got.body).includes(BANK.accountNumber), false);
  h.close();
});

Deno.test("bank accounts: list newest first, delete by id, 404 after", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const a = await h.req("POST", "customers/c1/bank-accounts", BANK);
  const b = await h.req("POST", "customers/c1/bank-accounts", {
    ...BANK,
    accountType: "PERSONAL_SAVINGS",
  });
  const list = await h.req("GET", "customers/c1/bank-accounts");
  S.BankAccountList.parse(list.body);
  assert.deepEqual(list.body.map((x: { id: string }) => x.id), [b.body.id, a.body.id]);
  const del = await h.req("DELETE", `customers/c1/bank-accounts/${a.body.id}`);
  assert.equal(del.status, 200);
  S.BankAccountDeleted.strict().parse(del.body);
  assert.equal((await h.req("GET", `customers/c1/bank-accounts/${a.body.id}`)).status, 404);
  assert.equal((await h.req("DELETE", `customers/c1/bank-accounts/${a.body.id}`)).status, 404);
  assert.equal((await h.req("GET", "customers/c1/bank-accounts")).body.length, 1);
  h.close();
});

Deno.test("bank accounts: a new default account clears default on the others", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const a = await h.req("POST", "customers/d/bank-accounts", { ...BANK, default: true });
  await h.req("POST", "customers/d/bank-accounts", { ...BANK, default: true });
  const got = await h.req("GET", `customers/d/bank-accounts/${a.body.id}`);
  assert.equal(got.body.default, false);
  h.close();
});
