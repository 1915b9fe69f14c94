import assert from "node:assert/strict";
import { bearerAllowed, constantTimeEqual } from "./auth.ts";

Deno.test("constantTimeEqual", () => {
  assert.ok(constantTimeEqual("abc", "abc"));
  assert.equal(constantTimeEqual("abc", "abd"), false);
  assert.equal(constantTimeEqual("abc", "abcd"), false);
  assert.equal(constantTimeEqual("", "a"), false);
});

Deno.test("bearerAllowed accepts any configured token with the Bearer scheme", () => {
  assert.ok(bearerAllowed("Bearer t1", ["t1", "t2"]));
  assert.ok(bearerAllowed("bearer t2", ["t1", "t2"]));
  assert.equal(bearerAllowed("Basic t1", ["t1"]), false);
  assert.equal(bearerAllowed("Bearer ", ["t1"]), false);
  assert.equal(bearerAllowed(undefined, ["t1"]), false);
  assert.equal(bearerAllowed("Bearer t3", ["t1", "t2"]), false);
});
