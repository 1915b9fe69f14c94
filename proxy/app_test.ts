import assert from "node:assert/strict";
import { parseConfigText } from "./config/load.ts";
import { createProxyApp, type ProxyAppDeps } from "./app.ts";
import { ProxyMetrics } from "./metrics/metrics.ts";
import { createRequestSink } from "./request_log.ts";
import type { IncomingRequest } from "./server/types.ts";
import type { Config } from "./config/schema.ts";
import {
  UpstreamError,
  type UpstreamRequest,
  type UpstreamResponse,
  type UpstreamTransport,
} from "./upstream/transport.ts";

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

/** A fake transport: `answer` decides each exchange; every exchange is recorded. */
function transportOf(
  answer: (req: UpstreamRequest) => Promise<UpstreamResponse> | UpstreamResponse,
): UpstreamTransport & { seen: UpstreamRequest[] } {
  const seen: UpstreamRequest[] = [];
  return {
    seen,
    exchange(req) {
      seen.push(req);
      try {
        return Promise.resolve(answer(req));
      } catch (err) {
        return Promise.reject(err);
      }
    },
    release() {},
    close: () => Promise.resolve(),
  };
}

/** The proxy app of {@link CONFIG} over `transport`: backends healthy and fresh metrics unless `over` says otherwise. */
function appOf(transport: UpstreamTransport, over: Partial<ProxyAppDeps> = {}) {
  return createProxyApp({
    config: CONFIG,
    metrics: new ProxyMetrics(),
    health: { isAvailable: () => true },
    transport,
    ...over,
  });
}

const ok = (status = 200): UpstreamResponse => ({
  status,
  headers: [["content-length", "2"]],
  body: new TextEncoder().encode("ok"),
});

Deno.test("proxy app: counters follow the spec's table, globally and per backend", async () => {
  const metrics = new ProxyMetrics();
  const transport = transportOf((req) => {
    if (req.path.endsWith("/boom")) throw new UpstreamError("reset", "connection reset");
    if (req.path.endsWith("/slow")) throw new UpstreamError("timeout", "no answer");
    return ok(req.path.endsWith("/missing") ? 404 : 200);
  });
  const app = appOf(transport, { metrics });
  // The server layer hands each finished request to the one sink, which counts it.
  const sink = createRequestSink(metrics);
  const served = async (path: string) => {
    const res = await app(request(path));
    sink.finished({
      listener: "h3",
      streamId: 0,
      remote: { hostname: "192.0.2.7", port: 5000 },
      method: "GET",
      authority: "example.test",
      path,
      status: res.status,
      bytes: 0,
      durationMs: 1,
      backend: res.backend,
      failure: res.failure,
      outcome: "complete",
    });
    return res.status;
  };
  assert.equal(await served("/api/x"), 200);
  assert.equal(await served("/api/missing"), 404);
  assert.equal(await served("/api/boom"), 502);
  assert.equal(await served("/api/slow"), 503);
  assert.equal(await served("/nothing"), 404);
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
  const first = transport.seen[0];
  assert.deepEqual([first.address, first.method, first.path, first.authority, first.timeoutMs], [
    "10.0.0.1:80",
    "GET",
    "/api/x",
    "example.test",
    50,
  ]);
});

Deno.test("proxy app: a connect failure is retried once on the next candidate", async () => {
  const metrics = new ProxyMetrics();
  const reports: string[] = [];
  const transport = transportOf((req) => {
    if (req.address === "10.0.0.1:80") throw new UpstreamError("connect", "connection refused");
    return ok();
  });
  const app = appOf(transport, {
    metrics,
    health: { isAvailable: () => true, report: (id, o) => reports.push(`${id}:${o}`) },
  });
  const res = await app(request("/api/x"));
  assert.equal(res.status, 200);
  assert.equal(res.backend, "a2");
  assert.deepEqual(transport.seen.map((r) => r.address), ["10.0.0.1:80", "10.0.0.2:80"]);
  assert.deepEqual(reports, ["a1:connect", "a2:success"]);
  assert.equal(metrics.global.get("requests_total"), 0n, "counted by the sink, not the app");
});

Deno.test("proxy app: a streamed body is never retried", async () => {
  const transport = transportOf(() => {
    throw new UpstreamError("connect", "connection refused");
  });
  const app = appOf(transport);
  const body = new ReadableStream<Uint8Array>({ pull: (c) => c.close() });
  const res = await app(request("/api/upload", "POST", body));
  assert.equal(res.status, 502);
  assert.equal(transport.seen.length, 1);
});

Deno.test("proxy app: no available backend → 503", async () => {
  const transport = transportOf(() => ok());
  const app = appOf(transport, { health: { isAvailable: () => false } });
  const res = await app(request("/api/x"));
  assert.equal(res.status, 503);
  assert.equal(transport.seen.length, 0);
});

