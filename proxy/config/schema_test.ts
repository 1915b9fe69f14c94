import assert from "node:assert/strict";
import { LEVEL_NAMES } from "../../shared/logging.ts";
import { createBalancer, type LoadBalancingConfig } from "../balancer/mod.ts";
import { formatHashKey, parseHashKey } from "../balancer/hash_key.ts";
import {
  ConfigSchema,
  isBindAddress,
  isLoopbackAddress,
  isRouteHost,
  LoadBalancingConfigSchema,
  LogConfigSchema,
  parseHostPort,
} from "./schema.ts";

const HOST_PORT: [string, { host: string; port: number } | null][] = [
  ["127.0.0.1:8081", { host: "127.0.0.1", port: 8081 }],
  ["localhost:1", { host: "localhost", port: 1 }],
  ["api.internal:65535", { host: "api.internal", port: 65535 }],
  ["[::1]:8080", { host: "::1", port: 8080 }],
  ["[2001:db8::5]:443", { host: "2001:db8::5", port: 443 }],
  ["::1:8080", null],
  ["[::1]", null],
  ["[::1]8080", null],
  ["[nothex]:80", null],
  ["127.0.0.1", null],
  ["127.0.0.1:0", null],
  ["127.0.0.1:65536", null],
  ["127.0.0.1:+80", null],
  ["127.0.0.1:80 ", null],
  ["256.0.0.1:80", null],
  ["01.2.3.4:80", null],
  [":80", null],
  ["http://a:80", null],
  ["bad_host-:80", null],
];

for (const [input, expected] of HOST_PORT) {
  Deno.test(`parseHostPort(${JSON.stringify(input)})`, () => {
    assert.deepEqual(parseHostPort(input), expected);
  });
}

Deno.test("isBindAddress: IPv4, unbracketed IPv6 and hostnames", () => {
  for (const ok of ["0.0.0.0", "127.0.0.1", "::", "::1", "fe80::1", "localhost", "edge-1.local"]) {
    assert.ok(isBindAddress(ok), ok);
  }
  for (const bad of ["", "[::]", "1.2.3", "1.2.3.4.5", "999.1.1.1", "host:80", "a b", "-x"]) {
    assert.ok(!isBindAddress(bad), bad);
  }
});

Deno.test("isRouteHost: hostnames, leading wildcards, optional port", () => {
  for (
    const ok of [
      "example.com",
      "*.example.com",
      "*.example.com:8443",
      "localhost:9889",
      "10.0.0.1",
      "[::1]:443",
    ]
  ) {
    assert.ok(isRouteHost(ok), ok);
  }
  for (
    const bad of ["", "*", "*.", "a.*.com", "ex ample.com", "example.com:", "example.com:0", "[::1"]
  ) {
    assert.ok(!isRouteHost(bad), bad);
  }
});

Deno.test("load_balancing.key: the schema accepts exactly what the balancer parses", () => {
  const keys = ["path", "header:X-User-Id", "cookie:Session", "query:user", "", "ip", "header:"];
  for (const key of [...keys, "header:a b", "body:x", "Path", "path:x", " path", "Cookie:sid"]) {
    const lb = { type: "consistent-hash", key };
    const parsed = parseHashKey(key);
    const result = LoadBalancingConfigSchema.safeParse(lb);
    assert.equal(result.success, parsed !== null, key);
    if (result.success && parsed !== null) {
      assert.deepEqual(result.data, { type: "consistent-hash", key: formatHashKey(parsed) });
      assert.doesNotThrow(() => createBalancer(result.data, []), key);
    } else assert.throws(() => createBalancer(lb as LoadBalancingConfig, []), key);
  }
});

Deno.test("log.level: the schema accepts exactly the logging table's names, in any case", () => {
  const level = (name: string) => LogConfigSchema.safeParse({ level: name });
  for (const name of Object.keys(LEVEL_NAMES)) {
    assert.equal(level(name.toUpperCase()).data?.level, name);
  }
  for (const name of ["loud", "constructor", "toString", ""]) {
    assert.equal(level(name).success, false, name);
  }
});

Deno.test("log.file.path: the logging setup's default", () => {
  const log = LogConfigSchema.parse({});
  assert.equal(log.file.path, "/var/log/{service}/{service}.log");
});

Deno.test("ConfigSchema alone applies defaults (no YAML, no files)", () => {
  const config = ConfigSchema.parse({
    version: 1,
    listen: { protocol: "http3", tls: { cert: "c", key: "k" } },
    upstream: { api: { route: { host: "a.example" }, backends: [{ id: "a", address: "a:1" }] } },
  });
  assert.equal(config.listen.port, 9889);
  assert.deepEqual(config.load_balancing, { type: "round-robin" });
  assert.equal(config.log.level, "info");
});

Deno.test("#32.1: isLoopbackAddress counts an IPv4-mapped address as loopback only in 127.0.0.0/8", () => {
  // Fails if every IPv4-mapped address (::ffff:a.b.c.d) counts as loopback (mutant:
  // `return mapped !== null;`), which would let an admin listener on ::ffff:10.1.2.3 start
  // without a token, reachable from the network.
  const loopback = [
    "127.0.0.1",
    "127.255.255.254",
    "::1",
    "0:0:0:0:0:0:0:1",
    "localhost",
    "LOCALHOST.",
    "::ffff:127.0.0.1",
    "::FFFF:127.1.2.3",
    "::ffff:7f00:1",
    "0:0:0:0:0:ffff:7f00:0001",
  ];
  const reachable = [
    "0.0.0.0",
    "10.1.2.3",
    "128.0.0.1",
    "::",
    "::2",
    "::ffff:10.1.2.3",
    "::ffff:0.0.0.0",
    "::ffff:126.255.255.255",
    "::ffff:128.0.0.1",
    "::ffff:a01:203",
    "::127.0.0.1", // IPv4-compatible (deprecated), not mapped: not loopback
    "64:ff9b::127.0.0.1", // NAT64: routed through a translator
    "admin.internal",
  ];
  for (const a of loopback) assert.ok(isLoopbackAddress(a), `${a} is loopback`);
  for (const a of reachable) assert.ok(!isLoopbackAddress(a), `${a} is not loopback`);
});
