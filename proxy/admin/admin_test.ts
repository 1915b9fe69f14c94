import assert from "node:assert/strict";
import { ProxyMetrics } from "../metrics/metrics.ts";
import type { BackendInfo } from "../runtime.ts";
import { type AdminDeps, type AdminRuntime, createAdminApp, type ReloadOutcome } from "./admin.ts";

const TOKEN = "s3cret-token";

/** An in-memory runtime with two backends of one pool. */
function fakeRuntime(): AdminRuntime & { list: BackendInfo[] } {
  const metrics = new ProxyMetrics();
  metrics.record("a", 200);
  const list: BackendInfo[] = ["a", "b"].map((id) => ({
    id,
    pool: "api",
    address: `127.0.0.1:${id === "a" ? 8081 : 8082}`,
    weight: 100,
    configuredWeight: 100,
    enabled: true,
    health: "healthy",
    ejected: false,
  }));
  return {
    list,
    backends: () => list.map((b) => ({ ...b })),
    poolsWithoutHealthyBackend: () =>
      list.some((b) => b.enabled && b.health === "healthy" && b.weight > 0) ? [] : ["api"],
    metricsView: (extra) => ({
      ...extra,
      global: metrics.global,
      backends: list.map((b) => ({
        id: b.id,
        pool: b.pool,
        counters: metrics.backend(b.id),
        healthy: b.health === "healthy",
        enabled: b.enabled,
        weight: b.weight,
        picks: 0,
      })),
      latency: metrics.latency.snapshot(),
      activeConnections: 0,
      activeStreams: 0,
    }),
    setEnabled(id, enabled) {
      const b = list.find((x) => x.id === id);
      if (b) b.enabled = enabled;
      return b !== undefined;
    },
    setWeight(id, weight) {
      const b = list.find((x) => x.id === id);
      if (b) b.weight = weight;
      return b !== undefined;
    },
  };
}

