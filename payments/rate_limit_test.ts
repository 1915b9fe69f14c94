import assert from "node:assert/strict";
import { clientKey, RateLimiter } from "./rate_limit.ts";

Deno.test("RateLimiter: a burst, then one request per interval; Retry-After in whole seconds", () => {
  let now = 0;
  const limit = new RateLimiter({ perMinute: 30, burst: 3, now: () => now });
  assert.deepEqual([limit.take("a"), limit.take("a"), limit.take("a")], [0, 0, 0]);
  assert.equal(limit.take("a"), 2); // one every 2 s
  now += 1000;
  assert.equal(limit.take("a"), 1);
  now += 1000;
  assert.equal(limit.take("a"), 0);
  assert.equal(limit.take("b"), 0); // per key
});

Deno.test("RateLimiter: remembers at most maxClients keys, the least recently used go first", () => {
  const limit = new RateLimiter({ perMinute: 1, burst: 1, maxClients: 2, now: () => 0 });
  limit.take("a");
  limit.take("b");
  assert.ok(limit.take("a") > 0); // a is now the most recent
  limit.take("c"); // forgets b
  assert.equal(limit.take("b"), 0); // forgotten, so a fresh bucket; forgets a
  assert.ok(limit.take("c") > 0);
  assert.equal(limit.take("a"), 0);
});

Deno.test("clientKey: IPv4 as is, IPv4-mapped IPv6 as IPv4, IPv6 by its /64", () => {
  assert.equal(clientKey("192.0.2.7"), "192.0.2.7");
  assert.equal(clientKey("::ffff:192.0.2.7"), "192.0.2.7");
  assert.equal(clientKey("2001:db8:1:2::10"), "2001:db8:1:2::/64");
  assert.equal(clientKey("2001:0db8:0001:0002:aaaa:bbbb:cccc:dddd"), "2001:db8:1:2::/64");
  assert.equal(clientKey("2001:db8::1"), "2001:db8:0:0::/64");
  assert.equal(clientKey("[::1]"), "0:0:0:0::/64");
  assert.equal(clientKey("fe80::1%eth0"), "fe80:0:0:0::/64");
  assert.equal(clientKey(undefined), "unknown");
});
