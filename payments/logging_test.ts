import assert from "node:assert/strict";
import { setupLogging, teardownLogging } from "../shared/logging.ts";
import { BANK, CARD, harness } from "./_testing.ts";

Deno.test("logs at trace level never contain a card number, CVC or account number", async () => {
  const lines: string[] = [];
  await setupLogging({ service: "payments", level: "trace", sink: (l) => lines.push(l) });
  const h = harness(await Deno.openKv(":memory:"));
  try {
    const card = { ...CARD, cvc: "9876" };
    await h.req("POST", "customers/c/cards", card);
    await h.req("POST", "payments/charges", { amount: "1", currency: "USD", card });
    await h.req("POST", "payments/charges", {
      amount: "1",
      currency: "USD",
      card: { ...card, expMonth: 99 },
    });
    await h.req("POST", "payments/tokens", { card });
    await h.req("POST", "customers/c/bank-accounts", BANK);
    await h.req("POST", "payments/charges", "{broken");
  } finally {
    h.close();
    await teardownLogging();
  }
  assert.ok(lines.length >= 6, "request lines were logged");
  const all = lines.join("\n");
  assert.equal(all.includes(CARD.number), false);
  assert.equal(all.includes("9876"), false);
  assert.equal(all.includes(BANK.accountNumber), false);
});

Deno.test("each request's log line carries the intuit_tid of its response", async () => {
  const lines: string[] = [];
  await setupLogging({ service: "payments", level: "debug", sink: (l) => lines.push(l) });
  const h = harness(await Deno.openKv(":memory:"));
  const tids: string[] = [];
  try {
    for (const path of ["payments/charges/ch_x", "customers/c/cards"]) {
      const r = await h.req("GET", path, undefined, { "request-id": "log-1" });
      tids.push(r.headers.get("intuit_tid")!);
    }
  } finally {
    h.close();
    await teardownLogging();
  }
  for (const tid of tids) {
    const line = lines.find((l) => l.includes(`intuit_tid=${tid}`));
    assert.ok(line, `no log line with intuit_tid ${tid}`);
    assert.match(line, /request_id=log-1/);
  }
  assert.equal(new Set(tids).size, 2);
});
