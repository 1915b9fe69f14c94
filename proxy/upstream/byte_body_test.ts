import assert from "node:assert/strict";
import { concatBytes } from "../../shared/bytes.ts";
import { ByteBody, ByteQueue, COPY_CHUNK_BYTES } from "./byte_body.ts";

const pattern = (n: number, from = 0) =>
  Uint8Array.from({ length: n }, (_, i) => (from + i) & 0xff);

Deno.test("ByteQueue: bytes come out in order across the ring's wrap, and it grows only as needed", () => {
  const q = new ByteQueue();
  q.write(pattern(10_000));
  const first = new Uint8Array(6_000);
  assert.equal(q.readInto(first), 6_000);
  assert.deepEqual(first, pattern(6_000));
  // 4,000 queued at offset 6,000 of a 16 KiB ring: 12,000 more wrap around.
  q.write(pattern(12_000, 10_000));
  assert.equal(q.capacity, 16 * 1024, "room enough: no growth");
  assert.deepEqual(q.take(1 << 20), pattern(16_000, 6_000));
  assert.equal(q.length, 0);
  q.write(pattern(40_000));
  assert.equal(q.capacity, 64 * 1024);
  assert.deepEqual(q.take(40_000), pattern(40_000));
});

Deno.test("ByteBody: a BYOB reader gets the bytes in its own buffer; the producer's buffer is reused at once", async () => {
  const taken: number[] = [];
  const body = new ByteBody({ taken: (n) => taken.push(n), cancel: () => {} });
  const reader = body.stream.getReader({ mode: "byob" });
  const shared = new Uint8Array(1000); // the producer's read buffer
  // A read waits: the push goes straight into the reader's buffer.
  const waiting = reader.read(new Uint8Array(4096));
  await Promise.resolve();
  shared.set(pattern(1000));
  body.push(shared);
  shared.fill(0); // overwritten by the producer's next read
  const r1 = await waiting;
  assert.deepEqual(r1.value, pattern(1000));
  // Nothing waits: pushes are queued (copied), then one read takes them together.
  shared.set(pattern(1000, 1000));
  body.push(shared);
  shared.set(pattern(1000, 2000));
  body.push(shared);
  shared.fill(0);
  assert.equal(body.queued, 2000);
  const r2 = await reader.read(new Uint8Array(4096));
  assert.deepEqual(r2.value, pattern(2000, 1000));
  body.end();
  assert.equal((await reader.read(new Uint8Array(16))).done, true);
  assert.deepEqual(taken, [1000, 2000]);
});

Deno.test("ByteBody: a default reader gets copies of at most 64 KiB; the end comes after the rest", async () => {
  const body = new ByteBody({ cancel: () => {} });
  body.push(pattern(100_000));
  body.end();
  const got: Uint8Array[] = [];
  for await (const c of body.stream) got.push(c);
  assert.deepEqual(got.map((c) => c.length), [COPY_CHUNK_BYTES, 100_000 - COPY_CHUNK_BYTES]);
  assert.deepEqual(concatBytes(...got), pattern(100_000));
});

Deno.test("ByteBody: a read that waits asks the producer to pull, once per read", async () => {
  let pulls = 0;
  const body: ByteBody = new ByteBody({
    pull: () => {
      pulls++;
      body.push(pattern(10));
    },
    cancel: () => {},
  });
  const reader = body.stream.getReader({ mode: "byob" });
  for (let i = 0; i < 3; i++) {
    assert.deepEqual((await reader.read(new Uint8Array(64))).value, pattern(10));
  }
  assert.equal(pulls, 3);
});

Deno.test("ByteBody: cancel reports what was queued unread; error reaches the reader", async () => {
  let dropped = -1;
  const body = new ByteBody({ cancel: (queued) => dropped = queued });
  body.push(pattern(500));
  await body.stream.cancel();
  assert.equal(dropped, 500);
  assert.ok(body.over);
  body.push(pattern(5)); // after the end: ignored
  assert.equal(body.queued, 0);

  const broken = new ByteBody({ cancel: () => {} });
  const read = broken.stream.getReader().read();
  broken.error(new Error("backend reset"));
  await assert.rejects(read, /backend reset/);
});

Deno.test("ByteBody: the pushes of one turn fill one BYOB read together; a full buffer is answered at once", async () => {
  const body = new ByteBody({ cancel: () => {} });
  const reader = body.stream.getReader({ mode: "byob" });
  const first = reader.read(new Uint8Array(4096));
  await Promise.resolve();
  // Three DATA frames of one socket read, in one turn.
  for (let i = 0; i < 3; i++) body.push(pattern(1000, i * 1000));
  assert.deepEqual((await first).value, pattern(3000), "one read for the three");
  // A buffer filled up is answered without waiting; the rest is queued.
  const second = reader.read(new Uint8Array(1500));
  await Promise.resolve();
  body.push(pattern(2000, 3000));
  assert.deepEqual((await second).value, pattern(1500, 3000));
  assert.equal(body.queued, 500);
  body.end();
  assert.deepEqual((await reader.read(new Uint8Array(4096))).value, pattern(500, 4500));
  assert.equal((await reader.read(new Uint8Array(16))).done, true);
});

Deno.test("ByteBody: the end while a read is being filled hands the bytes over first", async () => {
  const body = new ByteBody({ cancel: () => {} });
  const reader = body.stream.getReader({ mode: "byob" });
  const first = reader.read(new Uint8Array(4096));
  await Promise.resolve();
  body.push(pattern(10));
  body.end();
  assert.deepEqual((await first).value, pattern(10));
  assert.equal((await reader.read(new Uint8Array(16))).done, true);
});
