import assert from "node:assert/strict";
import { fullGc } from "./full_gc.ts";

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
