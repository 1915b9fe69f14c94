import assert from "node:assert/strict";
import { parseConfigText } from "./config/load.ts";
import { createProxyApp } from "./app.ts";
import { ProxyMetrics } from "./metrics/metrics.ts";
import type { IncomingRequest } from "./server/types.ts";
import type { Config } from "./config/schema.ts";

function configOf(yaml: string): Config {
  const r = parseConfigText(yaml, { checkFiles: false });
  if (!r.ok) throw new Error(JSON.stringify(r));
  return r.config;
}

const CONFIG = configOf(`version: 1
listen: {protocol: http3, tls: {cert: c.pem, key: k.pem}}
upstream:
  api:
    route: {path_prefix: /api}
    request_timeout_ms: 50
    backends: [{id: a1, address: "10.0.0.1:80"}, {id: a2, address: "10.0.0.2:80"}]
`);

function request(path: string, method = "GET", body: ReadableStream<Uint8Array> | null = null) {
  return {
    head: { method, scheme: "https", authority: "example.test", path, fields: [] },
    body,
    remote: { hostname: "192.0.2.7", port: 5000 },
    signal: new AbortController().signal,
  } as IncomingRequest;
}

Deno.test("proxy app: counters follow the spec's table, globally and per backend", async () => {
  const metrics = new ProxyMetrics();
  const calls: string[] = [];
  const app = createProxyApp({
    config: CONFIG,
    metrics,
    health: { isAvailable: () => true },
    fetchBackend: (b, url, init) => {
      calls.push(`${b.id} ${init.method} ${url}`);
      if (url.endsWith("/boom")) return Promise.reject(new TypeError("connection reset"));
      if (url.endsWith("/slow")) {
        return new Promise((_, reject) =>
          init.signal!.addEventListener("abort", () => reject(init.signal!.reason))
        );
      }
      return Promise.resolve(new Response("ok", { status: url.endsWith("/missing") ? 404 : 200 }));
    },
  });
  assert.equal((await app(request("/api/x"))).status, 200);
  assert.equal((await app(request("/api/missing"))).status, 404);
  assert.equal((await app(request("/api/boom"))).status, 502);
  assert.equal((await app(request("/api/slow"))).status, 503);
  assert.equal((await app(request("/nothing"))).status, 404);
  assert.deepEqual(metrics.global.snapshot(), {
    requests_total: 5n,
    requests_success: 1n,
    requests_failure: 4n,
    backend_timeouts: 1n,
    backend_errors: 1n,
  });
  const perBackend = [...metrics.backends().values()].reduce(
    (n, s) => n + s.get("requests_total"),
    0n,
  );
  assert.equal(perBackend, 4n, "the unrouted request belongs to no backend");
  assert.equal(calls[0], "a1 GET http://10.0.0.1:80/api/x");
});

Deno.test("proxy app: a connect failure is retried once on the next candidate", async () => {
  const metrics = new ProxyMetrics();
  const tried: string[] = [];
  const reports: string[] = [];
  const app = createProxyApp({
    config: CONFIG,
    metrics,
    health: { isAvailable: () => true, report: (id, o) => reports.push(`${id}:${o}`) },
    fetchBackend: (b) => {
      tried.push(b.id);
      if (b.id === "a1") {
        return Promise.reject(new TypeError("client error (Connect): connection refused"));
      }
      return Promise.resolve(new Response("ok"));
    },
  });
  const res = await app(request("/api/x"));
  assert.equal(res.status, 200);
  assert.deepEqual(tried, ["a1", "a2"]);
  assert.deepEqual(reports, ["a1:connect", "a2:success"]);
  assert.equal(metrics.global.get("requests_success"), 1n);
});

Deno.test("proxy app: a streamed body is never retried", async () => {
  const tried: string[] = [];
  const app = createProxyApp({
    config: CONFIG,
    metrics: new ProxyMetrics(),
    health: { isAvailable: () => true },
    fetchBackend: (b) => {
      tried.push(b.id);
      return Promise.reject(new TypeError("client error (Connect): connection refused"));
    },
  });
  const body = new ReadableStream<Uint8Array>({ pull: (c) => c.close() });
  const res = await app(request("/api/upload", "POST", body));
  assert.equal(res.status, 502);
  assert.deepEqual(tried, ["a1"]);
});

Deno.test("proxy app: no available backend → 503", async () => {
  const app = createProxyApp({
    config: CONFIG,
    metrics: new ProxyMetrics(),
    health: { isAvailable: () => false },
    fetchBackend: () => Promise.reject(new Error("must not be called")),
  });
  const res = await app(request("/api/x"));
  assert.equal(res.status, 503);
});

Deno.test("proxy app: request_timeout_ms starts when a streamed upload has been sent", async () => {
  const slowBody = () => {
    let n = 0;
    return new ReadableStream<Uint8Array>({
      async pull(c) {
        await new Promise((r) => setTimeout(r, 30));
        if (n++ < 5) c.enqueue(new Uint8Array(10));
        else c.close();
      },
    });
  };
  const app = createProxyApp({
    config: CONFIG, // request_timeout_ms: 50
    metrics: new ProxyMetrics(),
    health: { isAvailable: () => true },
    fetchBackend: async (_b, url, init) => {
      const size = (await new Response(init.body).arrayBuffer()).byteLength;
      if (url.endsWith("/slow-answer")) {
        await new Promise((_, reject) =>
          init.signal!.addEventListener("abort", () => reject(init.signal!.reason))
        );
      }
      return new Response(String(size));
    },
  });
  // 150 ms of upload against a 50 ms timeout: not cut.
  const ok = await app(request("/api/upload", "POST", slowBody()));
  assert.equal(ok.status, 200);
  // A backend that does not answer after the upload still times out.
  const late = await app(request("/api/slow-answer", "POST", slowBody()));
  assert.equal(late.status, 503);
});
