/**
 * #30.5: the system lookup (`node:dns`'s Resolver) against a DNS server on
 * loopback that the test controls: A and AAAA with their TTL, a name without
 * records, and a server that never answers (bounded by the timeout).
 */
import assert from "node:assert/strict";
import { startDnsServer } from "../../tests/support/dns_server.ts";
import { systemDnsLookup } from "./lookup.ts";

Deno.test("#30.5: systemDnsLookup: addresses with the shortest TTL, 'none' without records, 'error' on silence", async () => {
  const dns = startDnsServer();
  try {
    const lookup = systemDnsLookup();
    const opts = { servers: [dns.address], timeoutMs: 1500 };
    dns.set("api.test", { a: ["127.0.0.2", "127.0.0.3"], aaaa: ["::1"], ttl: 7 });
    const both = await lookup("api.test", opts);
    assert.deepEqual(both.v4, {
      kind: "addresses",
      addresses: ["127.0.0.2", "127.0.0.3"],
      ttlSeconds: 7,
    });
    assert.deepEqual(both.v6, { kind: "addresses", addresses: ["::1"], ttlSeconds: 7 });
    dns.set("v4only.test", { a: ["127.0.0.4"], ttl: 0 });
    const v4only = await lookup("v4only.test", opts);
    assert.equal(v4only.v4.kind, "addresses");
    assert.equal(v4only.v6.kind, "none");
    const unknown = await lookup("nowhere.test", opts);
    assert.equal(unknown.v4.kind, "none");
    assert.equal(unknown.v6.kind, "none");
    dns.mode("silent");
    const t0 = performance.now();
    const silent = await lookup("api.test", opts);
    const took = performance.now() - t0;
    assert.equal(silent.v4.kind, "error");
    assert.equal(silent.v6.kind, "error");
    assert.ok(took < 10_000, `bounded by the timeout (took ${took} ms)`);
    assert.ok(dns.questions.includes("api.test AAAA"), dns.questions.join(", "));
  } finally {
    dns.close();
  }
});
