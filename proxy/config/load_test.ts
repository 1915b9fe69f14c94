import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import "reflect-metadata";
import * as x509 from "@peculiar/x509";
import {
  type ConfigProblem,
  formatProblem,
  loadConfig,
  type LoadResult,
  parseConfigText,
} from "./load.ts";
import { readProblem } from "./_files.ts";

/** A minimal valid configuration; the comments give the line numbers the rows rely on. */
const BASE = [
  "version: 1", // 1
  "listen:", // 2
  "  protocol: http3", // 3
  "  tls:", // 4
  "    cert: cert.pem", // 5
  "    key: key.pem", // 6
  "upstream:", // 7
  "  api:", // 8
  "    route:", // 9
  "      path_prefix: /", // 10
  "    backends:", // 11
  "      - id: a", // 12
  "        address: 127.0.0.1:8081", // 13
  "",
].join("\n");

/** BASE with `from` replaced by `to` (which must occur exactly once). */
function edit(from: string, to: string, text = BASE): string {
  assert.equal(text.split(from).length, 2, `"${from}" must occur once`);
  return text.replace(from, to);
}

/** BASE with `lines` inserted after line `after` (1-based). */
function insertAfter(after: number, ...lines: string[]): string {
  const all = BASE.split("\n");
  all.splice(after, 0, ...lines);
  return all.join("\n");
}

/** A health check block for backend `a` (lines 14 and 15 and on). */
function withHealthCheck(...fields: string[]): string {
  return insertAfter(13, "        health_check:", ...fields.map((f) => `          ${f}`));
}

/** BASE plus a second pool `web` (lines 14-19), with the given backend id and route. */
function withSecondPool(id: string, route = "path_prefix: /web"): string {
  return BASE +
    [
      "  web:", // 14
      "    route:", // 15
      `      ${route}`, // 16
      "    backends:", // 17
      `      - id: ${id}`, // 18
      "        address: 127.0.0.1:8082", // 19
      "",
    ].join("\n");
}

function parse(text: string): LoadResult {
  return parseConfigText(text, { checkFiles: false });
}

function problemsOf(result: LoadResult): ConfigProblem[] {
  assert.equal(result.ok, false, "expected the configuration to be rejected");
  assert.ok(
    !result.ok && result.kind === "invalid",
    `expected kind "invalid": ${JSON.stringify(result)}`,
  );
  return result.problems;
}

function configOf(result: LoadResult) {
  assert.ok(result.ok, `expected success: ${JSON.stringify(result)}`);
  return result.config;
}

interface InvalidRow {
  rule: string;
  yaml: string;
  path: string;
  line: number;
  message: string;
}

