/** The typed example client against a real in-process server. */
import assert from "node:assert/strict";
import { PaymentsApiError, PaymentsClient } from "../../examples/payments_client.ts";
import { startPaymentsServer } from "../../payments/mod.ts";

const CARD = { number: "4111111111111111", expMonth: 12, expYear: 2035, cvc: "123", name: "C" };
const BANK = {
  name: "C",
  accountNumber: "123456789",
  accountType: "PERSONAL_CHECKING" as const,
  routingNumber: "011000015",
  phone: "5555550100",
};

Deno.test("example client: every operation round-trips through the zod schemas", async () => {
  const srv = await startPaymentsServer({
    port: 0,
    kv: await Deno.openKv(":memory:"),
    tokens: ["cli"],
  });
  const api = new PaymentsClient({ baseUrl: `${srv.url}/vendor/v4`, token: "cli" });
  try {
    const card = await api.createCard("cu", CARD);
    assert.equal((await api.getCard("cu", card.id)).numberSHA512.length, 88);
    assert.equal((await api.listCards("cu")).length, 1);
    assert.equal((await api.deleteCard("cu", card.id)).status, "success");
    const ba = await api.createBankAccount("cu", BANK);
    assert.equal((await api.getBankAccount("cu", ba.id)).id, ba.id);
    assert.equal((await api.listBankAccounts("cu")).length, 1);
    await api.deleteBankAccount("cu", ba.id);

    const tok = await api.createToken({ card: CARD });
    const { charge, requestId } = await api.createCharge(
      { amount: "30.00", currency: "USD", token: tok.id },
      { requestId: "client-1" },
    );
    assert.equal(requestId, "client-1");
    assert.equal((await api.capture(charge.id, { amount: "20.00" })).status, "CAPTURED");
    const rf = await api.refund(charge.id, { amount: "5.00" });
    assert.deepEqual(await api.getRefund(charge.id, rf.id), rf);
    assert.equal((await api.getCharge(charge.id)).status, "CAPTURED"); // partly refunded
    await assert.rejects(
      () => api.refund(charge.id, { amount: "99.00" }),
      (e) => e instanceof PaymentsApiError && e.status === 400 && e.errors[0].code === "PMT-4000",
    );
    const second = await api.createCharge({ amount: 1, currency: "USD", card: CARD });
    assert.equal((await api.void(second.requestId)).type, "VOID");
    const ec = await api.createECheck({ amount: "3", paymentMode: "WEB", bankAccount: BANK });
    assert.equal((await api.getECheck(ec.id)).status, "PENDING");
    const ecr = await api.refundECheck(ec.id, { amount: "1.00" });
    assert.deepEqual(await api.getECheckRefund(ec.id, ecr.id), ecr);
    const cardTok = await api.createToken({ card: CARD });
    assert.equal((await api.createCardFromToken("cu2", cardTok.value)).number, "xxxxxxxxxxxx1111");
    const bankTok = await api.createToken({ bankAccount: BANK });
    await api.createBankAccountFromToken("cu2", bankTok.value);
    assert.equal((await api.listCards("cu2", 1)).length, 1);
    assert.equal((await api.listBankAccounts("cu2", 1)).length, 1);
  } finally {
    await srv.shutdown();
  }
});
