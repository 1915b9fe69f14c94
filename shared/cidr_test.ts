import assert from "node:assert/strict";
import { cidrMatcher, parseCidr } from "./cidr.ts";

Deno.test("cidr: IPv4 and IPv6 networks and bare addresses parse", () => {
  assert.deepEqual(parseCidr("10.0.0.0/8"), { address: "10.0.0.0", prefix: 8, family: "ipv4" });
  assert.deepEqual(parseCidr("127.0.0.1"), { address: "127.0.0.1", prefix: 32, family: "ipv4" });
  assert.deepEqual(parseCidr("fd00::/8"), { address: "fd00::", prefix: 8, family: "ipv6" });
  assert.deepEqual(parseCidr("::1"), { address: "::1", prefix: 128, family: "ipv6" });
  assert.deepEqual(parseCidr("0.0.0.0/0"), { address: "0.0.0.0", prefix: 0, family: "ipv4" });
});

Deno.test("cidr: what is not a network says why", () => {
  for (
    const [text, why] of [
      ["10.0.0.0/33", /above 32 for IPv4/],
      ["::/129", /above 128 for IPv6/],
      ["10.0.0/8", /not an IPv4 or IPv6 address/],
      ["256.0.0.1", /not an IPv4 or IPv6 address/],
      ["example.com", /not an IPv4 or IPv6 address/],
      ["", /not an IPv4 or IPv6 address/],
      ["10.0.0.0/", /not a number of bits/],
      ["10.0.0.0/+8", /not a number of bits/],
      ["10.0.0.0/8/8", /not a number of bits/],
      ["fe80::1%eth0", /zone|not an IPv4/],
    ] as const
  ) {
    const r = parseCidr(text);
    assert.equal(typeof r, "string", text);
    assert.match(r as string, why, text);
  }
});

Deno.test("cidr: matching, IPv4-mapped IPv6 peers included; an empty list matches nothing", () => {
  const m = cidrMatcher(["10.0.0.0/8", "192.0.2.7", "fd00::/8"]);
  assert.equal(m("10.200.0.1"), true);
  assert.equal(m("11.0.0.1"), false);
  assert.equal(m("192.0.2.7"), true);
  assert.equal(m("192.0.2.8"), false);
  assert.equal(m("fd12::1"), true);
  assert.equal(m("fe80::1"), false);
  assert.equal(m("::ffff:10.0.0.1"), true);
  assert.equal(m("not an address"), false);
  const none = cidrMatcher([]);
  assert.equal(none("10.0.0.1"), false);
  assert.throws(() => cidrMatcher(["10.0.0.0/40"]), /above 32/);
});
