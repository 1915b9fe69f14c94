/**
 * #30.5, #30.6: `dns`, a pool's `dns_refresh_ms` and `admin.ready`: the
 * defaults, and each problem with its key path and line.
 */
import assert from "node:assert/strict";
import { config, POOL_API_HEAD, problems } from "./_test_util.ts";

/** A valid configuration; `pool` is a line of pool `api` (line 8), `rest` top-level lines from line 10. */
function withKeys(pool: string, ...rest: string[]): string {
  return [
    ...POOL_API_HEAD, // 1-7
    `    ${pool}`, // 8
    "    backends: [{id: a, address: api.internal:8081}]", // 9
    ...rest, // 10 and on
    "",
  ].join("\n");
}

Deno.test("#30.5, #30.6: dns, dns_refresh_ms and admin.ready: defaults, and a host name as address", () => {
  const c = config(withKeys("request_timeout_ms: 1000", "admin: {port: 0}"));
  assert.deepEqual(c.dns, { servers: [], timeout_ms: 5000 });
  assert.equal(c.upstream.api.dns_refresh_ms, 30_000);
  assert.equal(c.upstream.api.backends[0].address, "api.internal:8081");
  assert.deepEqual(c.admin?.ready, { require: "all_pools" });
  const set = config(
    withKeys(
      "dns_refresh_ms: 500",
      'dns: {servers: [10.0.0.2, "10.0.0.3:5353", "fd00::53", "[fd00::54]:53"], timeout_ms: 200}',
      "admin: {port: 0, ready: {require: any_pool}}",
    ),
  );
  assert.deepEqual(set.dns.servers, ["10.0.0.2", "10.0.0.3:5353", "fd00::53", "[fd00::54]:53"]);
  assert.equal(set.upstream.api.dns_refresh_ms, 500);
  assert.equal(set.admin?.ready.require, "any_pool");
});

/** [what, pool line, top-level lines, the problem's path, its line, a message part]. */
const REFUSED: Array<[string, string, string[], string, number, RegExp]> = [
  ["a refresh below 100 ms", "dns_refresh_ms: 50", [], "upstream.api.dns_refresh_ms", 8, /100 to/],
  ["a fractional refresh", "dns_refresh_ms: 1.5", [], "upstream.api.dns_refresh_ms", 8, /integer/],
  [
    "a name server given by name",
    "request_timeout_ms: 1000",
    ["dns:", "  servers: [ns.internal]"],
    "dns.servers[0]",
    11,
    /IP address with an optional port/,
  ],
  [
    "an IPv6 name server with a port, without brackets",
    "request_timeout_ms: 1000",
    ["dns:", '  servers: ["fd00::53:53", "10.0.0.1:99999"]'],
    "dns.servers[1]",
    11,
    /IP address with an optional port/,
  ],
  [
    "a lookup timeout of 0",
    "request_timeout_ms: 1000",
    ["dns: {timeout_ms: 0}"],
    "dns.timeout_ms",
    10,
    /100 to 60000/,
  ],
  [
    "an unknown dns key",
    "request_timeout_ms: 1000",
    ["dns: {refresh_ms: 1000}"],
    "dns.refresh_ms",
    10,
    /unknown key/,
  ],
  [
    "an unknown readiness requirement",
    "request_timeout_ms: 1000",
    ["admin: {port: 0, ready: {require: every_pool}}"],
    "admin.ready.require",
    10,
    /all_pools, any_pool/,
  ],
];

for (const [what, pool, rest, path, line, message] of REFUSED) {
  Deno.test(`#30.5, #30.6: ${what} is refused with its key and line`, () => {
    const found = problems(withKeys(pool, ...rest));
    const p = found.find((x) => x.path === path);
    assert.ok(p, JSON.stringify(found));
    assert.equal(p.line, line, JSON.stringify(p));
    assert.match(p.message, message);
  });
}
