import assert from "node:assert/strict";
import { normalizeHost, Router } from "./router.ts";

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
