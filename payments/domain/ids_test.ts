import assert from "node:assert/strict";
import { createIdGenerator } from "./ids.ts";

Deno.test("ids sort in creation order, also within one millisecond", () => {
  let t = 1_700_000_000_000;
  const next = createIdGenerator(() => t);
  const ids = [next("x_"), next("x_"), next("x_")];
  t += 1;
  ids.push(next("x_"));
  assert.deepEqual([...ids].sort(), ids);
  assert.equal(new Set(ids).size, 4);
});
