/**
 * The cost of a rate limit per request: `deno bench proxy/phases/rate_limit_bench.ts`.
 * The whole handler (fake transport) for a pool without a limit and with
 * one per key kind, and the parts: the GCRA decision, the client key (an
 * address group), the bearer key (SHA-256 with `node:crypto`, synchronous,
 * against WebCrypto's asynchronous digest).
 */
import { createProxyApp } from "../app.ts";
import { parseConfigText } from "../config/load.ts";
import { ProxyMetrics } from "../metrics/metrics.ts";
import { bearerKey, compileKey } from "../rate_limit/key.ts";
import { GcraLimiter } from "../rate_limit/limiter.ts";
import type { IncomingRequest } from "../server/types.ts";
import type { UpstreamTransport } from "../upstream/transport.ts";

const config = (() => {
  const r = parseConfigText(
    `version: 1
listen: {protocol: http3, tls: {cert: c.pem, key: k.pem}}
rate_limits:
  - {name: client, requests_per_second: 1e9, burst: 1000000, key: client}
  - {name: bearer, requests_per_second: 1e9, burst: 1000000, key: bearer}
upstream:
  free: {route: {path_prefix: /free}, backends: [{id: a, address: "10.0.0.1:80"}]}
  client: {route: {path_prefix: /client}, rate_limit: client, backends: [{id: b, address: "10.0.0.1:80"}]}
  bearer: {route: {path_prefix: /bearer}, rate_limit: bearer, backends: [{id: c, address: "10.0.0.1:80"}]}
`,
    { checkFiles: false },
  );
  if (!r.ok) throw new Error(JSON.stringify(r));
  return r.config;
})();

const transport: UpstreamTransport = {
  exchange: () => Promise.resolve({ status: 204, headers: [], body: null }),
  release() {},
  close: () => Promise.resolve(),
};
const app = createProxyApp({
  config,
  transport,
  metrics: new ProxyMetrics(),
  health: { isAvailable: () => true },
});

function request(path: string): IncomingRequest {
  return {
    head: {
      method: "GET",
      scheme: "https",
      authority: "example.test",
      path,
      fields: [["accept", "*/*"], ["authorization", "Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig"]],
    },
    body: null,
    remote: { hostname: "2001:db8::7", port: 5000 },
    signal: new AbortController().signal,
  } as IncomingRequest;
}
const free = request("/free/x");
const client = request("/client/x");
const bearer = request("/bearer/x");

Deno.bench("handler, pool without a limit", { group: "handler", baseline: true }, async () => {
  await app(free);
});
Deno.bench("handler, rate limit by client", { group: "handler" }, async () => {
  await app(client);
});
Deno.bench("handler, rate limit by bearer", { group: "handler" }, async () => {
  await app(bearer);
});

const limiter = new GcraLimiter({ requestsPerSecond: 1e9, burst: 1e6, maxKeys: 100_000 });
let t = 0;
Deno.bench("GCRA take, one key", { group: "parts" }, () => {
  limiter.take("4:192.0.2.0/24", t++);
});
let i = 0;
Deno.bench("GCRA take, a new key each time (eviction at the cap)", { group: "parts" }, () => {
  limiter.take(`k${i++}`, 0);
});
const clientKey = compileKey("client", { trusted: () => false, prefix: { v4: 32, v6: 64 } });
Deno.bench("client key (IPv6 address group)", { group: "parts" }, () => {
  clientKey(client);
});
Deno.bench("bearer key, node:crypto SHA-256 (sync)", { group: "parts" }, () => {
  bearerKey("Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig");
});
const encoder = new TextEncoder();
Deno.bench("bearer key, WebCrypto SHA-256 (async)", { group: "parts" }, async () => {
  await crypto.subtle.digest("SHA-256", encoder.encode("eyJhbGciOiJIUzI1NiJ9.payload.sig"));
});
