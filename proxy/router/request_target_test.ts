import assert from "node:assert/strict";
import { checkRequestTarget } from "./request_target.ts";

Deno.test("request target: ordinary paths and queries pass untouched", () => {
  for (
    const p of [
      "/",
      "/pub/a/b.txt",
      "/a..b/c.d",
      "/.well-known/x",
      "/x?q=a%20b&r=../..",
      "/x?next=/a/./b",
      "/%41%42",
      "/dir.v2/",
      "/a/...",
      "/a/.b",
    ]
  ) {
    assert.equal(checkRequestTarget(p), null, p);
  }
});

Deno.test("RFC 3986 §5.2.4: dot segments are refused in every spelling", () => {
  for (
    const p of [
      "/pub/../secret",
      "/pub/..",
      "/pub/./x",
      "/pub/.",
      "/pub/%2e%2e/secret",
      "/pub/%2E%2E/secret",
      "/pub/.%2e/secret",
      "/pub/%2e./secret",
      "/pub/%2e/x",
      "/pub/..?x=1",
      "/..",
    ]
  ) {
    assert.match(checkRequestTarget(p) ?? "", /dot segment/, p);
  }
});

Deno.test("request target: encoded separators, backslashes, fragments, spaces and bad escapes are refused", () => {
  assert.match(checkRequestTarget("/pub/..%2fsecret") ?? "", /encoded slash/);
  assert.match(checkRequestTarget("/pub%2F..%2Fsecret") ?? "", /encoded slash/);
  assert.match(checkRequestTarget("/pub/%5c..%5csecret") ?? "", /encoded slash/);
  assert.match(checkRequestTarget("/pub\\..\\secret") ?? "", /backslash/);
  assert.match(checkRequestTarget("/pub/x#frag") ?? "", /fragment/);
  assert.match(checkRequestTarget("/pub/x?y#frag") ?? "", /fragment/);
  assert.match(checkRequestTarget("/pub/a b") ?? "", /space/);
  assert.match(checkRequestTarget("/pub/a\tb") ?? "", /control/);
  assert.match(checkRequestTarget("/pub/\u00e9") ?? "", /non-ASCII/);
  assert.match(checkRequestTarget("/pub/%zz") ?? "", /two hex digits/);
  assert.match(checkRequestTarget("/pub/%2") ?? "", /two hex digits/);
  for (const c of ['"', "<", ">", "^", "`", "{", "|", "}"]) {
    assert.match(checkRequestTarget(`/fuz${c}d`) ?? "", /not allowed in a URI/, c);
    assert.match(checkRequestTarget(`/a?q=${c}`) ?? "", /not allowed in a URI/, c);
  }
});
