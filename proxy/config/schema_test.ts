import assert from "node:assert/strict";
import {
  ConfigSchema,
  isBindAddress,
  isRouteHost,
  parseHashKey,
  parseHostPort,
  toStandardLogLevel,
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

Deno.test("parseHashKey: the four key forms", () => {
  assert.deepEqual(parseHashKey("path"), { source: "path" });
  assert.deepEqual(parseHashKey("header:X-User-Id"), { source: "header", name: "x-user-id" });
  assert.deepEqual(parseHashKey("cookie:Session"), { source: "cookie", name: "Session" });
  assert.deepEqual(parseHashKey("query:user"), { source: "query", name: "user" });
  for (const bad of ["", "ip", "header:", "header:a b", "body:x", "Path", "path:x"]) {
    assert.equal(parseHashKey(bad), null, bad);
  }
});

Deno.test("toStandardLogLevel: spec aliases, standard names, any case", () => {
  assert.equal(toStandardLogLevel("whisper"), "trace");
  assert.equal(toStandardLogLevel("Haunt"), "debug");
  assert.equal(toStandardLogLevel("ghost"), "info");
  assert.equal(toStandardLogLevel("SPOOKY"), "info");
  assert.equal(toStandardLogLevel("scream"), "warning");
  assert.equal(toStandardLogLevel("warn"), "warning");
  assert.equal(toStandardLogLevel("poltergeist"), "error");
  assert.equal(toStandardLogLevel("silence"), "off");
  assert.equal(toStandardLogLevel("OFF"), "off");
  assert.equal(toStandardLogLevel("loud"), null);
  assert.equal(toStandardLogLevel("constructor"), null);
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
