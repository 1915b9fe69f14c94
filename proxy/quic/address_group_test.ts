import assert from "node:assert/strict";
import { addressGroup, parseIp } from "./address_group.ts";

const DEFAULT = { v4: 32, v6: 64 };

Deno.test("parseIp: IPv4, IPv6 with ::, embedded IPv4, zones; rejects non-addresses", () => {
  assert.deepEqual([...parseIp("192.0.2.7")!], [192, 0, 2, 7]);
  assert.deepEqual([...parseIp("::1")!], [...new Array(15).fill(0), 1]);
  assert.deepEqual([...parseIp("2001:db8::")!].slice(0, 4), [0x20, 0x01, 0x0d, 0xb8]);
  assert.deepEqual([...parseIp("fe80::1%eth0")!].slice(0, 2), [0xfe, 0x80]);
  assert.deepEqual([...parseIp("64:ff9b::192.0.2.1")!].slice(12), [192, 0, 2, 1]);
  for (const bad of ["", "1.2.3", "1.2.3.256", "1::2::3", "1:2:3:4:5:6:7:8:9", "g::1", "host"]) {
    assert.equal(parseIp(bad), undefined, bad);
  }
});

Deno.test("RFC 4291 §2.5.4: addresses of one /64 are one group by default; other /64s are not", () => {
  const a = addressGroup("2001:db8:1:2::1", DEFAULT);
  assert.equal(a, addressGroup("2001:db8:1:2:ffff:ffff:ffff:ffff", DEFAULT));
  assert.equal(a, addressGroup("2001:DB8:1:2:aaaa::", DEFAULT));
  assert.notEqual(a, addressGroup("2001:db8:1:3::1", DEFAULT));
  assert.equal(a, "6:2001:db8:1:2:0:0:0:0/64");
});

Deno.test("IPv4 counts exact addresses by default; a shorter prefix groups a network", () => {
  assert.notEqual(addressGroup("192.0.2.1", DEFAULT), addressGroup("192.0.2.2", DEFAULT));
  assert.equal(addressGroup("192.0.2.1", { v4: 24, v6: 56 }), "4:192.0.2.0/24");
  assert.equal(addressGroup("192.0.2.255", { v4: 24, v6: 56 }), "4:192.0.2.0/24");
  assert.equal(addressGroup("10.1.2.3", { v4: 13, v6: 56 }), "4:10.0.0.0/13");
  assert.equal(
    addressGroup("2001:db8:0:1ff::1", { v4: 24, v6: 56 }),
    "6:2001:db8:0:100:0:0:0:0/56",
  );
});

Deno.test("an IPv4-mapped IPv6 peer (dual-stack socket) groups with its IPv4 address", () => {
  assert.equal(addressGroup("::ffff:192.0.2.7", DEFAULT), addressGroup("192.0.2.7", DEFAULT));
  assert.equal(addressGroup("::ffff:c000:207", DEFAULT), "4:192.0.2.7/32");
});

Deno.test("prefix lengths are clamped to the family; a non-address is its own group", () => {
  assert.equal(addressGroup("192.0.2.7", { v4: 99, v6: 0 }), "4:192.0.2.7/32");
  assert.equal(addressGroup("2001:db8::1", { v4: 32, v6: 0 }), "6:0:0:0:0:0:0:0:0/0");
  assert.equal(addressGroup("localhost", DEFAULT), "?:localhost");
});
