/**
 * #30.4: the route phase through the application: methods and header
 * conditions choose the pool; a request that matched a route in everything
 * but its method is answered 405 with `Allow`, any other unmatched one 404;
 * neither reaches a backend.
 */
import assert from "node:assert/strict";
import { createProxyApp } from "../app.ts";
import { parseConfigText } from "../config/load.ts";
import { ProxyMetrics } from "../metrics/metrics.ts";
import type { IncomingRequest } from "../server/types.ts";
import type { UpstreamRequest, UpstreamTransport } from "../upstream/transport.ts";

const parsed = parseConfigText(
  `version: 1
listen: {protocol: http3, tls: {cert: c.pem, key: k.pem}}
upstream:
  reads:
    route: {path_prefix: /api, methods: [GET, HEAD]}
    backends: [{id: r, address: "10.0.0.1:80"}]
  writes:
    route: {path_prefix: /api, methods: [POST]}
    backends: [{id: w, address: "10.0.0.2:80"}]
  canary:
    route: {path_prefix: /api, methods: [POST], headers: {x-canary: "1"}}
    backends: [{id: c, address: "10.0.0.3:80"}]
  static:
    route: {path_prefix: /static}
    backends: [{id: s, address: "10.0.0.4:80"}]
`,
  { checkFiles: false },
);
if (!parsed.ok) throw new Error(JSON.stringify(parsed));

const seen: UpstreamRequest[] = [];
const transport: UpstreamTransport = {
  exchange(req) {
    seen.push(req);
    return Promise.resolve({ status: 200, headers: [], body: null });
  },
  release() {},
  close: () => Promise.resolve(),
};
const app = createProxyApp({
  config: parsed.config,
  metrics: new ProxyMetrics(),
  health: { isAvailable: () => true },
  transport,
});

function request(method: string, path: string, fields: Array<[string, string]> = []) {
  return {
    head: { method, scheme: "https", authority: "example.test", path, fields },
    body: null,
    remote: { hostname: "192.0.2.7", port: 5000 },
    signal: new AbortController().signal,
  } as IncomingRequest;
}

/** The backend a request reached, or its status when the proxy answered it. */
async function servedBy(method: string, path: string, fields: Array<[string, string]> = []) {
  const before = seen.length;
  const res = await app(request(method, path, fields));
  return seen.length > before ? seen[seen.length - 1].address : res.status;
}

Deno.test("#30.4: route phase: methods and headers choose the pool", async () => {
  assert.equal(await servedBy("GET", "/api/a"), "10.0.0.1:80");
  assert.equal(await servedBy("POST", "/api/a"), "10.0.0.2:80");
  assert.equal(await servedBy("POST", "/api/a", [["x-canary", "1"]]), "10.0.0.3:80");
  assert.equal(await servedBy("GET", "/static/app.js"), "10.0.0.4:80");
  assert.equal(await servedBy("GET", "/staticx"), 404);
});

Deno.test("#30.4: route phase: only the method differs: 405 with Allow, JSON body, no backend", async () => {
  const before = seen.length;
  const res = await app(request("DELETE", "/api/a"));
  assert.equal(res.status, 405);
  assert.deepEqual([...res.headers].find(([n]) => n === "allow"), ["allow", "GET, HEAD, POST"]);
  const body = JSON.parse(new TextDecoder().decode(res.body as Uint8Array));
  assert.equal(body.error, "method_not_allowed");
  assert.match(body.message, /DELETE is not served here \(allowed: GET, HEAD, POST\)/);
  assert.equal(seen.length, before, "nothing reached a backend");
  // Another path: no route at all, 404 without Allow.
  const other = await app(request("DELETE", "/other"));
  assert.equal(other.status, 404);
  assert.equal([...other.headers].find(([n]) => n === "allow"), undefined);
});
