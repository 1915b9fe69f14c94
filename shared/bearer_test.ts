import assert from "node:assert/strict";
import { bearerChecker, bearerToken } from "./bearer.ts";

Deno.test("RFC 6750 §2.1: Bearer scheme in any case, the token up to trailing whitespace", () => {
  assert.equal(bearerToken("Bearer t1"), "t1");
  assert.equal(bearerToken("bearer t2"), "t2");
  assert.equal(bearerToken("BEARER  t3 "), "t3");
  assert.equal(bearerToken("Basic t1"), null);
  assert.equal(bearerToken("Bearer "), null);
  assert.equal(bearerToken("Bearer a b"), null);
  assert.equal(bearerToken("Bearert1"), null);
  assert.equal(bearerToken(undefined), null);
  assert.equal(bearerToken(null), null);
});

Deno.test("bearerChecker: any configured token, whole tokens only", () => {
  const check = bearerChecker(["t1", "t2"]);
  assert.ok(check("Bearer t1"));
  assert.ok(check("bearer t2"));
  assert.ok(check("Bearer  t1 "));
  for (const h of ["Basic t1", "Bearer ", undefined, "Bearer t3", "Bearer t10", "Bearer t"]) {
    assert.equal(check(h), false, String(h));
  }
  assert.equal(bearerChecker(["é"])("Bearer \u00c3\u00a9"), false);
  assert.equal(bearerChecker([])("Bearer t1"), false);
});
