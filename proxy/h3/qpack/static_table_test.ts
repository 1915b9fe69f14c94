import assert from "node:assert/strict";
import { STATIC_TABLE, staticIndexOf, staticLookup, staticNameIndexOf } from "./static_table.ts";

Deno.test("RFC 9204 Appendix A: 99 static entries with known anchors", () => {
  assert.equal(STATIC_TABLE.length, 99);
  assert.deepEqual(STATIC_TABLE[0], [":authority", ""]);
  assert.deepEqual(STATIC_TABLE[17], [":method", "GET"]);
  assert.deepEqual(STATIC_TABLE[25], [":status", "200"]);
  assert.deepEqual(STATIC_TABLE[31], ["accept-encoding", "gzip, deflate, br"]);
  assert.deepEqual(STATIC_TABLE[63], [":status", "100"]);
  assert.deepEqual(STATIC_TABLE[85], [
    "content-security-policy",
    "script-src 'none'; object-src 'none'; base-uri 'none'",
  ]);
  assert.deepEqual(STATIC_TABLE[98], ["x-frame-options", "sameorigin"]);
});

Deno.test("RFC 9204 Appendix A: look-ups by name and by name+value", () => {
  for (let i = 0; i < STATIC_TABLE.length; i++) {
    const [name, value] = STATIC_TABLE[i];
    assert.equal(staticIndexOf(name, value), i);
    assert.equal(STATIC_TABLE[staticNameIndexOf(name)][0], name);
    assert.ok(staticNameIndexOf(name) <= i);
  }
  assert.equal(staticIndexOf(":method", "PATCH"), -1);
  assert.equal(staticIndexOf("x-unknown", ""), -1);
  assert.equal(staticNameIndexOf(":status"), 24);
  assert.equal(staticLookup(":status", "200"), 25);
  assert.equal(staticLookup(":status", "201"), -2 - 24);
  assert.equal(staticLookup("x-unknown", "1"), -1);
});
