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

Deno.test("bank accounts: delete on the collection path takes the id from the query or the body", async () => {
  const h = harness(await Deno.openKv(":memory:"));
  const ids: string[] = [];
  for (let i = 0; i < 4; i++) {
    ids.push((await h.req("POST", "customers/q/bank-accounts", BANK)).body.id);
  }
  const forms = [
    () => h.req("DELETE", `customers/q/bank-accounts?bankAccountId=${ids[0]}`),
    () => h.req("DELETE", `customers/q/bank-accounts?id=${ids[1]}`),
    () => h.req("DELETE", "customers/q/bank-accounts", { bankAccountId: ids[2] }),
    () => h.req("DELETE", "customers/q/bank-accounts", { id: ids[3] }),
  ];
  for (const [i, del] of forms.entries()) {
    const r = await del();
    assert.equal(r.status, 200, `form ${i}`);
    S.BankAccountDeleted.strict().parse(r.body);
    assert.equal((await h.req("GET", `customers/q/bank-accounts/${ids[i]}`)).status, 404);
  }
  assert.deepEqual((await h.req("GET", "customers/q/bank-accounts")).body, []);
  // Already gone, or never existed: 404.
  const gone = await h.req("DELETE", `customers/q/bank-accounts?id=${ids[0]}`);
  assert.equal(gone.status, 404);
  assert.equal(gone.body.errors[0].code, "PMT-4000");
  // No id: 400 required; two different ids or a non-string: 400 invalid.
  const none = await h.req("DELETE", "customers/q/bank-accounts");
  assert.equal(none.status, 400);
  assert.equal(none.body.errors[0].code, "PMT-4002");
  assert.equal(none.body.errors[0].message, "bankAccountId is required.");
  for (
    const [query, body] of [["?id=a", { bankAccountId: "b" }], ["?id=a&id=b", undefined]] as const
  ) {
    const two = await h.req("DELETE", `customers/q/bank-accounts${query}`, body);
    assert.equal(two.status, 400, query);
    assert.equal(two.body.errors[0].message, "bankAccountId is invalid.");
  }
  const num = await h.req("DELETE", "customers/q/bank-accounts", { id: 7 });
  assert.equal(num.status, 400);
  // Same id in both places is fine (still 404 here: nothing by that id).
  assert.equal((await h.req("DELETE", "customers/q/bank-accounts?id=x", { id: "x" })).status, 404);
  // Without a token: 401 before anything else.
  const anon = await h.req("DELETE", `customers/q/bank-accounts?id=${ids[0]}`, undefined, {
    authorization: "",
  });
  assert.equal(anon.status, 401);
  h.close();
});
