import assert from "node:assert/strict";
import { PaymentsError } from "../domain/errors.ts";
import { type IdempotencyRecord, replayOf, requestDigest } from "./idempotency.ts";

Deno.test("requestDigest: same data whatever the key order; any other value differs", () => {
  const a = requestDigest({ amount: "1.00", card: { number: "4", cvc: "1" }, list: [1, 2] });
  assert.equal(a, requestDigest({ list: [1, 2], card: { cvc: "1", number: "4" }, amount: "1.00" }));
  for (
    const other of [
      { amount: "1.0", card: { number: "4", cvc: "1" }, list: [1, 2] },
      { amount: "1.00", card: { number: "4", cvc: "1" }, list: [2, 1] },
      { amount: 1, card: { number: "4", cvc: "1" }, list: [1, 2] },
      { amount: "1.00", card: { number: "4", cvc: "1" }, list: [1, 2], extra: null },
    ]
  ) {
    assert.notEqual(requestDigest(other), a, JSON.stringify(other));
  }
  // no body and an empty object are the same request
  assert.equal(requestDigest(undefined), requestDigest({}));
});

Deno.test("replayOf: replays the identical request; refuses another operation or body", () => {
  const record: IdempotencyRecord = {
    op: "capture:ch_1",
    digest: requestDigest({ amount: "1.00" }),
    status: 200,
    json: '{"id":"ch_1"}',
  };
  assert.deepEqual(replayOf(record, "capture:ch_1", requestDigest({ amount: "1.00" })), {
    status: 200,
    body: { id: "ch_1" },
    json: '{"id":"ch_1"}',
    replayed: true,
  });
  const refused = (rule: RegExp) => (e: unknown) =>
    e instanceof PaymentsError && e.status === 400 && e.details[0].code === "PMT-4000" &&
    e.details[0].message === "requestId is invalid." && rule.test(e.details[0].moreInfo ?? "");
  assert.throws(
    () => replayOf(record, "capture:ch_1", requestDigest({ amount: "2.00" })),
    refused(/different body/),
  );
  assert.throws(() => replayOf(record, "refund:ch_1"), refused(/another operation/));
  // a record written before digests were kept replays whatever the body
  const { digest: _, ...old } = record;
  assert.equal(replayOf(old, "capture:ch_1", requestDigest({ x: 1 })).status, 200);
});
