import assert from "node:assert/strict";
import { compileRoute, normalizeHost, routePrecedence, Router } from "./router.ts";

Deno.test("router: longest prefix wins across pools", () => {
  const r = new Router([
    { pool: "root", path_prefix: "/" },
    { pool: "api", path_prefix: "/api" },
    { pool: "v2", path_prefix: "/api/v2" },
  ]);
  assert.equal(r.match("x", "/api/v2/users"), "v2");
  assert.equal(r.match("x", "/api/v1"), "api");
  assert.equal(r.match("x", "/index.html"), "root");
  assert.equal(r.match("x", "/api?q=1"), "api");
});

Deno.test("router: no match gives null", () => {
  const r = new Router([{ pool: "api", path_prefix: "/api" }]);
  assert.equal(r.match("x", "/other"), null);
});

Deno.test("router: host is case-insensitive and ignores the port", () => {
  const r = new Router([{ pool: "a", host: "Example.COM" }]);
  assert.equal(r.match("example.com:9889", "/x"), "a");
  assert.equal(r.match("EXAMPLE.com", "/"), "a");
  assert.equal(r.match("other.com", "/"), null);
  assert.equal(r.match(undefined, "/"), null);
});

Deno.test("router: wildcard host matches subdomains only", () => {
  const r = new Router([{ pool: "w", host: "*.example.com" }]);
  assert.equal(r.match("a.example.com", "/"), "w");
  assert.equal(r.match("a.b.example.com:1", "/"), "w");
  assert.equal(r.match("example.com", "/"), null);
  assert.equal(r.match("badexample.com", "/"), null);
});

Deno.test("router: host + prefix requires both", () => {
  const r = new Router([{ pool: "hp", host: "api.test", path_prefix: "/v1" }]);
  assert.equal(r.match("api.test", "/v1/x"), "hp");
  assert.equal(r.match("api.test", "/v2"), null);
  assert.equal(r.match("other.test", "/v1"), null);
});

Deno.test("router: host-only route beats a catch-all / ; longer prefix beats host-only", () => {
  const r = new Router([
    { pool: "root", path_prefix: "/" },
    { pool: "h", host: "h.test" },
    { pool: "api", path_prefix: "/api" },
  ]);
  assert.equal(r.match("h.test", "/x"), "h");
  assert.equal(r.match("h.test", "/api/x"), "api");
  assert.equal(r.match("z.test", "/x"), "root");
});

Deno.test("router: normalizeHost handles IPv6 literals and trailing dots", () => {
  assert.equal(normalizeHost("[::1]:9889"), "[::1]");
  assert.equal(normalizeHost("Example.com."), "example.com");
  assert.equal(normalizeHost("127.0.0.1:80"), "127.0.0.1");
});

Deno.test("#30.4: path_prefix without a trailing / matches on a segment boundary", () => {
  const r = new Router([{ pool: "static", path_prefix: "/static" }, { pool: "root" }]);
  assert.equal(r.match("x", "/static"), "static");
  assert.equal(r.match("x", "/static/x"), "static");
  assert.equal(r.match("x", "/static?q=1"), "static");
  assert.equal(r.match("x", "/staticx"), "root");
  assert.equal(r.match("x", "/static-assets/a"), "root");
  // A prefix ending in / matches whatever starts with it, as before.
  const slash = new Router([{ pool: "api", path_prefix: "/api/" }]);
  assert.equal(slash.match("x", "/api/x"), "api");
  assert.equal(slash.match("x", "/api"), null);
});

Deno.test("#30.4: methods: the method must be listed (case-sensitive); none listed: any", () => {
  const r = new Router([
    { pool: "reads", path_prefix: "/api" },
    { pool: "writes", path_prefix: "/api", methods: ["POST", "PUT", "DELETE"] },
  ]);
  assert.equal(r.match("x", "/api/a", "GET"), "reads");
  assert.equal(r.match("x", "/api/a", "POST"), "writes");
  assert.equal(r.match("x", "/api/a", "post"), "reads");
  assert.equal(r.match("x", "/api/a"), "reads", "no method: a route with methods never matches");
});