const INVALID: InvalidRow[] = [
  // version
  {
    rule: "version must be 1",
    yaml: edit("version: 1", "version: 2"),
    path: "version",
    line: 1,
    message: "must be 1",
  },
  {
    rule: "version must be the number 1",
    yaml: edit("version: 1", 'version: "1"'),
    path: "version",
    line: 1,
    message: "must be 1",
  },
  {
    rule: "version is required (root line)",
    yaml: edit("version: 1\n", "# no version\n"),
    path: "version",
    line: 2,
    message: "is required",
  },
  // listen
  {
    rule: "listen is required",
    yaml: BASE.slice(BASE.indexOf("upstream:")),
    path: "listen",
    line: 1,
    message: "is required",
  },
  {
    rule: "listen must be a mapping",
    yaml: edit(BASE.slice(BASE.indexOf("listen:"), BASE.indexOf("upstream:")), "listen: 5\n"),
    path: "listen",
    line: 2,
    message: "must be a mapping, not number 5",
  },
  {
    rule: "listen.protocol must be http3",
    yaml: edit("protocol: http3", "protocol: http2"),
    path: "listen.protocol",
    line: 3,
    message: 'must be "http3"',
  },
  {
    rule: "listen.protocol is required (parent line)",
    yaml: edit("  protocol: http3\n", ""),
    path: "listen.protocol",
    line: 2,
    message: "is required",
  },
  {
    rule: "listen.port >= 0",
    yaml: insertAfter(3, "  port: -1"),
    path: "listen.port",
    line: 4,
    message: "integer port from 1 to 65535 (0 picks a free port)",
  },
  {
    rule: "listen.port <= 65535",
    yaml: insertAfter(3, "  port: 65536"),
    path: "listen.port",
    line: 4,
    message: "integer port from 1 to 65535",
  },
  {
    rule: "listen.port is an integer",
    yaml: insertAfter(3, "  port: 80.5"),
    path: "listen.port",
    line: 4,
    message: "integer port from 1 to 65535",
  },
  {
    rule: "listen.port is a number",
    yaml: insertAfter(3, '  port: "443"'),
    path: "listen.port",
    line: 4,
    message: 'must be a number, not the string "443"',
  },
  {
    rule: "listen.address IPv4 octets <= 255",
    yaml: insertAfter(3, "  address: 300.1.1.1"),
    path: "listen.address",
    line: 4,
    message: "must be a bind address",
  },
  {
    rule: "listen.address IPv6 without brackets",
    yaml: insertAfter(3, '  address: "[::]"'),
    path: "listen.address",
    line: 4,
    message: "must be a bind address",
  },
  {
    rule: "listen.address not host:port",
    yaml: insertAfter(3, "  address: localhost:9889"),
    path: "listen.address",
    line: 4,
    message: "must be a bind address",
  },
  {
    rule: "listen.max_streams > 0",
    yaml: insertAfter(3, "  max_streams: 0"),
    path: "listen.max_streams",
    line: 4,
    message: "positive integer",
  },
  {
    rule: "listen.idle_timeout_ms > 0",
    yaml: insertAfter(3, "  idle_timeout_ms: -5"),
    path: "listen.idle_timeout_ms",
    line: 4,
    message: "positive integer",
  },
  {
    rule: "listen.tls is required",
    yaml: edit("  tls:\n    cert: cert.pem\n    key: key.pem\n", ""),
    path: "listen.tls",
    line: 2,
    message: "is required",
  },
  {
    rule: "listen.tls.cert is required",
    yaml: edit("    cert: cert.pem\n", ""),
    path: "listen.tls.cert",
    line: 4,
    message: "is required",
  },
  {
    rule: "listen.tls.key must not be empty",
    yaml: edit("key: key.pem", 'key: ""'),
    path: "listen.tls.key",
    line: 6,
    message: "must not be empty",
  },
  {
    rule: "listen.tls.ca is rejected (fail closed)",
    yaml: insertAfter(6, "    ca: ca.pem"),
    path: "listen.tls.ca",
    line: 7,
    message: "cannot verify client certificates",
  },
  // upstream and routes
  {
    rule: "upstream is required",
    yaml: BASE.slice(0, BASE.indexOf("upstream:")),
    path: "upstream",
    line: 1,
    message: "is required",
  },
  {
    rule: "upstream needs a pool",
    yaml: BASE.slice(0, BASE.indexOf("upstream:")) + "upstream: {}\n",
    path: "upstream",
    line: 7,
    message: "needs at least one pool",
  },
  {
    rule: "route is required",
    yaml: edit("    route:\n      path_prefix: /\n", ""),
    path: "upstream.api.route",
    line: 8,
    message: "is required",
  },
  {
    rule: "route needs host or path_prefix",
    yaml: edit("    route:\n      path_prefix: /\n", "    route: {}\n"),
    path: "upstream.api.route",
    line: 9,
    message: "at least one of host and path_prefix",
  },
  {
    rule: "route.path_prefix starts with /",
    yaml: edit("path_prefix: /", "path_prefix: api"),
    path: "upstream.api.route.path_prefix",
    line: 10,
    message: 'must start with "/"',
  },
  {
    rule: "route.path_prefix has no query",
    yaml: edit("path_prefix: /", 'path_prefix: "/a?b"'),
    path: "upstream.api.route.path_prefix",
    line: 10,
    message: "without whitespace",
  },
  {
    rule: "route.host is a hostname",
    yaml: insertAfter(10, '      host: "bad host!"'),
    path: "upstream.api.route.host",
    line: 11,
    message: "must be a hostname",
  },
  {
    rule: "route.host wildcard only as a leading label",
    yaml: insertAfter(10, '      host: "api.*.com"'),
    path: "upstream.api.route.host",
    line: 11,
    message: "wildcard",
  },
  {
    rule: "route.host port in range",
    yaml: insertAfter(10, "      host: example.com:0"),
    path: "upstream.api.route.host",
    line: 11,
    message: "optional :port",
  },
  {
    rule: "no two pools with the same route",
    yaml: withSecondPool("b", "path_prefix: /"),
    path: "upstream.web.route",
    line: 15,
    message: 'same host and path_prefix as pool "api"',
  },
  // load balancing
  {
    rule: "load_balancing.type is one of three",
    yaml: insertAfter(10, "    load_balancing:", "      type: least-conn"),
    path: "upstream.api.load_balancing.type",
    line: 12,
    message: "must be one of random, round-robin, consistent-hash",
  },
  {
    rule: "load_balancing.type is required",
    yaml: insertAfter(10, "    load_balancing: { key: path }"),
    path: "upstream.api.load_balancing.type",
    line: 11,
    message: "is required",
  },
  {
    rule: "global load_balancing.type is checked",
    yaml: BASE + "load_balancing: { type: fastest }\n",
    path: "load_balancing.type",
    line: 14,
    message: "must be one of",
  },
  {
    rule: "load_balancing.key only with consistent-hash",
    yaml: insertAfter(10, "    load_balancing: { type: round-robin, key: path }"),
    path: "upstream.api.load_balancing.key",
    line: 11,
    message: "only used with type consistent-hash",
  },
  {
    rule: "load_balancing.key form",
    yaml: insertAfter(10, "    load_balancing: { type: consistent-hash, key: ip }"),
    path: "upstream.api.load_balancing.key",
    line: 11,
    message: "header:<name>, cookie:<name>, query:<name> or path",
  },
  {
    rule: "load_balancing.key needs a name",
    yaml: insertAfter(10, '    load_balancing: { type: consistent-hash, key: "header:" }'),
    path: "upstream.api.load_balancing.key",
    line: 11,
    message: "header:<name>",
  },
  // backends
  {
    rule: "backends is required",
    yaml: edit("    backends:\n      - id: a\n        address: 127.0.0.1:8081\n", ""),
    path: "upstream.api.backends",
    line: 8,
    message: "is required",
  },
  {
    rule: "backends is not empty",
    yaml: edit(
      "    backends:\n      - id: a\n        address: 127.0.0.1:8081\n",
      "    backends: []\n",
    ),
    path: "upstream.api.backends",
    line: 11,
    message: "at least one backend",
  },
  {
    rule: "backend.id is required (item line)",
    yaml: edit("      - id: a\n        address", "      - address"),
    path: "upstream.api.backends[0].id",
    line: 12,
    message: "is required",
  },
  {
    rule: "backend ids are unique across pools",
    yaml: withSecondPool("a"),
    path: "upstream.web.backends[0].id",
    line: 18,
    message: 'duplicate backend id "a" (already used by upstream.api.backends[0])',
  },
  {
    rule: "backend.address needs a port",
    yaml: edit("address: 127.0.0.1:8081", "address: 127.0.0.1"),
    path: "upstream.api.backends[0].address",
    line: 13,
    message: "must be host:port",
  },
  {
    rule: "backend.address port in range",
    yaml: edit("address: 127.0.0.1:8081", "address: 127.0.0.1:70000"),
    path: "upstream.api.backends[0].address",
    line: 13,
    message: "port 1-65535",
  },
  {
    rule: "backend.address IPv6 in brackets",
    yaml: edit("address: 127.0.0.1:8081", 'address: "::1:8080"'),
    path: "upstream.api.backends[0].address",
    line: 13,
    message: "[::1]:8080",
  },
  {
    rule: "backend.address without scheme",
    yaml: edit("address: 127.0.0.1:8081", "address: http://b:80"),
    path: "upstream.api.backends[0].address",
    line: 13,
    message: "must be host:port",
  },
  {
    rule: "backend.weight >= 0",
    yaml: insertAfter(13, "        weight: -1"),
    path: "upstream.api.backends[0].weight",
    line: 14,
    message: "integer >= 0",
  },
  {
    rule: "backend.weight is an integer",
    yaml: insertAfter(13, "        weight: 1.5"),
    path: "upstream.api.backends[0].weight",
    line: 14,
    message: "integer >= 0",
  },
  {
    rule: "backend.protocol is one of h2, http1, auto",
    yaml: insertAfter(13, "        protocol: http2"),
    path: "upstream.api.backends[0].protocol",
    line: 14,
    message: "must be one of h2, http1, auto",
  },
  {
    rule: "#29.1: backend.protocol auto needs tls",
    yaml: insertAfter(13, "        protocol: auto"),
    path: "upstream.api.backends[0].protocol",
    line: 14,
    message: "auto needs tls",
  },
  {
    rule: "unknown key in a backend",
    yaml: insertAfter(13, "        wieght: 5"),
    path: "upstream.api.backends[0].wieght",
    line: 14,
    message: "unknown key",
  },
  {
    rule: "request_timeout_ms > 0",
    yaml: insertAfter(10, "    request_timeout_ms: 0"),
    path: "upstream.api.request_timeout_ms",
    line: 11,
    message: "positive integer",
  },
  {
    rule: "#35.2: connect_timeout_ms > 0",
    yaml: insertAfter(10, "    connect_timeout_ms: 0"),
    path: "upstream.api.connect_timeout_ms",
    line: 11,
    message: "positive integer",
  },
  {
    rule: "#35.2: connect_timeout_ms is an integer",
    yaml: insertAfter(10, "    connect_timeout_ms: 2.5"),
    path: "upstream.api.connect_timeout_ms",
    line: 11,
    message: "positive integer",
  },
  // health checks
  {
    rule: "health_check.path starts with /",
    yaml: withHealthCheck("path: health"),
    path: "upstream.api.backends[0].health_check.path",
    line: 15,
    message: 'must start with "/"',
  },
  {
    rule: "health_check.interval > 0",
    yaml: withHealthCheck("interval: 0"),
    path: "upstream.api.backends[0].health_check.interval",
    line: 15,
    message: "positive integer",
  },
  {
    rule: "health_check.timeout_ms > 0",
    yaml: withHealthCheck("timeout_ms: 0"),
    path: "upstream.api.backends[0].health_check.timeout_ms",
    line: 15,
    message: "positive integer",
  },
  {
    rule: "health_check.failure_threshold >= 1",
    yaml: withHealthCheck("failure_threshold: 0"),
    path: "upstream.api.backends[0].health_check.failure_threshold",
    line: 15,
    message: "positive integer",
  },
  {
    rule: "health_check.success_threshold >= 1",
    yaml: withHealthCheck("success_threshold: 0"),
    path: "upstream.api.backends[0].health_check.success_threshold",
    line: 15,
    message: "positive integer",
  },
  {
    rule: "health_check.cooldown_ms >= 0",
    yaml: withHealthCheck("cooldown_ms: -1"),
    path: "upstream.api.backends[0].health_check.cooldown_ms",
    line: 15,
    message: "integer >= 0",
  },
  {
    rule: "health_check.method is uppercase",
    yaml: withHealthCheck("method: get"),
    path: "upstream.api.backends[0].health_check.method",
    line: 15,
    message: "uppercase HTTP method token",
  },
  {
    rule: "health_check.method is a token",
    yaml: withHealthCheck('method: "GE T"'),
    path: "upstream.api.backends[0].health_check.method",
    line: 15,
    message: "uppercase HTTP method token",
  },
  {
    rule: "health_check must be a mapping",
    yaml: insertAfter(13, "        health_check: yes"),
    path: "upstream.api.backends[0].health_check",
    line: 14,
    message: 'must be a mapping, not the string "yes"',
  },
  // log
  {
    rule: "log.level is a known name",
    yaml: BASE + "log:\n  level: loud\n",
    path: "log.level",
    line: 15,
    message: "must be one of whisper, haunt, ghost",
  },
  {
    rule: "log.file.enabled is a boolean",
    yaml: BASE + "log:\n  file:\n    enabled: yes\n",
    path: "log.file.enabled",
    line: 16,
    message: "must be true or false",
  },
  {
    rule: "log.file.path must not be empty",
    yaml: BASE + 'log:\n  file: { path: "" }\n',
    path: "log.file.path",
    line: 15,
    message: "must not be empty",
  },
  // additions
  {
    rule: "limits.max_header_list_size > 0",
    yaml: BASE + "limits:\n  max_header_list_size: 0\n",
    path: "limits.max_header_list_size",
    line: 15,
    message: "positive integer",
  },
  {
    rule: "limits.max_request_body_bytes >= 0",
    yaml: BASE + "limits:\n  max_request_body_bytes: -1\n",
    path: "limits.max_request_body_bytes",
    line: 15,
    message: "integer >= 0",
  },
  {
    rule: "limits.drain_timeout_ms >= 0",
    yaml: BASE + "limits:\n  drain_timeout_ms: 1.5\n",
    path: "limits.drain_timeout_ms",
    line: 15,
    message: "integer >= 0",
  },
  {
    rule: "unknown key in limits",
    yaml: BASE + "limits:\n  max_conections: 5\n",
    path: "limits.max_conections",
    line: 15,
    message: "unknown key",
  },
  {
    rule: "admin.port is required",
    yaml: BASE + "admin:\n  token: t\n",
    path: "admin.port",
    line: 14,
    message: "is required",
  },
  {
    rule: "admin.address is a bind address",
    yaml: BASE + "admin: { port: 9890, address: 'not an address' }\n",
    path: "admin.address",
    line: 14,
    message: "must be an IPv4 address",
  },
  {
    rule: "admin.token must not be empty",
    yaml: BASE + "admin: { port: 9890, token: '' }\n",
    path: "admin.token",
    line: 14,
    message: "must not be empty",
  },
  {
    rule: "admin on 0.0.0.0 needs a token (fails closed, as Envoy's admin)",
    yaml: BASE + "admin:\n  address: 0.0.0.0\n  port: 9902\n",
    path: "admin.token",
    line: 14,
    message: "is required when admin.address is not a loopback address",
  },
  {
    rule: "admin on :: needs a token",
    yaml: BASE + "admin: { address: '::', port: 9902 }\n",
    path: "admin.token",
    line: 14,
    message: "is required when admin.address is not a loopback address",
  },
  {
    rule: "admin on a routable address needs a token",
    yaml: BASE + "admin: { address: 10.1.2.3, port: 9902 }\n",
    path: "admin.token",
    line: 14,
    message: "is required when admin.address is not a loopback address",
  },
  {
    // #32.1: fails if isLoopbackAddress treats every IPv4-mapped address (::ffff:a.b.c.d) as
    // loopback (mutant: `return mapped !== null;`): that admin listener is reachable from the
    // network without a token.
    rule: "#32.1: admin on an IPv4-mapped routable address (::ffff:10.1.2.3) needs a token",
    yaml: BASE + "admin: { address: '::ffff:10.1.2.3', port: 9902 }\n",
    path: "admin.token",
    line: 14,
    message: "is required when admin.address is not a loopback address",
  },
  {
    rule: "admin on a host name other than localhost needs a token",
    yaml: BASE + "admin: { address: admin.internal, port: 9902 }\n",
    path: "admin.token",
    line: 14,
    message: "is required when admin.address is not a loopback address",
  },
  // unknown keys
  {
    rule: "unknown top-level key",
    yaml: BASE + "extra: 1\n",
    path: "extra",
    line: 14,
    message: "unknown key",
  },
  {
    rule: "unknown key in route (typo)",
    yaml: edit("path_prefix: /", "path_prefx: /"),
    path: "upstream.api.route.path_prefx",
    line: 10,
    message: "unknown key",
  },
];

