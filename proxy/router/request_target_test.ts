import assert from "node:assert/strict";
import { checkAuthority, checkRequestTarget } from "./request_target.ts";

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

Deno.test("RFC 3986 §3.2: ordinary authorities pass", () => {
  for (
    const a of [
      "example.com",
      "example.com:443",
      "localhost:65535",
      "localhost:0",
      "localhost:",
      "127.0.0.1:8080",
      "[::1]:8443",
      "[2001:db8::7]",
      "[::ffff:127.0.0.1]:80",
      "xn--bcher-kva.example",
      "Example.COM:00080",
    ]
  ) {
    assert.equal(checkAuthority(a), null, a);
  }
});

Deno.test("RFC 3986 §3.2.3: a port above 65535 is refused", () => {
  for (const a of ["localhost:99999", "localhost:65536", "[::1]:70000", "a.test:000000080"]) {
    assert.match(checkAuthority(a) ?? "", /port .* not in 0-65535/, a);
  }
});

Deno.test("RFC 3986 §3.2, RFC 9110 §4.2: impossible authorities are refused", () => {
  for (
    const [a, why] of [
      ["", /empty host/],
      [":443", /empty host/],
      ["user@example.com", /userinfo/],
      ["user:pw@example.com:443", /userinfo/],
      ["[::::]", /not an IPv6 address/],
      ["[1.2.3.4]", /not an IPv6 address/],
      ["[v1.fe]", /not an IPv6 address/],
      ["[]", /not an IPv6 address/],
      ["[::1", /not a host\[:port\]/],
      ["::1", /empty host/],
      ["a b.test", /not a host\[:port\]/],
      ["a.test:80:80", /not a host\[:port\]/],
      ["a.test:8o", /not a host\[:port\]/],
      ["a%zz.test", /not a host\[:port\]/],
      ["a.test/x", /not a host\[:port\]/],
      ["a,b.test", /not a host\[:port\]/],
      // RFC 3986 allows percent-encoding in a reg-name; HTTP/2 backends do not.
      ["a%41b.test", /percent-encoding in the host/],
      ["localhostriF%71", /percent-encoding in the host/],
    ] as const
  ) {
    assert.match(checkAuthority(a) ?? "", why, JSON.stringify(a));
  }
});
