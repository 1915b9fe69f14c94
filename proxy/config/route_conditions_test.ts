/**
 * #30.4: `route.methods` and `route.headers`: each problem refused with its
 * key path and line, the accepted form lowercased; two pools may share a
 * host and prefix when their methods or headers differ.
 */
import assert from "node:assert/strict";
import { config, POOL_API_HEAD, problems } from "./_test_util.ts";

/** A valid configuration whose pool `api` has the route lines given (from line 8). */
function withRoute(...lines: string[]): string {
  return [
    ...POOL_API_HEAD.slice(0, 6), // 1-6
    "    route:", // 7
    "      path_prefix: /api", // 8
    ...lines.map((l) => `      ${l}`), // 9 and on
    "    backends: [{id: a, address: 127.0.0.1:8081}]",
    "",
  ].join("\n");
}

Deno.test("#30.4: route.methods and route.headers: accepted, header names lowercased", () => {
  const route = config(
    withRoute(
      "methods: [GET, POST]",
      "headers:",
      '  X-Canary: "1"',
      "  user-agent: {prefix: beta/}",
      "  authorization: {present: false}",
    ),
  ).upstream.api.route;
  assert.deepEqual(route.methods, ["GET", "POST"]);
  assert.deepEqual(route.headers, {
    "x-canary": "1",
    "user-agent": { prefix: "beta/" },
    authorization: { present: false },
  });
  assert.equal(config(withRoute()).upstream.api.route.methods, undefined);
});

/** [what, the route lines, the problem's path under upstream.api.route, its line, a message part]. */
const REFUSED: Array<[string, string[], string, number, RegExp]> = [
  ["an empty methods list", ["methods: []"], "methods", 9, /at least one method/],
  ["a lowercase method", ["methods: [GET, post]"], "methods[1]", 9, /uppercase HTTP method/],
  ["a method no route serves", ["methods: [TRACE]"], "methods[0]", 9, /answered 501/],
  ["a method with a space", ['methods: ["GE T"]'], "methods[0]", 9, /method token/],
  ["a pseudo-header", ["headers: {':path': /x}"], 'headers[":path"]', 9, /pseudo-header/],
  ["host", ["headers: {Host: a.test}"], "headers.Host", 9, /route.host/],
  ["an invalid name", ['headers: {"x y": "1"}'], 'headers["x y"]', 9, /no valid field name/],
  [
    "a value with a newline",
    ['headers: {x-a: "a\\nb"}'],
    "headers.x-a",
    9,
    /./,
  ],
  ["an empty prefix", ["headers: {x-a: {prefix: ''}}"], "headers.x-a.prefix", 9, /empty/],
  ["present not a boolean", ["headers: {x-a: {present: yes}}"], "headers.x-a", 9, /present/],
  [
    "an unknown condition",
    ["headers: {x-a: {suffix: z}}"],
    "headers.x-a",
    9,
    /\{prefix: <value>\} or \{present: true\|false\}/,
  ],
  [
    "the same name twice",
    ["headers: {X-A: '1', x-a: '2'}"],
    "headers.x-a",
    9,
    /same field as X-A/,
  ],
];

for (const [what, lines, path, line, message] of REFUSED) {
  Deno.test(`#30.4: route: ${what} is refused with its key and line`, () => {
    const found = problems(withRoute(...lines));
    const p = found.find((x) => x.path === `upstream.api.route.${path}`);
    assert.ok(p, JSON.stringify(found));
    assert.equal(p.line, line, JSON.stringify(p));
    assert.match(p.message, message);
  });
}

/** Two pools on /api, the second's route conditions given. */
function twoPools(first: string, second: string): string {
  return [
    ...POOL_API_HEAD.slice(0, 6), // 1-6
    `    route: {path_prefix: /api${first}}`, // 7
    "    backends: [{id: a, address: 127.0.0.1:8081}]", // 8
    "  writes:", // 9
    `    route: {path_prefix: /api${second}}`, // 10
    "    backends: [{id: b, address: 127.0.0.1:8082}]", // 11
    "",
  ].join("\n");
}

Deno.test("#30.4: two pools may share host and prefix when methods or headers differ, not when every condition is the same", () => {
  config(twoPools("", ", methods: [POST]"));
  config(twoPools(", methods: [GET]", ", methods: [POST]"));
  config(twoPools("", ", headers: {x-canary: '1'}"));
  config(twoPools(", headers: {x-canary: '1'}", ", headers: {x-canary: '2'}"));
  const same = problems(twoPools(", methods: [GET, POST]", ", methods: [POST, GET]"));
  assert.deepEqual(same.map((p) => [p.path, p.line]), [["upstream.writes.route", 10]]);
  assert.match(same[0].message, /same host and path_prefix as pool "api", and the same methods/);
  const headers = problems(twoPools(", headers: {X-A: '1'}", ", headers: {x-a: '1'}"));
  assert.deepEqual(headers.map((p) => p.path), ["upstream.writes.route"]);
});