for (const row of INVALID) {
  Deno.test(`config rule: ${row.rule}`, () => {
    const problems = problemsOf(parse(row.yaml));
    const match = problems.find((p) => p.path === row.path);
    assert.ok(match, `no problem at ${row.path}; got ${JSON.stringify(problems)}`);
    assert.equal(match.line, row.line, `line of ${row.path}`);
    assert.ok(
      match.message.includes(row.message),
      `message "${match.message}" should contain "${row.message}"`,
    );
  });
}

interface ValidRow {
  rule: string;
  yaml: string;
  check: (config: ReturnType<typeof configOf>) => void;
}

/** The admin listener's connection limits when the file sets none. */
const ADMIN_DEFAULTS = {
  header_timeout_ms: 10000,
  idle_timeout_ms: 60000,
  max_connections: 64,
  tokens: [],
  ready: { require: "all_pools" },
};

const VALID: ValidRow[] = [
  {
    rule: "listen.address may be an IPv6 literal",
    yaml: insertAfter(3, '  address: "::"'),
    check: (c) => assert.equal(c.listen.address, "::"),
  },
  {
    rule: "listen.address may be a hostname",
    yaml: insertAfter(3, "  address: localhost"),
    check: (c) => assert.equal(c.listen.address, "localhost"),
  },
  {
    rule: "listen.port 65535 is allowed",
    yaml: insertAfter(3, "  port: 65535"),
    check: (c) => assert.equal(c.listen.port, 65535),
  },
  {
    rule: "route.host alone is enough; wildcard and port",
    yaml: edit("path_prefix: /", 'host: "*.example.com:8443"'),
    check: (c) => assert.deepEqual(c.upstream.api.route, { host: "*.example.com:8443" }),
  },
  {
    rule: "backend.address may be bracketed IPv6",
    yaml: edit("address: 127.0.0.1:8081", 'address: "[::1]:8080"'),
    check: (c) => assert.equal(c.upstream.api.backends[0].address, "[::1]:8080"),
  },
  {
    rule: "backend.address may be a hostname",
    yaml: edit("address: 127.0.0.1:8081", "address: payments_api:8081"),
    check: (c) => assert.equal(c.upstream.api.backends[0].address, "payments_api:8081"),
  },
  {
    rule: "backend.weight 0 is allowed",
    yaml: insertAfter(13, "        weight: 0"),
    check: (c) => assert.equal(c.upstream.api.backends[0].weight, 0),
  },
  {
    rule: "health_check.cooldown_ms 0 is allowed",
    yaml: withHealthCheck("cooldown_ms: 0"),
    check: (c) => assert.equal(c.upstream.api.backends[0].health_check?.cooldown_ms, 0),
  },
  {
    rule: "health_check defaults",
    yaml: insertAfter(13, "        health_check: {}"),
    check: (c) =>
      assert.deepEqual(c.upstream.api.backends[0].health_check, {
        path: "/health",
        interval: 5000,
        timeout_ms: 1000,
        failure_threshold: 3,
        success_threshold: 2,
        cooldown_ms: 5000,
        method: "GET",
      }),
  },
  {
    rule: "consistent-hash key defaults to path",
    yaml: insertAfter(10, "    load_balancing: { type: consistent-hash }"),
    check: (c) =>
      assert.deepEqual(c.upstream.api.load_balancing, { type: "consistent-hash", key: "path" }),
  },
  {
    rule: "consistent-hash header key is lowercased",
    yaml: insertAfter(10, "    load_balancing: { type: consistent-hash, key: 'header:X-User-Id' }"),
    check: (c) =>
      assert.deepEqual(c.upstream.api.load_balancing, {
        type: "consistent-hash",
        key: "header:x-user-id",
      }),
  },
  {
    rule: "consistent-hash cookie and query keys",
    yaml: BASE + "load_balancing: { type: consistent-hash, key: 'cookie:Session' }\n",
    check: (c) =>
      assert.deepEqual(c.load_balancing, { type: "consistent-hash", key: "cookie:Session" }),
  },
  {
    rule: "random needs no key",
    yaml: BASE + "load_balancing: { type: random }\n",
    check: (c) => assert.deepEqual(c.load_balancing, { type: "random" }),
  },
  {
    rule: "log.level is case-insensitive (spec alias)",
    yaml: BASE + "log: { level: Poltergeist }\n",
    check: (c) => assert.equal(c.log.level, "poltergeist"),
  },
  {
    rule: "log.level accepts standard names and spooky",
    yaml: BASE + "log: { level: SPOOKY }\n",
    check: (c) => assert.equal(c.log.level, "spooky"),
  },
  {
    rule: "log.level accepts warning",
    yaml: BASE + "log: { level: warning }\n",
    check: (c) => assert.equal(c.log.level, "warning"),
  },
  {
    rule: "log.file defaults when only enabled is given",
    yaml: BASE + "log: { file: { enabled: true } }\n",
    check: (c) =>
      assert.deepEqual(c.log.file, { enabled: true, path: "/var/log/{service}/{service}.log" }),
  },
  {
    rule: "admin defaults its address",
    yaml: BASE + "admin: { port: 9890 }\n",
    check: (c) =>
      assert.deepEqual(c.admin, { address: "127.0.0.1", port: 9890, ...ADMIN_DEFAULTS }),
  },
  ...["127.0.0.1", "127.0.0.2", "::1", "localhost", "::ffff:127.0.0.1"].map((address) => ({
    rule: `admin on loopback ${address} without a token`,
    yaml: BASE + `admin: { address: "${address}", port: 9890 }\n`,
    check: (c: ReturnType<typeof configOf>) =>
      assert.deepEqual(c.admin, { address, port: 9890, ...ADMIN_DEFAULTS }),
  })),
  {
    rule: "admin on 0.0.0.0 with a token",
    yaml: BASE + "admin: { address: 0.0.0.0, port: 9890, token: s3cret }\n",
    check: (c) =>
      assert.deepEqual(c.admin, {
        address: "0.0.0.0",
        port: 9890,
        token: "s3cret",
        ...ADMIN_DEFAULTS,
      }),
  },
  {
    rule: "YAML anchors and merge keys work",
    yaml: BASE.replace(
      "        address: 127.0.0.1:8081\n",
      "        address: 127.0.0.1:8081\n        health_check: &hc { interval: 100 }\n      - id: b\n        address: 127.0.0.1:8082\n        health_check: { <<: *hc, timeout_ms: 50 }\n",
    ),
    check: (c) => {
      assert.equal(c.upstream.api.backends[1].health_check?.interval, 100);
      assert.equal(c.upstream.api.backends[1].health_check?.timeout_ms, 50);
    },
  },
];

