import assert from "node:assert/strict";
import { createProxyApp } from "../app.ts";
import { parseConfigText } from "../config/load.ts";
import type { Config } from "../config/types.ts";
import { ProxyMetrics } from "../metrics/metrics.ts";
import { RateLimitCounters } from "../rate_limit/counters.ts";
import type { RateDecision, RateLimiter } from "../rate_limit/limiter.ts";
import type { IncomingRequest, OutgoingResponse } from "../server/types.ts";
import type { UpstreamRequest, UpstreamTransport } from "../upstream/transport.ts";
import { PoolState } from "./pool.ts";
import { compilePoolRateLimit, rateLimited, takeRateLimit } from "./rate_limit.ts";

function configOf(limits: string, poolExtra = "rate_limit: per-client"): Config {
  const r = parseConfigText(
    `version: 1
listen: {protocol: http3, tls: {cert: c.pem, key: k.pem}}
rate_limits:
${limits}
upstream:
  api:
    route: {path_prefix: /api}
    ${poolExtra}
    backends: [{id: a1, address: "10.0.0.1:80"}]
  free:
    route: {path_prefix: /free}
    backends: [{id: f1, address: "10.0.0.2:80"}]
`,
    { checkFiles: false },
  );
  if (!r.ok) throw new Error(JSON.stringify(r));
  return r.config;
}

const LIMIT = "  - {name: per-client, requests_per_second: 1, burst: 2, key: client}";

function request(path: string, fields: Array<[string, string]> = []): IncomingRequest {
  return {
    head: { method: "GET", scheme: "https", authority: "example.test", path, fields },
    body: null,
    remote: { hostname: "192.0.2.7", port: 5000 },
    signal: new AbortController().signal,
  } as IncomingRequest;
}

function transport(): UpstreamTransport & { seen: UpstreamRequest[] } {
  const seen: UpstreamRequest[] = [];
  return {
    seen,
    exchange(req) {
      seen.push(req);
      return Promise.resolve({
        status: 200,
        headers: [["content-length", "2"]],
        body: new TextEncoder().encode("ok"),
      });
    },
    release() {},
    close: () => Promise.resolve(),
  };
}

const field = (res: OutgoingResponse, name: string) =>
  [...res.headers].find(([n]) => n === name)?.[1];

Deno.test("#30.1: rate limit phase: burst+1 requests: the last is a 429 that reaches no backend", async () => {
  const t = transport();
  const counters = new RateLimitCounters();
  let now = 0;
  const app = createProxyApp({
    config: configOf(LIMIT),
    transport: t,
    metrics: new ProxyMetrics(),
    health: { isAvailable: () => true },
    rateLimitCounters: counters,
    now: () => now,
  });
  const statuses = [];
  for (let i = 0; i < 3; i++) statuses.push((await app(request("/api/x"))).status);
  assert.deepEqual(statuses, [200, 200, 429]);
  assert.equal(t.seen.length, 2);
  const refused = await app(request("/api/x"));
  assert.equal(refused.status, 429);
  assert.equal(refused.rateLimit, "per-client");
  assert.equal(field(refused, "retry-after"), "1");
  assert.equal(field(refused, "ratelimit-policy"), '"per-client";q=2;w=2');
  assert.equal(field(refused, "ratelimit"), '"per-client";r=0;t=2');
  assert.equal(field(refused, "content-type"), "application/json");
  assert.deepEqual(
    JSON.parse(new TextDecoder().decode(refused.body as Uint8Array)).error,
    "rate_limited",
  );
  assert.deepEqual(counters.snapshot(["per-client"]), [{
    limit: "per-client",
    allowed: 2,
    limited: 2,
  }]);
  // A pool without a limit is unlimited.
  for (let i = 0; i < 5; i++) assert.equal((await app(request("/free/x"))).status, 200);
  // One token back a second later.
  now = 1000;
  assert.equal((await app(request("/api/x"))).status, 200);
  assert.equal(field(await app(request("/api/x")), "retry-after"), "1");
});

Deno.test("#30.1: rate limit phase: response_headers adds RateLimit fields to answers under the limit", async () => {
  const limits = [false, true].map((on) =>
    configOf(
      `  - {name: per-client, requests_per_second: 1, burst: 2, key: client, response_headers: ${on}}`,
    )
  );
  const [off, on] = await Promise.all(limits.map(async (config) =>
    await createProxyApp({
      config,
      transport: transport(),
      metrics: new ProxyMetrics(),
      health: { isAvailable: () => true },
      now: () => 0,
    })(request("/api/x"))
  ));
  assert.equal(field(off, "ratelimit"), undefined);
  assert.equal(field(on, "ratelimit"), '"per-client";r=1;t=1');
  assert.equal(field(on, "ratelimit-policy"), '"per-client";q=2;w=2');
});

Deno.test("#30.1: rate limit phase: buckets outlive a rebuild while the limit is unchanged; a change starts afresh", () => {
  const state = new PoolState();
  const counters = { counters: new RateLimitCounters(), now: () => 0 };
  const first = configOf(LIMIT);
  const a = compilePoolRateLimit(first, first.upstream.api, state, counters)!;
  const b = compilePoolRateLimit(first, first.upstream.api, state, counters)!;
  assert.equal(a.limiter, b.limiter, "same definition: same buckets");
  const headersOnly = configOf(LIMIT.replace("key: client", "key: client, response_headers: true"));
  const c = compilePoolRateLimit(headersOnly, headersOnly.upstream.api, state, counters)!;
  assert.equal(c.limiter, a.limiter, "response_headers does not reset the buckets");
  const faster = configOf(LIMIT.replace("burst: 2", "burst: 5"));
  const d = compilePoolRateLimit(faster, faster.upstream.api, state, counters)!;
  assert.notEqual(d.limiter, a.limiter, "a new burst: new buckets");
  const none = configOf(LIMIT, "");
  assert.equal(compilePoolRateLimit(none, none.upstream.api, state, counters), null);
  assert.equal(state.rateLimiter, null, "a pool without a limit keeps no buckets");
});

Deno.test("#30.1: rate limit phase: the limiter is given a digest of a bearer token, never the token", () => {
  const config = configOf(
    "  - {name: tokens, requests_per_second: 1, burst: 1, key: bearer}",
    "rate_limit: tokens",
  );
  const keys: string[] = [];
  const spy: RateLimiter = {
    size: 0,
    take(key): RateDecision {
      keys.push(key);
      return { allowed: false, remaining: 0, resetSeconds: 1, retryAfterSeconds: 1 };
    },
  };
  const state = new PoolState();
  const compiled = compilePoolRateLimit(config, config.upstream.api, state)!;
  const limit = { ...compiled, limiter: spy };
  const token = "tok-very-secret-123";
  const req = request("/api/x", [["authorization", `Bearer ${token}`]]);
  const decision = takeRateLimit(req, limit);
  const res = rateLimited(req, limit, decision);
  assert.equal(keys.length, 1);
  assert.ok(!keys[0].includes(token), keys[0]);
  const everything = JSON.stringify([...res.headers]) +
    new TextDecoder().decode(res.body as Uint8Array);
  assert.ok(!everything.includes(token), "not in the answer either");
});
