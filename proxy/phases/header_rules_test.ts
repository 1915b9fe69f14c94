import assert from "node:assert/strict";
import { ConfigSchema } from "../config/schema.ts";
import type { HeadersConfig } from "../config/types.ts";
import { ProxyMetrics } from "../metrics/metrics.ts";
import type { IncomingRequest } from "../server/types.ts";
import type { UpstreamRequest, UpstreamResponse } from "../upstream/transport.ts";
import { createForwarder } from "./forward.ts";
import { applyHeaderRules, compileHeaderRules } from "./header_rules.ts";
import { buildPools, type PoolContext, PoolState } from "./pool.ts";
import { downstreamResponse } from "./respond.ts";
import { upstreamAuthority, upstreamHeaders } from "./upstream_request.ts";

const rules = (set: Record<string, string>, add: Record<string, string>, remove: string[]) =>
  compileHeaderRules({ set, add, remove })!;

/** Pool "p" with `headers` as the phases see it (validated and lowercased by the schema). */
function poolWith(headers?: Record<string, unknown>): PoolContext {
  const config = ConfigSchema.parse({
    version: 1,
    listen: { protocol: "http3", port: 9889, tls: { cert: "c.pem", key: "k.pem" } },
    upstream: {
      p: { route: { path_prefix: "/" }, backends: [{ id: "b1", address: "127.0.0.1:1" }], headers },
    },
  });
  return buildPools(config, () => new PoolState()).get("p")!;
}

function incoming(fields: Array<[string, string]>): IncomingRequest {
  return {
    head: { method: "GET", scheme: "https", authority: "client.test", path: "/x", fields },
    body: null,
    remote: { hostname: "192.0.2.7", port: 5000 },
    signal: new AbortController().signal,
  };
}

Deno.test("#29.3: no rules, or empty ones, compile to null: the hot path does nothing", () => {
  assert.equal(compileHeaderRules(undefined), null);
  assert.equal(compileHeaderRules({ set: {}, add: {}, remove: [] }), null);
  const pool = poolWith();
  assert.equal(pool.requestRules, null);
  assert.equal(pool.responseRules, null);
  assert.equal(poolWith({ request: {}, response: {} }).requestRules, null);
});

Deno.test("#29.3: remove, then set (replaces every field of the name), then add (appends)", () => {
  const r = rules({ "x-a": "set" }, { "x-a": "added", "x-b": "b" }, ["x-gone", "x-b"]);
  const out = applyHeaderRules([
    ["x-a", "old1"],
    ["x-gone", "1"],
    ["accept", "*/*"],
    ["x-a", "old2"],
    ["x-b", "client"],
  ], r);
  assert.deepEqual(out, [["accept", "*/*"], ["x-a", "set"], ["x-a", "added"], ["x-b", "b"]]);
});

Deno.test("#29.3: a list with no dropped name is appended to in place, not copied", () => {
  const fields: Array<[string, string]> = [["accept", "*/*"]];
  assert.equal(applyHeaderRules(fields, rules({}, { "x-b": "b" }, ["x-gone"])), fields);
  assert.deepEqual(fields, [["accept", "*/*"], ["x-b", "b"]]);
});

Deno.test("#29.3: set.host is the upstream authority, never a field; x-forwarded-host and forwarded keep the client's", () => {
  const pool = poolWith({ request: { set: { Host: "site.internal" }, add: { "X-Env": "prod" } } });
  const fields = upstreamHeaders(
    incoming([["accept", "*/*"]]),
    "client.test",
    undefined,
    pool.requestRules,
  );
  const map = new Map(fields);
  assert.equal(fields.filter(([n]) => n === "host").length, 0);
  assert.equal(map.get("x-forwarded-host"), "client.test");
  assert.match(map.get("forwarded")!, /host=client\.test/);
  assert.equal(map.get("x-env"), "prod");
  assert.equal(upstreamAuthority("client.test", pool.requestRules), "site.internal");
  assert.equal(upstreamAuthority("client.test", null), "client.test");
  assert.equal(
    upstreamAuthority("client.test", poolWith({ request: { remove: ["x-a"] } }).requestRules),
    "client.test",
  );
});

Deno.test("#29.3: request rules apply to the forwarding fields the proxy adds too", () => {
  const pool = poolWith({ request: { remove: ["via", "x-real-ip"] } });
  const names = upstreamHeaders(incoming([]), "client.test", undefined, pool.requestRules).map((
    [n],
  ) => n);
  assert.equal(names.includes("via"), false);
  assert.equal(names.includes("x-real-ip"), false);
  assert.ok(names.includes("x-forwarded-for"));
});

Deno.test("#29.3: response rules rewrite the backend's answer, after the proxy's via", () => {
  const res: UpstreamResponse = {
    status: 200,
    headers: [["server", "Caddy"], ["content-length", "2"], ["x-a", "1"]],
    body: new Uint8Array([0x6f, 0x6b]),
  };
  const pool = poolWith({
    response: { set: { "X-A": "2" }, remove: ["server", "via"], add: { "x-b": "b" } },
  });
  assert.deepEqual([...downstreamResponse("b1", res, 1, pool.responseRules).headers], [
    ["content-length", "2"],
    ["x-a", "2"],
    ["x-b", "b"],
  ]);
  const plain = [...downstreamResponse("b1", res, 1).headers].map(([n]) => n);
  assert.deepEqual(plain, ["server", "content-length", "x-a", "via"]);
});

Deno.test("#29.3: the forwarder sends set.host as the authority (never a second host field), and rewrites the answer", async () => {
  const seen: UpstreamRequest[] = [];
  const forward = createForwarder({
    transport: {
      exchange(req) {
        seen.push(req);
        return Promise.resolve({ status: 200, headers: [["server", "x"]], body: null });
      },
      release() {},
      close: () => Promise.resolve(),
    },
    health: { isAvailable: () => true },
    metrics: new ProxyMetrics(),
  });
  const headers: HeadersConfig = {
    request: { set: { host: "site.internal:8080" }, add: {}, remove: [] },
    response: { set: {}, add: {}, remove: ["server"] },
  };
  const pool = poolWith(headers as Record<string, unknown>);
  const one = [{ id: "b1", address: "127.0.0.1:1", weight: 1 }];
  const res = await forward(incoming([]), pool, one, "/x", "client.test");
  assert.equal(seen[0].authority, "site.internal:8080");
  assert.equal(new Map(seen[0].headers).get("host"), undefined);
  assert.deepEqual([...res.headers].map(([n]) => n), ["via"]);
  // Without rules: the client's authority, the answer untouched.
  await forward(incoming([]), poolWith(), one, "/x", "client.test");
  assert.equal(seen[1].authority, "client.test");
  assert.equal(new Map(seen[1].headers).get("host"), undefined);
});
