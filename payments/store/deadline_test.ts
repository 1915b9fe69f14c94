import assert from "node:assert/strict";
import { StoreTimeoutError, withDeadline } from "./deadline.ts";

Deno.test("withDeadline: the call's outcome when it settles in time, a StoreTimeoutError otherwise", async () => {
  assert.equal(await withDeadline(Promise.resolve(7), 1_000, "a read"), 7);
  await assert.rejects(
    withDeadline(Promise.reject(new RangeError("x")), 1_000, "a read"),
    RangeError,
  );
  const never = new Promise<number>(() => {});
  const started = performance.now();
  const err = await withDeadline(never, 30, "a commit").then(() => undefined, (e) => e);
  assert.ok(err instanceof StoreTimeoutError);
  assert.match(err.message, /did not answer a commit within 30 ms/);
  assert.ok(performance.now() - started >= 25);
  // No deadline: the call itself.
  assert.equal(await withDeadline(Promise.resolve(1), Infinity, "a read"), 1);
  // (The test sanitizer checks that no timer is left behind.)
});