Deno.test("proxy app: TRACE, TRACK and CONNECT are answered 501 by the proxy; health untouched", async () => {
  const reports: string[] = [];
  const transport = transportOf(() => ok());
  const app = appOf(transport, {
    health: { isAvailable: () => true, report: (id, o) => reports.push(`${id}:${o}`) },
  });
  for (const method of ["TRACE", "TRACK", "trace", "CONNECT"]) {
    assert.equal((await app(request("/api/x", method))).status, 501, method);
  }
  assert.equal(transport.seen.length, 0, "never reaches a backend");
  assert.deepEqual(reports, []);
  // Other methods pass exactly as sent: methods are case-sensitive (RFC 9110 §9.1).
  assert.equal((await app(request("/api/x", "get"))).status, 200);
  assert.equal(transport.seen[0].method, "get");
});

Deno.test("proxy app: a request the transport cannot express is 400 and never counts against the backend", async () => {
  const reports: string[] = [];
  const metrics = new ProxyMetrics();
  const transport = transportOf(() => {
    throw new UpstreamError("local", "invalid header");
  });
  const app = appOf(transport, {
    metrics,
    health: { isAvailable: () => true, report: (id, o) => reports.push(`${id}:${o}`) },
  });
  for (let i = 0; i < 20; i++) assert.equal((await app(request("/api/x"))).status, 400);
  assert.deepEqual(reports, []);
  assert.equal(metrics.backend("a1").get("backend_errors"), 0n);
});

Deno.test("RFC 3986 §5.2.4: an ambiguous target is 400 before routing; the routed path is forwarded unchanged", async () => {
  const transport = transportOf(() => ok());
  const app = appOf(transport);
  for (const p of ["/api/../secret", "/api/%2e%2e/secret", "/api/./x", "/api/x#f", "/api/a b"]) {
    assert.equal((await app(request(p))).status, 400, p);
  }
  assert.equal(transport.seen.length, 0);
  assert.equal((await app(request("/api//x?q=../a%20b"))).status, 200);
  assert.equal(transport.seen[0].path, "/api//x?q=../a%20b");
});

Deno.test("RFC 9114 §3.1: a :scheme other than https is 400", async () => {
  const transport = transportOf(() => ok());
  const app = appOf(transport);
  const req = request("/api/x");
  const res = await app({ ...req, head: { ...req.head, scheme: "http" } });
  assert.equal(res.status, 400);
  assert.equal(transport.seen.length, 0);
});

Deno.test("RFC 3986 §3.2: an impossible :authority, or host without :authority, is 400 and never forwarded", async () => {
  const transport = transportOf(() => ok());
  const metrics = new ProxyMetrics();
  const app = appOf(transport, { metrics });
  const req = request("/api/x");
  for (const authority of ["localhost:99999", "[::::]", "a@b.test"]) {
    const res = await app({ ...req, head: { ...req.head, authority } });
    assert.equal(res.status, 400, authority);
  }
  const hostOnly = await app({
    ...req,
    head: { ...req.head, authority: undefined, fields: [["host", "localhost:65536"]] },
  });
  assert.equal(hostOnly.status, 400);
  assert.equal(transport.seen.length, 0);
  assert.equal(metrics.global.get("backend_errors"), 0n);
  const fine = await app({ ...req, head: { ...req.head, authority: "localhost:65535" } });
  assert.equal(fine.status, 200);
});

Deno.test("proxy app: a pool whose backends are all disabled says no enabled backend, not no healthy one", async () => {
  const app = appOf(transportOf(() => ok()), {
    health: { isAvailable: () => false, isEnabled: () => false },
  });
  const res = await app(request("/api/x"));
  assert.equal(res.status, 503);
  const body = JSON.parse(new TextDecoder().decode(res.body as Uint8Array));
  assert.equal(body.error, "no_enabled_backend");
  assert.match(body.message, /no enabled backend in pool api/);
  const unhealthy = appOf(transportOf(() => ok()), {
    health: { isAvailable: () => false, isEnabled: () => true },
  });
  const res2 = await unhealthy(request("/api/x"));
  assert.equal(
    JSON.parse(new TextDecoder().decode(res2.body as Uint8Array)).error,
    "no_healthy_backend",
  );
});

Deno.test("proxy app: a request past its connection's share of the pool is 503 backend_share_exceeded and never forwarded; one that waits and gets a slot is", async () => {
  const transport = transportOf(() => ok());
  const app = appOf(transport);
  const asked: Array<[string, number]> = [];
  const base = request("/api/x");
  const refused = await app({
    ...base,
    claimBackendStream: (key, waitMs) => {
      asked.push([key, waitMs]);
      return Promise.resolve(false);
    },
  });
  assert.equal(refused.status, 503);
  assert.match(new TextDecoder().decode(refused.body as Uint8Array), /backend_share_exceeded/);
  assert.equal(transport.seen.length, 0);
  // The wait bound is the pool's request_timeout_ms.
  assert.deepEqual(asked, [["api", 50]]);
  assert.equal((await app({ ...base, claimBackendStream: () => false })).status, 503);
  assert.equal(transport.seen.length, 0);
  const waited = await app({ ...base, claimBackendStream: () => Promise.resolve(true) });
  assert.equal(waited.status, 200);
  assert.equal((await app({ ...base, claimBackendStream: () => true })).status, 200);
  assert.equal(transport.seen.length, 2);
});
