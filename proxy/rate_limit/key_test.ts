import assert from "node:assert/strict";
import type { IncomingRequest } from "../server/types.ts";
import { bearerKey, compileKey, GROUP_CACHE_SIZE, MISSING_KEY } from "./key.ts";

function request(ip: string, fields: Array<[string, string]> = []): IncomingRequest {
  return {
    head: { method: "GET", scheme: "https", authority: "a.test", path: "/", fields },
    body: null,
    remote: { hostname: ip, port: 4433 },
    signal: new AbortController().signal,
  } as unknown as IncomingRequest;
}

const prefix = { v4: 32, v6: 64 };
const nobody = () => false;

Deno.test("#30.1: key client: the address group, as admission groups addresses", () => {
  const keyOf = compileKey("client", { trusted: nobody, prefix });
  assert.equal(keyOf(request("2001:db8::1")), keyOf(request("2001:db8::ffff")), "one /64");
  assert.notEqual(keyOf(request("2001:db8:0:1::1")), keyOf(request("2001:db8::1")));
  assert.equal(keyOf(request("::ffff:192.0.2.7")), keyOf(request("192.0.2.7")));
  assert.notEqual(keyOf(request("192.0.2.7")), keyOf(request("192.0.2.8")));
});

Deno.test("#30.1: key client: x-forwarded-for is believed from a trusted proxy only", () => {
  const trusted = (ip: string) => ip === "10.0.0.1";
  const keyOf = compileKey("client", { trusted, prefix });
  const viaProxy = request("10.0.0.1", [["x-forwarded-for", "198.51.100.9, 192.0.2.7"]]);
  assert.equal(keyOf(viaProxy), keyOf(request("192.0.2.7")), "the hop the proxy appended");
  const forged = request("192.0.2.50", [["x-forwarded-for", "192.0.2.7"]]);
  assert.equal(keyOf(forged), keyOf(request("192.0.2.50")), "an untrusted client's claim ignored");
  assert.equal(keyOf(request("10.0.0.1")), keyOf(request("10.0.0.1", [])), "no field: the peer");
});

Deno.test("#30.1: key header:<name>: the value; without it one shared key", () => {
  const keyOf = compileKey("header:x-api-key", { trusted: nobody, prefix });
  assert.equal(keyOf(request("192.0.2.1", [["x-api-key", "k1"]])), "k1");
  assert.equal(keyOf(request("192.0.2.1")), MISSING_KEY);
});

Deno.test("#30.1: key bearer: a digest of the token, never the token", () => {
  const keyOf = compileKey("bearer", { trusted: nobody, prefix });
  const token = "s3cr3t-token-value";
  const key = keyOf(request("192.0.2.1", [["authorization", `Bearer ${token}`]]));
  assert.ok(!key.includes(token), key);
  assert.match(key, /^b:[A-Za-z0-9_-]{43}$/);
  assert.equal(key, bearerKey(`bearer ${token}`), "the scheme is case-insensitive");
  assert.notEqual(key, bearerKey("Bearer other"));
  assert.equal(bearerKey("Basic dXNlcjpwYXNz"), MISSING_KEY);
  assert.equal(bearerKey(undefined), MISSING_KEY);
  assert.equal(bearerKey("Bearer "), MISSING_KEY);
});

Deno.test("#30.1: key route: one key for the pool", () => {
  const keyOf = compileKey("route", { trusted: nobody, prefix });
  assert.equal(keyOf(request("192.0.2.1")), keyOf(request("2001:db8::1")));
});

Deno.test("#30.1: key client: a flood of addresses cannot grow the address-group cache past its cap", () => {
  const groupCache = new Map<string, string>();
  const keyOf = compileKey("client", { trusted: nobody, prefix, groupCache });
  for (let i = 0; i < 3 * GROUP_CACHE_SIZE; i++) {
    const ip = `2001:db8:${(i >> 16).toString(16)}:${(i & 0xffff).toString(16)}::1`;
    const key = keyOf(request(ip));
    assert.ok(groupCache.size <= GROUP_CACHE_SIZE, `${groupCache.size} after ${i}`);
    if (i === 3 * GROUP_CACHE_SIZE - 1) assert.equal(key, keyOf(request(ip.replace("::1", "::2"))));
  }
});
