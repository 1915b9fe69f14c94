import assert from "node:assert/strict";
import {
  addressBytes,
  forwardedFor,
  inCidrs,
  parseCidr,
  parseCidrs,
  rateLimitAddress,
} from "./client_address.ts";

Deno.test("parseCidr / inCidrs: IPv4, IPv6, mapped IPv4, bare hosts; junk refused", () => {
  const cidrs = parseCidrs(["10.0.0.0/8", "192.168.1.7", "fd00::/8", "::1"]);
  assert.ok(inCidrs("10.200.3.4", cidrs));
  assert.ok(!inCidrs("11.0.0.1", cidrs));
  assert.ok(inCidrs("192.168.1.7", cidrs));
  assert.ok(!inCidrs("192.168.1.8", cidrs));
  assert.ok(inCidrs("fd12:3456::1", cidrs));
  assert.ok(inCidrs("::ffff:10.1.2.3", cidrs)); // mapped IPv4
  assert.ok(inCidrs("[::1]:443", cidrs));
  assert.ok(!inCidrs("fe80::1", cidrs));
  assert.ok(!inCidrs("not-an-ip", cidrs));
  assert.ok(inCidrs("1.2.3.4", [parseCidr("0.0.0.0/0")]));
  for (const bad of ["10.0.0.0/33", "1.2.3", "::1/129", "x/8", "10.0.0.0/8/1", "1.2.3.256"]) {
    assert.throws(() => parseCidr(bad), Error, bad);
  }
  assert.deepEqual([...addressBytes("1.2.3.4:80")!], [1, 2, 3, 4]);
  assert.equal(addressBytes("2001:db8::1")!.length, 16);
});

Deno.test("forwardedFor: RFC 7239 elements, quoted IPv6 with port", () => {
  assert.deepEqual(
    forwardedFor('for=192.0.2.60;proto=http;by=203.0.113.43, For="[2001:db8:cafe::17]:4711"'),
    ["192.0.2.60", "[2001:db8:cafe::17]:4711"],
  );
});

Deno.test("rateLimitAddress: forwarded client only behind a trusted peer", () => {
  const trusted = parseCidrs(["127.0.0.0/8", "10.0.0.0/8"]);
  const h = (init: Record<string, string>) => new Headers(init);
  const xff = h({ "x-forwarded-for": "6.6.6.6, 203.0.113.9, 10.1.1.1" });
  assert.equal(rateLimitAddress("127.0.0.1", xff, trusted), "203.0.113.9");
  assert.equal(rateLimitAddress("198.51.100.1", xff, trusted), "198.51.100.1");
  assert.equal(rateLimitAddress("127.0.0.1", h({}), trusted), "127.0.0.1");
  // Forwarded wins over X-Forwarded-For; brackets and ports are dropped.
  const both = h({ forwarded: 'for="[2001:db8::5]:99"', "x-forwarded-for": "203.0.113.9" });
  assert.equal(rateLimitAddress("10.0.0.2", both, trusted), "2001:db8::5");
  // Every hop trusted: the leftmost; a hop that is no address: the peer.
  assert.equal(
    rateLimitAddress("127.0.0.1", h({ "x-forwarded-for": "10.0.0.5, 127.0.0.2" }), trusted),
    "10.0.0.5",
  );
  assert.equal(
    rateLimitAddress("127.0.0.1", h({ forwarded: "for=_hidden" }), trusted),
    "127.0.0.1",
  );
  assert.equal(rateLimitAddress(undefined, xff, trusted), undefined);
  assert.equal(rateLimitAddress("127.0.0.1", xff, []), "127.0.0.1");
});