for (const row of VALID) {
  Deno.test(`config accepts: ${row.rule}`, () => row.check(configOf(parse(row.yaml))));
}

Deno.test("minimal config gets every default", () => {
  const config = configOf(parse(BASE));
  assert.equal(config.upstream.api.load_balancing, undefined, "pool without its own algorithm");
  assert.equal(config.admin, undefined);
  assert.deepEqual(config, {
    version: 1,
    listen: {
      protocol: "http3",
      port: 9889,
      address: "0.0.0.0",
      tls: { cert: "cert.pem", key: "key.pem" },
      max_streams: 256,
      idle_timeout_ms: 30000,
      tcp_fallback: false,
    },
    upstream: {
      api: {
        route: { path_prefix: "/" },
        backends: [{ id: "a", address: "127.0.0.1:8081", weight: 100, protocol: "h2" }],
        request_timeout_ms: 30000,
        connect_timeout_ms: 10000,
        dns_refresh_ms: 30000,
        max_pending: 0,
      },
    },
    load_balancing: { type: "round-robin" },
    log: {
      level: "info",
      file: { enabled: false, path: "/var/log/{service}/{service}.log" },
      access: { enabled: true, format: "text" },
    },
    limits: {
      max_header_list_size: 65536,
      max_request_body_bytes: 2147483648,
      request_idle_timeout_ms: 30000,
      tcp_header_timeout_ms: 10000,
      tcp_idle_timeout_ms: 60000,
      tcp_max_connections: "auto",
      max_backend_streams_per_connection: 100,
      qpack_max_table_capacity: 0,
      drain_timeout_ms: 10000,
      handshake_timeout_ms: 10000,
      max_handshakes: 256,
      max_connections: 4096,
      max_connections_per_address: 64,
      max_handshakes_per_address: 64,
      max_handshakes_per_network: 128,
      max_handshake_rate: 2000,
      address_prefix_v4: 32,
      address_prefix_v6: 64,
      network_prefix_v4: 24,
      network_prefix_v6: 56,
      udp_receive_buffer: 7340032,
      idle_reclaim_ms: 5000,
    },
    passive_health: { enabled: true, consecutive_failures: 5, eject_ms: 5000 },
    trusted_proxies: [],
    rate_limits: [],
    dns: { servers: [], timeout_ms: 5000 },
  });
});

