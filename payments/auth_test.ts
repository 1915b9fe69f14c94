import assert from "node:assert/strict";
import { constantTimeEqual } from "../shared/constant_time.ts";
import { bearerAllowed, bearerChecker } from "./auth.ts";

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

Deno.test("bearerChecker: same answers as bearerAllowed; whole tokens only", () => {
  const check = bearerChecker(["t1", "t2"]);
  for (
    const h of [
      "Bearer t1",
      "bearer t2",
      "Basic t1",
      "Bearer ",
      undefined,
      "Bearer t3",
      "Bearer  t1 ",
    ]
  ) {
    assert.equal(check(h), bearerAllowed(h, ["t1", "t2"]), String(h));
  }
  assert.ok(check("Bearer t2"));
  assert.equal(check("Bearer t10"), false);
  assert.equal(check("Bearer t"), false);
  assert.equal(bearerChecker(["é"])("Bearer \u00c3\u00a9"), false);
});
