import assert from "node:assert/strict";
import { H3Code, H3Error } from "../errors.ts";
import { DynamicTable } from "./dynamic_table.ts";

Deno.test("RFC 9204 §3.2: dynamic table sizes, absolute indexing and eviction", () => {
  const t = new DynamicTable(200);
  t.setCapacity(200);
  assert.equal(t.insert("a", "b"), 0);
  assert.equal(t.size, 34);
  for (let i = 1; i < 100; i++) t.insert("n", String(i % 10)); // 34 bytes each
  assert.equal(t.insertCount, 100);
  assert.equal(t.length, 5);
  assert.equal(t.size, 170);
  assert.equal(t.droppedCount, 95);
  assert.equal(t.get(94), undefined);
  assert.deepEqual(t.get(99), ["n", "9"]);
  assert.equal(t.get(100), undefined);
  t.setCapacity(68);
  assert.equal(t.length, 2);
  t.setCapacity(0);
  assert.equal(t.length, 0);
  assert.equal(t.size, 0);
});

Deno.test("RFC 9204 §3.2.2: an entry larger than the capacity is an error; so is a capacity above the maximum", () => {
  const t = new DynamicTable(100);
  assert.throws(
    () => t.setCapacity(101),
    (e: unknown) => e instanceof H3Error && e.code === H3Code.QPACK_ENCODER_STREAM_ERROR,
  );
  t.setCapacity(50);
  assert.throws(() => t.insert("name", "x".repeat(15)), H3Error);
  t.insert("name", "x".repeat(14)); // exactly 50
  assert.equal(t.size, 50);
});

Deno.test("RFC 9204 §2.1.4: known received count from acknowledgments and increments", () => {
  const t = new DynamicTable(1000);
  t.setCapacity(1000);
  for (let i = 0; i < 5; i++) t.insert("k", "v");
  t.acknowledgeSection(3);
  assert.equal(t.knownReceivedCount, 3);
  t.acknowledgeSection(2);
  assert.equal(t.knownReceivedCount, 3);
  t.incrementKnownReceived(2);
  assert.equal(t.knownReceivedCount, 5);
  const bad = (e: unknown) => e instanceof H3Error && e.code === H3Code.QPACK_DECODER_STREAM_ERROR;
  assert.throws(() => t.incrementKnownReceived(1), bad);
  assert.throws(() => t.incrementKnownReceived(0), bad);
});