Deno.test("config is deeply frozen", () => {
  const config = configOf(parse(withHealthCheck("path: /up")));
  for (
    const part of [
      config,
      config.listen,
      config.listen.tls,
      config.upstream,
      config.upstream.api,
      config.upstream.api.route,
      config.upstream.api.backends,
      config.upstream.api.backends[0],
      config.upstream.api.backends[0].health_check,
      config.load_balancing,
      config.log,
      config.log.file,
      config.limits,
    ]
  ) {
    assert.ok(Object.isFrozen(part), JSON.stringify(part));
  }
  assert.throws(() => {
    config.listen.port = 1;
  }, TypeError);
  assert.throws(() => {
    config.upstream.api.backends.push(config.upstream.api.backends[0]);
  }, TypeError);
});

Deno.test("all problems are reported at once, sorted by line", () => {
  const yaml = withSecondPool("a")
    .replace("version: 1", "version: 3")
    .replace("protocol: http3", "protocol: http3\n  port: 1.5") // shifts later lines by one
    .replace("address: 127.0.0.1:8081", "address: nope") +
    "bogus: true\n";
  const problems = problemsOf(parse(yaml));
  assert.deepEqual(problems.map((p) => [p.path, p.line]), [
    ["version", 1],
    ["listen.port", 4],
    ["upstream.api.backends[0].address", 14],
    ["upstream.web.backends[0].id", 19],
    ["bogus", 21],
  ]);
});

Deno.test("unknown keys are each named by their full path", () => {
  const yaml = edit("    key: key.pem\n", "    key: key.pem\n    chain: c.pem\n    sni: x\n");
  const problems = problemsOf(parse(yaml));
  assert.deepEqual(problems, [
    { path: "listen.tls.chain", line: 7, message: "unknown key" },
    { path: "listen.tls.sni", line: 8, message: "unknown key" },
  ]);
});

Deno.test("pool names that are not plain words are quoted in paths", () => {
  const yaml = edit("  api:\n", '  "api v2":\n').replace("127.0.0.1:8081", "x");
  const problems = problemsOf(parse(yaml));
  assert.deepEqual(problems.map((p) => [p.path, p.line]), [
    ['upstream["api v2"].backends[0].address', 13],
  ]);
});

Deno.test("YAML syntax error is a load error with line:column", () => {
  const result = parse("version: 1\nlisten:\n  protocol: [http3\nupstream: {}\n");
  assert.equal(result.ok, false);
  assert.ok(!result.ok && result.kind === "load");
  assert.match(result.message, /^invalid YAML at line \d+:\d+: /);
  assert.match(result.message, /line 4:1/);
});

Deno.test("YAML duplicate key is a load error with line:column", () => {
  const result = parse("version: 1\nversion: 1\n");
  assert.ok(!result.ok && result.kind === "load");
  assert.match(result.message, /line 2:1: Map keys must be unique/);
});

Deno.test("empty file is one problem at line 1", () => {
  assert.deepEqual(problemsOf(parse("")), [{
    path: "",
    line: 1,
    message: "the file is empty; expected a mapping with version, listen and upstream",
  }]);
  assert.deepEqual(problemsOf(parse("- a\n- b\n")).map((p) => [p.path, p.line, p.message]), [
    ["", 1, "must be a mapping, not a list"],
  ]);
});

Deno.test("formatProblem gives path, line and message", () => {
  assert.equal(
    formatProblem({
      path: "upstream.api.backends[0].address",
      line: 12,
      message: "must be host:port",
    }),
    "upstream.api.backends[0].address (line 12): must be host:port",
  );
  assert.equal(formatProblem({ path: "version", message: "is required" }), "version: is required");
  assert.equal(formatProblem({ path: "", line: 1, message: "x" }), "configuration (line 1): x");
});

// ---------------------------------------------------------------------------
// Files: certificate, key, config file
// ---------------------------------------------------------------------------

const FAKE_CERT = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n";
const FAKE_EC_KEY = "-----BEGIN EC PRIVATE KEY-----\nMHcfake\n-----END EC PRIVATE KEY-----\n";

async function withTempDir(fn: (dir: string) => Promise<void> | void): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "config_test_" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Writes cert.pem, key.pem and proxy.yaml (relative cert paths) into `dir`. */
async function writeFixture(dir: string, cert = FAKE_CERT, key = FAKE_EC_KEY): Promise<string> {
  await Deno.writeTextFile(join(dir, "cert.pem"), cert);
  await Deno.writeTextFile(join(dir, "key.pem"), key);
  const configPath = join(dir, "proxy.yaml");
  await Deno.writeTextFile(configPath, BASE);
  return configPath;
}

Deno.test("loadConfig resolves relative cert and key paths against the config file", async () => {
  await withTempDir(async (dir) => {
    const result = await loadConfig(await writeFixture(dir));
    const config = configOf(result);
    assert.equal(config.listen.tls.cert, join(dir, "cert.pem"));
    assert.equal(config.listen.tls.key, join(dir, "key.pem"));
  });
});

