/**
 * #29.3: a pool's `headers` (request and response rewriting) and
 * `health_check.host`: each rule refused with its key path and line, the
 * accepted form lowercased and defaulted.
 */
import assert from "node:assert/strict";
import { config, POOL_API_HEAD, problems } from "./_test_util.ts";

/** A valid configuration with `headers` lines inserted at line 12 (and a health check at 14-15). */
function withHeaders(...lines: string[]): string {
  return [
    ...POOL_API_HEAD, // 1-7
    "    backends:", // 8
    "      - id: a", // 9
    "        address: 127.0.0.1:8081", // 10
    "    headers:", // 11
    ...lines.map((l) => `      ${l}`), // 12 and on
    "",
  ].join("\n");
}

/** [what, the `headers` lines, the problem's path under upstream.api.headers, its line, a message part]. */
const REFUSED: Array<[string, string[], string, number, RegExp]> = [
  [
    "a pseudo-header",
    ["request:", "  set: {':path': /x}"],
    'request.set[":path"]',
    13,
    /pseudo-header/,
  ],
  [
    "a pseudo-header to remove",
    ["request:", "  remove: [':authority']"],
    "request.remove[0]",
    13,
    /pseudo-header/,
  ],
  [
    "a connection-specific field",
    ["response:", "  set: {Connection: close}"],
    "response.set.Connection",
    13,
    /connection-specific/,
  ],
  [
    "transfer-encoding",
    ["request:", "  add: {transfer-encoding: chunked}"],
    "request.add.transfer-encoding",
    13,
    /connection-specific/,
  ],
  [
    "a hop-by-hop field (te)",
    ["request:", "  remove: [x-a, TE]"],
    "request.remove[1]",
    13,
    /connection-specific/,
  ],
  [
    "content-length",
    ["response:", "  remove: [content-length]"],
    "response.remove[0]",
    13,
    /frames the message/,
  ],
  [
    "an invalid name",
    ["request:", "  set: {'x a': v}"],
    'request.set["x a"]',
    13,
    /no valid field name/,
  ],
  [
    "a CR/LF in a value",
    ["response:", '  add: {x-a: "v\\r\\nset-cookie: x"}'],
    "response.add.x-a",
    13,
    /CR or LF/,
  ],
  [
    "a control character in a value",
    ["request:", '  set: {x-a: "v\\u0001"}'],
    "request.set.x-a",
    13,
    /control character/,
  ],
  [
    "leading whitespace in a value",
    ["request:", "  set: {x-a: ' v'}"],
    "request.set.x-a",
    13,
    /whitespace/,
  ],
  [
    "a number as a value",
    ["request:", "  set: {x-a: 2}"],
    "request.set.x-a",
    13,
    /must be a string/,
  ],
  [
    "a name twice, in two cases",
    ["request:", "  set: {X-A: v, x-a: w}"],
    "request.set.x-a",
    13,
    /same field/,
  ],
  [
    "set.host that is no authority",
    ["request:", "  set: {host: 'a b'}"],
    "request.set.host",
    13,
    /host name or address/,
  ],
  [
    "set.host as a wildcard",
    ["request:", "  set: {host: '*.example.com'}"],
    "request.set.host",
    13,
    /host name or address/,
  ],
  [
    "add.host",
    ["request:", "  add: {host: site.internal}"],
    "request.add.host",
    13,
    /can only be set/,
  ],
  ["remove host", ["request:", "  remove: [Host]"], "request.remove[0]", 13, /can only be set/],
  [
    "host in a response",
    ["response:", "  set: {host: a}"],
    "response.set.host",
    13,
    /request field/,
  ],
  ["an unknown key", ["request:", "  replace: {x-a: b}"], "request.replace", 13, /unknown key/],
  ["an unknown side", ["upstream: {set: {x-a: b}}"], "upstream", 12, /unknown key/],
];

for (const [what, lines, path, line, message] of REFUSED) {
  Deno.test(`#29.3: headers refuse ${what}, named with its key and line`, () => {
    const found = problems(withHeaders(...lines));
    assert.equal(found.length, 1, JSON.stringify(found));
    assert.equal(found[0].path, `upstream.api.headers.${path}`);
    assert.equal(found[0].line, line);
    assert.match(found[0].message, message);
  });
}

Deno.test("#29.3: headers are lowercased, each part defaulted; values as given", () => {
  const c = config(withHeaders(
    "request:",
    "  set: {Host: Site.Internal:8080, X-Env: prod}",
    "  remove: [X-Debug]",
    "response:",
    "  add: {Cache-Control: no-store}",
  ));
  assert.deepEqual(c.upstream.api.headers, {
    request: { set: { host: "Site.Internal:8080", "x-env": "prod" }, add: {}, remove: ["x-debug"] },
    response: { set: {}, add: { "cache-control": "no-store" }, remove: [] },
  });
});

Deno.test("#29.3: set.host takes [IPv6]:port; a pool without headers has none", () => {
  const c = config(withHeaders("request: {set: {host: '[::1]:8080'}}"));
  assert.equal(c.upstream.api.headers?.request?.set.host, "[::1]:8080");
  const plain = config(withHeaders("{}").replace("    headers:\n      {}\n", ""));
  assert.equal(plain.upstream.api.headers, undefined);
});

Deno.test("#29.3: health_check.host is an authority, named with its key and line", () => {
  const text = (host: string) =>
    withHeaders("{}").replace(
      "        address: 127.0.0.1:8081\n",
      `        address: 127.0.0.1:8081\n        health_check: {host: ${host}}\n`,
    );
  assert.equal(
    config(text("site.internal")).upstream.api.backends[0].health_check?.host,
    "site.internal",
  );
  const found = problems(text("'bad host'"));
  assert.deepEqual(found.map((p) => [p.path, p.line]), [[
    "upstream.api.backends[0].health_check.host",
    11,
  ]]);
  assert.match(found[0].message, /host name or address/);
});
