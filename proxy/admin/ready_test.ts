/**
 * #30.6: readiness: listeners, drain and pools (`admin.ready.require`), and
 * the `/ready` answer of the admin application, which needs no token.
 */
import assert from "node:assert/strict";
import { ConfigSchema } from "../config/schema.ts";
import type { Config } from "../config/types.ts";
import { restartRequired } from "../runtime.ts";
import { createAdminApp } from "./admin.ts";
import { ProxyLifecycle, readiness, type ReadyRuntime } from "./ready.ts";

function configOf(admin: Record<string, unknown> = { port: 0 }): Config {
  const pool = (prefix: string, id: string) => ({
    route: { path_prefix: prefix },
    backends: [{ id, address: "127.0.0.1:1" }],
  });
  return ConfigSchema.parse({
    version: 1,
    listen: { protocol: "http3", tls: { cert: "c", key: "k" } },
    upstream: { web: pool("/", "w"), api: pool("/api", "a") },
    admin,
  });
}

function runtimeOf(config: Config, down: string[]): ReadyRuntime {
  return { config, poolsWithoutHealthyBackend: () => down };
}

function listening(): ProxyLifecycle {
  const l = new ProxyLifecycle();
  l.markListening();
  return l;
}

Deno.test("#30.6: readiness: ready once listening, every pool with a backend (all_pools)", () => {
  const config = configOf();
  assert.deepEqual(readiness(runtimeOf(config, []), new ProxyLifecycle()).reasons, [
    "starting: the listeners are not up yet",
  ]);
  assert.deepEqual(readiness(runtimeOf(config, []), listening()), {
    ready: true,
    reasons: [],
    poolsWithoutHealthyBackend: [],
  });
  const one = readiness(runtimeOf(config, ["api"]), listening());
  assert.equal(one.ready, false);
  assert.deepEqual(one.reasons, ["pool api has no healthy enabled backend"]);
});

Deno.test("#30.6: readiness: any_pool needs one pool with a backend", () => {
  const config = configOf({ port: 0, ready: { require: "any_pool" } });
  assert.equal(readiness(runtimeOf(config, ["api"]), listening()).ready, true);
  assert.deepEqual(readiness(runtimeOf(config, ["api", "web"]), listening()).reasons, [
    "no pool has a healthy enabled backend (admin.ready.require: any_pool)",
  ]);
});

Deno.test("#30.6: readiness: draining is not ready, whatever the pools", () => {
  const lifecycle = listening();
  lifecycle.markDraining();
  const r = readiness(runtimeOf(configOf(), []), lifecycle);
  assert.equal(r.ready, false);
  assert.deepEqual(r.reasons, ["draining: the proxy is shutting down"]);
});

Deno.test("#30.6: admin.ready is applied by a reload, not named in restart_required", () => {
  const running = configOf();
  assert.deepEqual(
    restartRequired(running, configOf({ port: 0, ready: { require: "any_pool" } })),
    [],
  );
  assert.deepEqual(restartRequired(running, configOf({ port: 1 })), ["admin"]);
});

Deno.test("#30.6: GET /ready needs no token; 200 or 503 with the reasons, never cached", async () => {
  let r = { ready: true, reasons: [] as string[], poolsWithoutHealthyBackend: [] as string[] };
  const app = createAdminApp({
    runtime: {
      backends: () => [],
      poolsWithoutHealthyBackend: () => [],
      metricsView: () => {
        throw new Error("not used");
      },
      setEnabled: () => false,
      setWeight: () => false,
    },
    connections: () => [],
    reload: () => Promise.resolve({ ok: true, restartRequired: [] }),
    drain: () => {},
    version: "1.0.0",
    token: "secret",
    readiness: () => r,
  });
  const ok = await app.request("/ready");
  assert.equal(ok.status, 200);
  assert.equal(ok.headers.get("cache-control"), "no-store");
  assert.deepEqual(await ok.json(), { status: "ready" });
  r = {
    ready: false,
    reasons: ["draining: the proxy is shutting down"],
    poolsWithoutHealthyBackend: [],
  };
  const draining = await app.request("/ready");
  assert.equal(draining.status, 503);
  assert.deepEqual(await draining.json(), {
    status: "not_ready",
    reasons: ["draining: the proxy is shutting down"],
    pools_without_healthy_backend: [],
  });
});