const KEY_ROWS: { rule: string; key: string; ok: boolean; message?: string }[] = [
  {
    rule: "PKCS#8 key",
    key: "-----BEGIN PRIVATE KEY-----\nMC4fake\n-----END PRIVATE KEY-----\n",
    ok: true,
  },
  {
    rule: "PKCS#1 RSA key",
    key: "-----BEGIN RSA PRIVATE KEY-----\nMIIfake\n-----END RSA PRIVATE KEY-----\n",
    ok: true,
  },
  {
    rule: "SEC1 EC key after EC parameters",
    key: "-----BEGIN EC PARAMETERS-----\nBggq\n-----END EC PARAMETERS-----\n" + FAKE_EC_KEY,
    ok: true,
  },
  {
    rule: "a certificate is not a key",
    key: FAKE_CERT,
    ok: false,
    message: "is not a PEM private key",
  },
  {
    rule: "mismatched END line",
    key: "-----BEGIN EC PRIVATE KEY-----\nx\n-----END RSA PRIVATE KEY-----\n",
    ok: false,
    message: "is not a PEM private key",
  },
  {
    rule: "encrypted PKCS#8 key",
    key: "-----BEGIN ENCRYPTED PRIVATE KEY-----\nx\n-----END ENCRYPTED PRIVATE KEY-----\n",
    ok: false,
    message: "encrypted private key",
  },
  {
    rule: "legacy encrypted RSA key",
    key:
      "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nx\n-----END RSA PRIVATE KEY-----\n",
    ok: false,
    message: "encrypted private key",
  },
];

for (const row of KEY_ROWS) {
  Deno.test(`key file: ${row.rule}`, async () => {
    await withTempDir(async (dir) => {
      const result = await loadConfig(await writeFixture(dir, FAKE_CERT, row.key));
      if (row.ok) {
        configOf(result);
        return;
      }
      const problems = problemsOf(result);
      assert.equal(problems.length, 1, JSON.stringify(problems));
      assert.equal(problems[0].path, "listen.tls.key");
      assert.equal(problems[0].line, 6);
      assert.ok(problems[0].message.includes(row.message!), problems[0].message);
    });
  });
}

Deno.test("cert file that is not PEM is a problem at listen.tls.cert", async () => {
  await withTempDir(async (dir) => {
    const result = await loadConfig(await writeFixture(dir, "just some text\n"));
    assert.deepEqual(problemsOf(result), [{
      path: "listen.tls.cert",
      line: 5,
      message: `${
        join(dir, "cert.pem")
      } is not a PEM certificate (no -----BEGIN CERTIFICATE----- block)`,
    }]);
  });
});

Deno.test("missing cert and key files are both reported, with other problems", async () => {
  await withTempDir(async (dir) => {
    const configPath = join(dir, "proxy.yaml");
    await Deno.writeTextFile(configPath, BASE.replace("version: 1", "version: 0"));
    const problems = problemsOf(await loadConfig(configPath));
    assert.deepEqual(problems, [
      { path: "version", line: 1, message: "must be 1 (the only supported configuration version)" },
      { path: "listen.tls.cert", line: 5, message: `file not found: ${join(dir, "cert.pem")}` },
      { path: "listen.tls.key", line: 6, message: `file not found: ${join(dir, "key.pem")}` },
    ]);
  });
});

Deno.test("cert path that is a directory is a problem", async () => {
  await withTempDir(async (dir) => {
    const configPath = await writeFixture(dir);
    await Deno.remove(join(dir, "cert.pem"));
    await Deno.mkdir(join(dir, "cert.pem"));
    const problems = problemsOf(await loadConfig(configPath));
    assert.equal(problems[0].path, "listen.tls.cert");
    assert.match(problems[0].message, /is a directory/);
  });
});

Deno.test("parseConfigText checks files relative to baseDir, or skips them", async () => {
  await withTempDir(async (dir) => {
    await writeFixture(dir);
    configOf(parseConfigText(BASE, { baseDir: dir }));
    const problems = problemsOf(parseConfigText(BASE, { baseDir: join(dir, "elsewhere") }));
    assert.deepEqual(problems.map((p) => p.path), ["listen.tls.cert", "listen.tls.key"]);
    configOf(parseConfigText(BASE, { baseDir: join(dir, "elsewhere"), checkFiles: false }));
  });
});

Deno.test("missing config file is a load error", async () => {
  const result = await loadConfig("/nonexistent/dir/proxy.yaml");
  assert.deepEqual(result, {
    ok: false,
    kind: "load",
    message: "configuration file not found: /nonexistent/dir/proxy.yaml",
  });
});

Deno.test("config path that is a directory is a load error", async () => {
  await withTempDir(async (dir) => {
    const result = await loadConfig(dir);
    assert.ok(!result.ok && result.kind === "load");
    assert.match(result.message, new RegExp(dir));
  });
});

Deno.test("examples/proxy.yaml is a valid configuration", () => {
  const examples = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "examples");
  const text = Deno.readTextFileSync(join(examples, "proxy.yaml"));
  const config = configOf(parseConfigText(text, { baseDir: examples, checkFiles: false }));
  assert.deepEqual(Object.keys(config.upstream), ["api", "canary", "docs", "static"]);
  assert.equal(config.upstream.docs.route.host, "docs.example.com");
  // On loopback without a token: the copied file passes --check as it is.
  assert.deepEqual(config.admin, { address: "127.0.0.1", port: 9890, ...ADMIN_DEFAULTS });
  assert.equal(config.upstream.api.route.path_prefix, "/vendor/");
  assert.deepEqual(config.upstream.api.backends.map((b) => b.address), [
    "127.0.0.1:8081",
    "127.0.0.1:8082",
  ]);
  assert.ok(config.upstream.api.backends.every((b) => b.health_check !== undefined));
  assert.equal(config.upstream.static.route.path_prefix, "/");
  // Beside the file: where examples/deploy/spooky.service copies them.
  assert.equal(config.listen.tls.cert, join(examples, "cert.pem"));
  assert.equal(config.listen.tls.key, join(examples, "key.pem"));
});

// ---------------------------------------------------------------------------
// Special files (issue 13.7), certificate validity, the pair check (issue 15.2)
// ---------------------------------------------------------------------------

/** Makes a FIFO (named pipe) at `path` with mkfifo(1). */
async function mkfifo(path: string): Promise<void> {
  const out = await new Deno.Command("mkfifo", { args: [path] }).output();
  assert.equal(out.code, 0, "mkfifo failed");
}

