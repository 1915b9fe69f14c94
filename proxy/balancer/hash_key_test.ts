import assert from "node:assert/strict";
import { request } from "./_test_util.ts";
import { fnv1a64, hash32 } from "./hash.ts";
import { BalancerConfigError } from "./types.ts";
import {
  cookieValue,
  extractHashKey,
  formatHashKey,
  parseHashKey,
  parseHashKeySource,
  pathOnly,
  queryValue,
} from "./hash_key.ts";

Deno.test("FNV-1a 64 matches the reference vectors (UTF-8 input)", () => {
  const hex = (s: string) => fnv1a64(s).map((x) => x.toString(16).padStart(8, "0")).join("");
  assert.equal(hex(""), "cbf29ce484222325");
  assert.equal(hex("a"), "af63dc4c8601ec8c");
  assert.equal(hex("foobar"), "85944171f73967e8");
  // Same as hashing TextEncoder's bytes.
  assert.equal(hex("é€😀"), "0a289ca40199fa06");
  assert.equal(hex("\ud800"), hex("\ufffd"));
});

Deno.test("hash32 spreads similar keys over the whole 32-bit space", () => {
  const buckets = new Array(16).fill(0);
  for (let i = 0; i < 16_000; i++) buckets[hash32(`k${i}`) >>> 28]++;
  for (const n of buckets) assert.ok(n > 850 && n < 1150, `${buckets}`);
});

Deno.test("parseHashKey: the four key forms; header names lowercased", () => {
  assert.deepEqual(parseHashKey("path"), { source: "path" });
  assert.deepEqual(parseHashKey("header:X-User-Id"), { source: "header", name: "x-user-id" });
  assert.deepEqual(parseHashKey("cookie:Session"), { source: "cookie", name: "Session" });
  assert.deepEqual(parseHashKey("query:user"), { source: "query", name: "user" });
  const bad = ["", "ip", "header:", "header:a b", "body:x", "Path", "path:x", " PATH ", "Cookie:x"];
  for (const key of bad) assert.equal(parseHashKey(key), null, key);
});

Deno.test("formatHashKey writes the canonical form parseHashKey reads back", () => {
  for (const key of ["path", "header:x-user", "cookie:SID", "query:tenant"]) {
    assert.equal(formatHashKey(parseHashKey(key)!), key);
  }
  assert.equal(formatHashKey(parseHashKey("header:X-User")!), "header:x-user");
});

Deno.test("parseHashKeySource: undefined means path; outside the grammar throws", () => {
  assert.deepEqual(parseHashKeySource(undefined), { source: "path" });
  assert.deepEqual(parseHashKeySource("header:X-User-Id"), { source: "header", name: "x-user-id" });
  assert.deepEqual(parseHashKeySource("query:tenant"), { source: "query", name: "tenant" });
  for (const key of ["ip", "header:", " PATH ", "Cookie: SID"]) {
    assert.throws(() => parseHashKeySource(key), BalancerConfigError, key);
  }
});

Deno.test("cookieValue: robust parsing, first match wins", () => {
  assert.equal(cookieValue("sid=abc", "sid"), "abc");
  assert.equal(cookieValue("  a=1 ;sid =  abc  ; b=2", "sid"), "abc");
  assert.equal(cookieValue("sid=first; sid=second", "sid"), "first");
  assert.equal(cookieValue('sid="quoted"', "sid"), "quoted");
  assert.equal(cookieValue("junk; ;;=; sid=v; x", "sid"), "v");
  assert.equal(cookieValue("sid=a=b=c", "sid"), "a=b=c");
  assert.equal(cookieValue("SID=upper; sid=lower", "sid"), "lower");
  assert.equal(cookieValue("xsid=1; sidx=2", "sid"), null);
  assert.equal(cookieValue("sid=", "sid"), null);
  assert.equal(cookieValue('sid=""', "sid"), null);
  assert.equal(cookieValue("", "sid"), null);
  assert.equal(cookieValue(null, "sid"), null);
  assert.equal(cookieValue("sid", "sid"), null);
});

Deno.test("queryValue: decoding, malformed escapes used raw, first match wins", () => {
  assert.equal(queryValue("/p?user=bob", "user"), "bob");
  assert.equal(queryValue("/p?a=1&user=b%C3%B6b&user=x", "user"), "böb");
  assert.equal(queryValue("/p?user=a+b", "user"), "a b");
  assert.equal(queryValue("/p?user=%E0%A4%A", "user"), "%E0%A4%A");
  assert.equal(queryValue("/p?user=100%", "user"), "100%");
  assert.equal(queryValue("/p?us%65r=x", "user"), "x");
  assert.equal(queryValue("/p?&&user=x&", "user"), "x");
  assert.equal(queryValue("/p?user&user=x", "user"), null);
  assert.equal(queryValue("/p?user=", "user"), null);
  assert.equal(queryValue("/p?other=1", "user"), null);
  assert.equal(queryValue("/p", "user"), null);
  assert.equal(queryValue("/p?x=1#user=frag", "user"), null);
  assert.equal(queryValue("/p?user=a=b", "user"), "a=b");
});

Deno.test("pathOnly: strips query and fragment", () => {
  assert.equal(pathOnly("/a/b?x=1"), "/a/b");
  assert.equal(pathOnly("/a#f"), "/a");
  assert.equal(pathOnly("?x"), "/");
  assert.equal(pathOnly(""), "/");
});

Deno.test("extractHashKey: header values are trimmed; empty means absent", () => {
  const src = parseHashKeySource("header:X-User");
  assert.equal(extractHashKey(src, request("/", { "X-User": "  u1 " })), "u1");
  assert.equal(extractHashKey(src, request("/", { "X-User": "  " })), null);
  assert.equal(extractHashKey(src, request("/")), null);
  assert.equal(extractHashKey(parseHashKeySource("path"), request("/a?b")), "/a");
});