function setup(opts: { token?: string; reload?: () => Promise<ReloadOutcome> } = {}) {
  const runtime = fakeRuntime();
  const calls = { drain: 0, reload: 0 };
  const deps: AdminDeps = {
    runtime,
    connections: () => [],
    reload: () => {
      calls.reload++;
      return opts.reload?.() ?? Promise.resolve({ ok: true, restartRequired: [] });
    },
    drain: () => void calls.drain++,
    version: "9.9.9",
    token: opts.token,
    now: () => 1_000_000,
    rss: () => 4096,
  };
  const app = createAdminApp(deps);
  const call = (method: string, path: string, init: { token?: string; body?: unknown } = {}) => {
    const headers: Record<string, string> = {};
    if (init.token !== undefined) headers.authorization = `Bearer ${init.token}`;
    if (init.body !== undefined) headers["content-type"] = "application/json";
    return app.request(path, {
      method,
      headers,
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
  };
  return { app, runtime, calls, call };
}

/** Every route under /admin/, with a body where one is needed. */
const ADMIN_CALLS: Array<[method: string, path: string, body?: unknown]> = [
  ["GET", "/admin/backends"],
  ["GET", "/admin/connections"],
  ["POST", "/admin/backends/a/disable"],
  ["POST", "/admin/backends/a/enable"],
  ["PUT", "/admin/backends/a/weight", { weight: 5 }],
  ["POST", "/admin/reload"],
  ["POST", "/admin/drain"],
];

Deno.test("admin: with a token, every /admin/ call without it is 401 and changes nothing", async () => {
  const { call, runtime, calls } = setup({ token: TOKEN });
  for (const [method, path, body] of ADMIN_CALLS) {
    for (const token of [undefined, "wrong", `${TOKEN}x`, TOKEN.slice(0, -1)]) {
      const res = await call(method, path, { token, body });
      assert.equal(res.status, 401, `${method} ${path} with ${token}`);
      assert.match(res.headers.get("www-authenticate") ?? "", /^Bearer /);
      assert.equal((await res.json()).error, "unauthorized");
    }
  }
  assert.deepEqual(calls, { drain: 0, reload: 0 });
  assert.ok(runtime.list.every((b) => b.enabled && b.weight === 100));
});

Deno.test("admin: with a token, the right bearer token is accepted on every /admin/ call", async () => {
  const { call, runtime, calls } = setup({ token: TOKEN });
  for (const [method, path, body] of ADMIN_CALLS) {
    const res = await call(method, path, { token: TOKEN, body });
    assert.ok(res.status < 300, `${method} ${path}: ${res.status}`);
    await res.body?.cancel();
  }
  assert.deepEqual(calls, { drain: 1, reload: 1 });
  assert.equal(runtime.list[0].weight, 5);
  // The scheme name is case-insensitive (RFC 9110 §11.1).
  const lower = await setup({ token: TOKEN }).app.request("/admin/backends", {
    headers: { authorization: `bearer ${TOKEN}` },
  });
  assert.equal(lower.status, 200);
});

Deno.test("admin: /health and /metrics stay open for probes and scrapers when a token is set", async () => {
  const { call } = setup({ token: TOKEN });
  const health = await call("GET", "/health");
  assert.equal(health.status, 200);
  assert.deepEqual(await health.json(), {
    status: "ok",
    version: "9.9.9",
    uptime: 0,
    backends: { a: "healthy", b: "healthy" },
  });
  const metrics = await call("GET", "/metrics");
  assert.equal(metrics.status, 200);
  assert.match(metrics.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/);
  assert.match(await metrics.text(), /^spooky_requests_total\{code="2xx"\} 1$/m);
});

Deno.test("admin: without a token (loopback only, see config) calls need no authorization", async () => {
  const { call, runtime } = setup();
  const res = await call("POST", "/admin/backends/b/disable");
  assert.equal(res.status, 200);
  assert.equal((await res.json()).backend.enabled, false);
  assert.equal(runtime.list[1].enabled, false);
});

Deno.test("admin: /health is 503 and names the pool when no backend is available", async () => {
  const { call } = setup();
  await (await call("POST", "/admin/backends/a/disable")).body?.cancel();
  await (await call("POST", "/admin/backends/b/disable")).body?.cancel();
  const res = await call("GET", "/health");
  assert.equal(res.status, 503);
  const body = await res.json();
  assert.equal(body.status, "degraded");
  assert.deepEqual(body.pools_without_healthy_backend, ["api"]);
});

Deno.test("admin: unknown backends are 404, bad weights 400", async () => {
  const { call } = setup({ token: TOKEN });
  assert.equal((await call("POST", "/admin/backends/zz/disable", { token: TOKEN })).status, 404);
  assert.equal(
    (await call("PUT", "/admin/backends/zz/weight", { token: TOKEN, body: { weight: 1 } })).status,
    404,
  );
  for (const weight of [-1, 1.5, "10", 1e6 + 1, null]) {
    const res = await call("PUT", "/admin/backends/a/weight", { token: TOKEN, body: { weight } });
    assert.equal(res.status, 400, String(weight));
    await res.body?.cancel();
  }
  const notJson = await setup({ token: TOKEN }).app.request("/admin/backends/a/weight", {
    method: "PUT",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: "{",
  });
  assert.equal(notJson.status, 400);
  assert.equal((await call("GET", "/nowhere")).status, 404);
});

Deno.test("admin: a rejected reload is 400 with the reasons", async () => {
  const { call } = setup({
    token: TOKEN,
    reload: () => Promise.resolve({ ok: false, errors: ["version (line 1): must be 1"] }),
  });
  const res = await call("POST", "/admin/reload", { token: TOKEN });
  assert.equal(res.status, 400);
  const body = await res.json();
  assert.equal(body.error, "invalid_configuration");
  assert.deepEqual(body.errors, ["version (line 1): must be 1"]);
});

Deno.test("admin: drain answers 202 and starts the shutdown", async () => {
  const { call, calls } = setup({ token: TOKEN });
  const res = await call("POST", "/admin/drain", { token: TOKEN });
  assert.equal(res.status, 202);
  assert.deepEqual(await res.json(), { draining: true });
  assert.equal(calls.drain, 1);
});