/** Resolves with `p`, or rejects after `ms` (a hang is a failure, not a stuck test). */
function within<T>(ms: number, p: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`still running after ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** The config of BASE with absolute cert and key paths. */
function withTls(cert: string, key: string): string {
  return edit(
    "    key: key.pem",
    `    key: "${key}"`,
    edit("    cert: cert.pem", `    cert: "${cert}"`),
  );
}

for (const kind of ["cert", "key"] as const) {
  Deno.test(`listen.tls.${kind} /dev/zero is refused as a character device, not read`, async () => {
    await withTempDir(async (dir) => {
      await writeFixture(dir);
      const cert = kind === "cert" ? "/dev/zero" : join(dir, "cert.pem");
      const key = kind === "key" ? "/dev/zero" : join(dir, "key.pem");
      const before = Deno.memoryUsage().rss;
      for (
        const result of [
          await loadConfig(await writeConfig(dir, withTls(cert, key))),
          parseConfigText(withTls(cert, key)),
        ]
      ) {
        const problems = problemsOf(result);
        assert.equal(problems.length, 1, JSON.stringify(problems));
        assert.equal(problems[0].path, `listen.tls.${kind}`);
        assert.equal(problems[0].line, kind === "cert" ? 5 : 6);
        assert.match(problems[0].message, /\/dev\/zero is a character device, not a regular file/);
      }
      assert.ok(Deno.memoryUsage().rss - before < 64 * 1024 * 1024, "memory grew");
    });
  });

  Deno.test(`listen.tls.${kind} that is a FIFO is refused at once, never waited on`, async () => {
    await withTempDir(async (dir) => {
      await writeFixture(dir);
      const fifo = join(dir, "pipe.pem");
      await mkfifo(fifo);
      const cert = kind === "cert" ? fifo : join(dir, "cert.pem");
      const key = kind === "key" ? fifo : join(dir, "key.pem");
      const async = await within(5000, loadConfig(await writeConfig(dir, withTls(cert, key))));
      for (const result of [async, parseConfigText(withTls(cert, key))]) {
        const problems = problemsOf(result);
        assert.equal(problems[0].path, `listen.tls.${kind}`);
        assert.match(problems[0].message, /is a FIFO \(named pipe\), not a regular file/);
      }
    });
  });
}

/** Writes `text` as `proxy.yaml` in `dir` and returns its path. */
async function writeConfig(dir: string, text: string): Promise<string> {
  const path = join(dir, "proxy.yaml");
  await Deno.writeTextFile(path, text);
  return path;
}

Deno.test("a configuration file that is /dev/zero or a FIFO is a load error, at once", async () => {
  const zero = await within(5000, loadConfig("/dev/zero"));
  assert.ok(!zero.ok && zero.kind === "load");
  assert.match(zero.message, /\/dev\/zero is a character device, not a regular file/);
  await withTempDir(async (dir) => {
    const fifo = join(dir, "proxy.yaml");
    await mkfifo(fifo);
    const result = await within(5000, loadConfig(fifo));
    assert.ok(!result.ok && result.kind === "load");
    assert.match(result.message, /is a FIFO \(named pipe\), not a regular file/);
  });
});

Deno.test("a TLS file or config file over its size bound is refused, not read whole", async () => {
  await withTempDir(async (dir) => {
    await writeFixture(dir, FAKE_CERT + "#".repeat(1024 * 1024));
    const problems = problemsOf(await loadConfig(join(dir, "proxy.yaml")));
    assert.equal(problems[0].path, "listen.tls.cert");
    assert.match(problems[0].message, /is too large \(over 1048576 bytes\)/);
    const big = join(dir, "big.yaml");
    await Deno.writeTextFile(big, BASE + "#".repeat(5 * 1024 * 1024));
    const result = await loadConfig(big);
    assert.ok(!result.ok && result.kind === "load");
    assert.match(result.message, /too large/);
  });
});

Deno.test("read errors name the file: permission denied (EACCES/EPERM), not found", () => {
  const eacces = Object.assign(new Error("EACCES: permission denied, open '/k.pem'"), {
    code: "EACCES",
  });
  assert.equal(readProblem("/k.pem", eacces), "cannot read /k.pem: permission denied");
  assert.equal(
    readProblem("/k.pem", new Deno.errors.PermissionDenied("x")),
    "cannot read /k.pem: permission denied",
  );
  assert.equal(
    readProblem("/k.pem", Object.assign(new Error("x"), { code: "ENOENT" })),
    "file not found: /k.pem",
  );
});

/** A self-signed certificate valid from `notBefore` to `notAfter`, PEM. */
async function certValid(notBefore: Date, notAfter: Date): Promise<string> {
  x509.cryptoProvider.set(crypto);
  const keys = await crypto.subtle.generateKey(
    { name: "ECDSA", namedCurve: "P-256" },
    true,
    ["sign", "verify"],
  );
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: "01",
    name: "CN=localhost",
    notBefore,
    notAfter,
    keys,
    signingAlgorithm: { name: "ECDSA", hash: "SHA-256" },
  });
  return cert.toString("pem") + "\n";
}

Deno.test("an expired certificate is a warning at listen.tls.cert, not an error", async () => {
  const now = Date.UTC(2026, 0, 1);
  const day = 86_400_000;
  await withTempDir(async (dir) => {
    const expired = await certValid(new Date(now - 30 * day), new Date(now - day));
    const result = await loadConfig(await writeFixture(dir, expired), { now: () => now });
    assert.ok(result.ok, JSON.stringify(result));
    assert.equal(result.warnings.length, 1);
    assert.equal(result.warnings[0].path, "listen.tls.cert");
    assert.equal(result.warnings[0].line, 5);
    assert.match(
      result.warnings[0].message,
      /^the certificate expired on 2025-12-31T00:00:00\.000Z/,
    );
    const sync = parseConfigText(BASE, { baseDir: dir, now: () => now });
    assert.ok(sync.ok && sync.warnings.length === 1);

    const future = await certValid(new Date(now + day), new Date(now + 30 * day));
    const early = await loadConfig(await writeFixture(dir, future), { now: () => now });
    assert.ok(early.ok);
    assert.match(early.warnings[0].message, /^the certificate is not valid before 2026-01-02/);

    const fine = await certValid(new Date(now - day), new Date(now + day));
    const ok = await loadConfig(await writeFixture(dir, fine), { now: () => now });
    assert.ok(ok.ok);
    assert.deepEqual(ok.warnings, []);
    assert.deepEqual(ok.pem, { cert: fine, key: FAKE_EC_KEY });
  });
});

Deno.test("the injected pair check's problem is reported at its key with the line", async () => {
  await withTempDir(async (dir) => {
    const seen: unknown[] = [];
    const result = await loadConfig(await writeFixture(dir), {
      checkTlsPair: (pem) => {
        seen.push(pem);
        return Promise.resolve({ at: "key", message: "does not match listen.tls.cert" });
      },
    });
    assert.deepEqual(seen, [{ cert: FAKE_CERT, key: FAKE_EC_KEY }]);
    assert.deepEqual(problemsOf(result).map(formatProblem), [
      "listen.tls.key (line 6): does not match listen.tls.cert",
    ]);
    // Not asked when a file itself is already wrong.
    seen.length = 0;
    await Deno.writeTextFile(join(dir, "key.pem"), "nothing");
    problemsOf(
      await loadConfig(join(dir, "proxy.yaml"), {
        checkTlsPair: (pem) => (seen.push(pem), Promise.resolve(null)),
      }),
    );
    assert.deepEqual(seen, []);
  });
});

Deno.test("log.access: true/false is short for {enabled}; a format other than text or json is an error", () => {
  const parse = (access: string) =>
    parseConfigText(
      `version: 1
listen: {protocol: http3, tls: {cert: c.pem, key: k.pem}}
log: {access: ${access}}
upstream: {a: {route: {path_prefix: /}, backends: [{id: b, address: "127.0.0.1:1"}]}}
`,
      { checkFiles: false },
    );
  const off = parse("false");
  assert.ok(off.ok && !off.config.log.access.enabled);
  const json = parse("{format: json, file: /tmp/access.log}");
  assert.ok(json.ok);
  assert.deepEqual(json.config.log.access, {
    enabled: true,
    format: "json",
    file: "/tmp/access.log",
  });
  const bad = parse("{format: xml}");
  assert.ok(!bad.ok && bad.kind === "invalid");
  assert.match(
    formatProblem(bad.problems[0]),
    /^log\.access\.format \(line 3\): must be "text" or "json"/,
  );
});

Deno.test("limits.handshake_timeout_ms must stay below listen.idle_timeout_ms", () => {
  const r = parseConfigText(
    `version: 1
listen: {protocol: http3, idle_timeout_ms: 5000, tls: {cert: c.pem, key: k.pem}}
limits: {handshake_timeout_ms: 5000}
upstream: {a: {route: {path_prefix: /}, backends: [{id: b, address: "127.0.0.1:1"}]}}
`,
    { checkFiles: false },
  );
  assert.ok(!r.ok && r.kind === "invalid");
  assert.match(
    formatProblem(r.problems[0]),
    /^limits\.handshake_timeout_ms \(line 3\): must be below/,
  );
});

Deno.test("limits: address and network prefix lengths must fit their family", () => {
  for (const bad of ["address_prefix_v4: 33", "address_prefix_v6: 129", "network_prefix_v4: 0"]) {
    const r = parse(BASE + `limits: {${bad}}\n`);
    assert.ok(!r.ok && r.kind === "invalid", bad);
    assert.match(formatProblem(r.problems[0]), /must be a prefix length/);
  }
  const ok = parse(BASE + "limits: {address_prefix_v6: 48, network_prefix_v6: 40}\n");
  assert.ok(ok.ok);
});

Deno.test("#35.7: limits.qpack_max_table_capacity is 0 by default and an integer up to 65536, named with its line", () => {
  for (const bad of ["-1", "1.5", "65537", '"4k"']) {
    const r = parse(BASE + `limits:\n  qpack_max_table_capacity: ${bad}\n`);
    assert.ok(!r.ok && r.kind === "invalid", bad);
    assert.match(
      formatProblem(r.problems[0]),
      /^limits\.qpack_max_table_capacity \(line 15\): /,
      bad,
    );
  }
  const dflt = parse(BASE);
  assert.ok(dflt.ok && dflt.config.limits.qpack_max_table_capacity === 0);
  const table = parse(BASE + "limits:\n  qpack_max_table_capacity: 4096\n");
  assert.ok(table.ok && table.config.limits.qpack_max_table_capacity === 4096);
});

Deno.test("#35.7: limits.udp_receive_buffer is a whole number of bytes from 0 to 1 GiB, named with its line", () => {
  for (const bad of ["-1", "1.5", "1073741825"]) {
    const r = parse(BASE + `limits:\n  udp_receive_buffer: ${bad}\n`);
    assert.ok(!r.ok && r.kind === "invalid", bad);
    assert.match(
      formatProblem(r.problems[0]),
      /^limits\.udp_receive_buffer \(line 15\): must be a whole number of bytes/,
      bad,
    );
  }
  const text = parse(BASE + 'limits:\n  udp_receive_buffer: "7MiB"\n');
  assert.ok(!text.ok && text.kind === "invalid");
  assert.match(
    formatProblem(text.problems[0]),
    /^limits\.udp_receive_buffer \(line 15\): must be a number/,
  );
  for (const good of [0, 212992, 1073741824]) {
    const r = parse(BASE + `limits: {udp_receive_buffer: ${good}}\n`);
    assert.ok(r.ok && r.config.limits.udp_receive_buffer === good, String(good));
  }
});

Deno.test("#28.1: limits.upstream_workers and limits.upstream_client are removed: an error saying what replaced them", () => {
  const rows: Array<[string, RegExp]> = [
    ["upstream_workers: 2", /upstream worker threads are gone.*run on the QUIC thread/],
    ["upstream_workers: 64", /upstream worker threads are gone/],
    ["upstream_workers: many", /upstream worker threads are gone/],
    ["upstream_client: node", /the proxy's own HTTP\/2 client carries every exchange/],
    ["upstream_client: hyper", /the node client, Deno's node:http2, is gone/],
  ];
  for (const [line, message] of rows) {
    const problems = problemsOf(parse(BASE + `limits:\n  ${line}\n`));
    assert.equal(problems.length, 1, line);
    const key = line.split(":")[0];
    assert.match(
      formatProblem(problems[0]),
      new RegExp(`^limits\\.${key} \\(line 15\\): was removed`),
    );
    assert.match(problems[0].message, message, line);
    assert.doesNotMatch(problems[0].message, /unknown key/, line);
  }
  // Both at once, beside another problem: every one reported, by line.
  const all = problemsOf(parse(
    BASE + "limits:\n  upstream_client: node\n  max_handshakes: 0\n  upstream_workers: 3\n",
  ));
  assert.deepEqual(all.map((p) => [p.path, p.line]), [
    ["limits.upstream_client", 15],
    ["limits.max_handshakes", 16],
    ["limits.upstream_workers", 17],
  ]);
});

Deno.test("#28.1: limits.upstream_workers auto or 0, and upstream_client spooky, are ignored with a warning naming the key and line", () => {
  for (const line of ["upstream_workers: auto", "upstream_workers: 0", "upstream_client: spooky"]) {
    const r = parse(BASE + `limits:\n  max_handshakes: 9\n  ${line}\n`);
    assert.ok(r.ok, `${line}: ${JSON.stringify(r)}`);
    const key = line.split(":")[0];
    assert.deepEqual(r.warnings.map((w) => [w.path, w.line]), [[`limits.${key}`, 16]], line);
    assert.match(r.warnings[0].message, /^ignored: the key was removed \(.+\); delete it$/);
    assert.equal(r.config.limits.max_handshakes, 9, "the rest of the section applies");
    assert.ok(!Object.hasOwn(r.config.limits, key), `${key} is not in the configuration`);
  }
  const both = parse(BASE + "limits: {upstream_workers: auto, upstream_client: spooky}\n");
  assert.ok(both.ok);
  assert.deepEqual(both.warnings.map((w) => w.path), [
    "limits.upstream_workers",
    "limits.upstream_client",
  ]);
});
