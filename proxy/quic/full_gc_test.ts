import assert from "node:assert/strict";
import { fullGc, requestMajorGc } from "./full_gc.ts";

Deno.test("fullGc: the runtime offers a full collection, and the same function every time", () => {
  const gc = fullGc();
  assert.equal(typeof gc, "function");
  assert.equal(fullGc(), gc);
  gc!();
});

Deno.test("fullGc: an object nobody references is collected", async () => {
  let collected = false;
  const registry = new FinalizationRegistry(() => (collected = true));
  (() => registry.register({ big: new Uint8Array(1024) }, "x"))();
  for (let i = 0; i < 10 && !collected; i++) {
    fullGc()!();
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.ok(collected);
});

Deno.test("requestMajorGc: an old object nobody references is collected soon after, with no full collection here", async () => {
  let collected = false;
  const registry = new FinalizationRegistry(() => (collected = true));
  const holder: { old?: object } = { old: { big: new Uint8Array(1024) } };
  (() => registry.register(holder.old!, "x"))();
  // Young garbage until the object has survived scavenges into the old
  // generation, where only a major collection reaches it.
  for (let round = 0; round < 4; round++) {
    (() => {
      const junk: unknown[] = [];
      for (let i = 0; i < 200_000; i++) junk.push({ i });
    })();
    await new Promise((r) => setTimeout(r, 0));
  }
  delete holder.old;
  requestMajorGc();
  for (let i = 0; i < 200 && !collected; i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(collected, "not collected within 2 s");
});
