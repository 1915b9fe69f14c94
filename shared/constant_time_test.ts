import assert from "node:assert/strict";
import { constantTimeEqual } from "./constant_time.ts";

Deno.test("constantTimeEqual: equal strings only, whatever the lengths", () => {
  assert.ok(constantTimeEqual("abc", "abc"));
  assert.ok(constantTimeEqual("", ""));
  assert.equal(constantTimeEqual("abc", "abd"), false);
  assert.equal(constantTimeEqual("abc", "abcd"), false);
  assert.equal(constantTimeEqual("", "a"), false);
});
