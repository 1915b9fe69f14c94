import assert from "node:assert/strict";
import { concatBytes, readUpTo } from "./bytes.ts";

function streamOf(parts: number[][], onCancel?: () => void): ReadableStream<Uint8Array> {
  let i = 0;
  return new ReadableStream<Uint8Array>({
    pull(c) {
      if (i < parts.length) c.enqueue(Uint8Array.from(parts[i++]));
      else c.close();
    },
    cancel: onCancel,
  });
}

Deno.test("concatBytes: parts in order, in a new array", () => {
  const a = Uint8Array.of(1, 2);
  const out = concatBytes(a, Uint8Array.of(), Uint8Array.of(3));
  assert.deepEqual([...out], [1, 2, 3]);
  out[0] = 9;
  assert.equal(a[0], 1);
  assert.equal(concatBytes().length, 0);
});

Deno.test("readUpTo: whole stream up to the limit; over it, null and the stream cancelled", async () => {
  assert.deepEqual([...(await readUpTo(streamOf([[1, 2], [3]]), 3))!], [1, 2, 3]);
  assert.deepEqual([...(await readUpTo(streamOf([]), 0))!], []);
  let cancelled = false;
  assert.equal(await readUpTo(streamOf([[1, 2], [3, 4]], () => (cancelled = true)), 3), null);
  assert.ok(cancelled);
  const failing = new ReadableStream<Uint8Array>({ pull: (c) => c.error(new Error("boom")) });
  await assert.rejects(readUpTo(failing, 10), /boom/);
});