Deno.test("#30.4: headers: exact value, prefix, present, absent; every condition must hold", () => {
  const r = new Router([
    { pool: "default", path_prefix: "/" },
    { pool: "canary", path_prefix: "/", headers: { "x-canary": "1" } },
    { pool: "beta", path_prefix: "/", headers: { "user-agent": { prefix: "beta/" } } },
    { pool: "tenant", path_prefix: "/", headers: { "X-Tenant": { present: true } } },
    {
      pool: "anon",
      path_prefix: "/account",
      headers: { authorization: { present: false }, "x-debug": "on" },
    },
  ]);
  assert.equal(r.match("x", "/", "GET", [["x-canary", "1"]]), "canary");
  assert.equal(r.match("x", "/", "GET", [["x-canary", "10"]]), "default", "exact, not prefix");
  assert.equal(r.match("x", "/", "GET", [["x-canary", "0"], ["x-canary", "1"]]), "canary");
  assert.equal(r.match("x", "/", "GET", [["user-agent", "beta/2"]]), "beta");
  assert.equal(r.match("x", "/", "GET", [["user-agent", "Beta/2"]]), "default", "values keep case");
  assert.equal(r.match("x", "/", "GET", [["x-tenant", ""]]), "tenant", "names are lowercased");
  assert.equal(r.match("x", "/account", "GET", [["x-debug", "on"]]), "anon");
  assert.equal(
    r.match("x", "/account", "GET", [["x-debug", "on"], ["authorization", "Bearer t"]]),
    "default",
  );
  assert.equal(r.match("x", "/account", "GET", []), "default");
});

Deno.test("#30.4: precedence: host is a filter, then the longest prefix, then more conditions, then config order", () => {
  const r = new Router([
    { pool: "first", path_prefix: "/api" }, // order 0
    { pool: "second", path_prefix: "/api" }, // same conditions, later: never chosen over first
    { pool: "get", path_prefix: "/api", methods: ["GET"] }, // 1 condition
    { pool: "get-json", path_prefix: "/api", methods: ["GET"], headers: { accept: "json" } },
    { pool: "host", host: "h.test", path_prefix: "/api" }, // 1 condition, like get
    { pool: "longer", path_prefix: "/api/v2" },
    { pool: "host-only", host: "h.test" },
  ]);
  // More conditions beat fewer at the same prefix.
  assert.equal(r.match("x", "/api/a", "GET", [["accept", "json"]]), "get-json");
  assert.equal(r.match("x", "/api/a", "GET"), "get");
  // Equal conditions: configuration order (get before host).
  assert.equal(r.match("h.test", "/api/a", "GET"), "get");
  assert.equal(r.match("h.test", "/api/a", "POST"), "host");
  // Without a condition left: the first in the file.
  assert.equal(r.match("x", "/api/a", "POST"), "first");
  // The longest prefix beats any number of conditions.
  assert.equal(r.match("h.test", "/api/v2/a", "GET", [["accept", "json"]]), "longer");
  // A host that does not match rules its route out, whatever its prefix.
  assert.equal(r.match("other", "/x", "GET"), null);
  assert.equal(r.match("h.test", "/x", "GET"), "host-only");
});

Deno.test("#30.4: routePrecedence orders by prefix length, conditions, configuration order", () => {
  const a = compileRoute({ pool: "a", path_prefix: "/a/b" }, 3);
  const b = compileRoute({ pool: "b", path_prefix: "/a", methods: ["GET"], host: "h" }, 0);
  const c = compileRoute({ pool: "c", path_prefix: "/a", methods: ["GET"] }, 1);
  const d = compileRoute({ pool: "d", path_prefix: "/a", headers: { x: "1" } }, 2);
  assert.deepEqual([d, c, b, a].sort(routePrecedence).map((r) => r.pool), ["a", "b", "c", "d"]);
  assert.equal(b.conditions, 2);
  assert.equal(compileRoute({ pool: "e", host: "h" }, 0).prefix, "/");
});

Deno.test("#30.4: allowedMethods: the methods of routes that matched all but the method, else null", () => {
  const r = new Router([
    { pool: "writes", path_prefix: "/api", methods: ["POST", "PUT"] },
    { pool: "reads", path_prefix: "/api", methods: ["GET", "HEAD"] },
    { pool: "admin", host: "admin.test", path_prefix: "/api", methods: ["DELETE"] },
    { pool: "canary", path_prefix: "/api", methods: ["PATCH"], headers: { "x-canary": "1" } },
  ]);
  assert.equal(r.match("x", "/api/a", "DELETE"), null);
  assert.deepEqual(r.allowedMethods("x", "/api/a"), ["GET", "HEAD", "POST", "PUT"]);
  assert.deepEqual(r.allowedMethods("admin.test", "/api/a"), [
    "DELETE",
    "GET",
    "HEAD",
    "POST",
    "PUT",
  ]);
  assert.deepEqual(r.allowedMethods("x", "/api/a", [["x-canary", "1"]]), [
    "GET",
    "HEAD",
    "PATCH",
    "POST",
    "PUT",
  ]);
  assert.equal(r.allowedMethods("x", "/other"), null, "no route matched the path: 404");
  const any = new Router([{ pool: "p", path_prefix: "/p" }]);
  assert.equal(any.allowedMethods("x", "/q"), null);
});
