import assert from "node:assert/strict";
import { forwardedFor, rateLimitAddress, trustedPeers } from "./client_address.ts";

Deno.test("trustedPeers: IPv4, IPv6, mapped IPv4 and bare hosts match their networks", () => {
  const trusted = trustedPeers(["10.0.0.0/8", "192.168.1.7", "fd00::/8", "::1"]);
  assert.ok(trusted("10.200.3.4"));
  assert.ok(!trusted("11.0.0.1"));
  assert.ok(trusted("192.168.1.7"));
  assert.ok(!trusted("192.168.1.8"));
  assert.ok(trusted("fd12:3456::1"));
  assert.ok(trusted("::ffff:10.1.2.3")); // mapped IPv4
  assert.ok(!trusted("fe80::1"));
  assert.ok(!trusted("not-an-ip"));
  assert.ok(trustedPeers(["0.0.0.0/0"])("1.2.3.4"));
  assert.throws(() => trustedPeers(["10.0.0.0/33"]), TypeError);
});

Deno.test("rateLimitAddress: a bracketed IPv6 peer with a port is matched as its address", () => {
  const trusted = trustedPeers(["::1"]);
  const xff = new Headers({ "x-forwarded-for": "203.0.113.9" });
  assert.equal(rateLimitAddress("[::1]:443", xff, trusted), "203.0.113.9");
});

Deno.test("forwardedFor: RFC 7239 elements, quoted IPv6 with port", () => {
  assert.deepEqual(
    forwardedFor('for=192.0.2.60;proto=http;by=203.0.113.43, For="[2001:db8:cafe::17]:4711"'),
    ["192.0.2.60", "[2001:db8:cafe::17]:4711"],
  );
});

Deno.test("rateLimitAddress: forwarded client only behind a trusted peer", () => {
  const trusted = trustedPeers(["127.0.0.0/8", "10.0.0.0/8"]);
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
  assert.equal(rateLimitAddress("127.0.0.1", xff, trustedPeers([])), "127.0.0.1");
});
