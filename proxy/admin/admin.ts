/**
 * The admin listener's application (Hono): `GET /health`, `GET /metrics`
 * (Prometheus text), and the admin API under `/admin/`. When a token is
 * configured, every call under `/admin/` (the mutating ones, and the reads
 * that list client addresses and backends) needs
 * `Authorization: Bearer <admin.token>`; `/health` and `/metrics` stay open
 * for probes and scrapers. The configuration refuses an admin listener on a
 * non-loopback address without a token, so this never fails open.
 *
 * @module
 */

import { Hono } from "hono";
import type { Context } from "hono";
import { bearerChecker } from "../../shared/bearer.ts";
import { PROMETHEUS_CONTENT_TYPE, renderPrometheus } from "../metrics/prometheus.ts";
import type { ProxyRuntime } from "../runtime.ts";
import type { ConnectionInfo } from "../server/server.ts";

/** The part of {@link ProxyRuntime} the admin application uses. */
export type AdminRuntime = Pick<
  ProxyRuntime,
  "backends" | "poolsWithoutHealthyBackend" | "metricsView" | "setEnabled" | "setWeight"
>;

/** What the admin application needs. */
export interface AdminDeps {
  /** The live runtime: backends, weights, metrics. */
  runtime: AdminRuntime;
  /** Open connections of the HTTP/3 listener. */
  connections(): ConnectionInfo[];
  /** Re-reads and validates the configuration file, then swaps it in. */
  reload(): Promise<ReloadOutcome>;
  /** Starts a graceful shutdown (as SIGTERM does). */
  drain(): void;
  /** Product version reported by `/health` and the `/metrics` build info. */
  version: string;
  /** `admin.token`: when set, every `/admin/` call needs it as a bearer token. */
  token?: string;
  /** Wall-clock ms since the epoch; injectable for tests. */
  now?: () => number;
  /** Resident memory in bytes; default `Deno.memoryUsage().rss`. */
  rss?: () => number;
}

/** Result of a reload. */
export type ReloadOutcome =
  | { ok: true; restartRequired: string[] }
  | { ok: false; errors: string[] };

function errorBody(c: Context, status: 400 | 401 | 404 | 409, error: string, message: string) {
  return c.json({ error, message }, status);
}

/**
 * Builds the admin application.
 *
 * @example
 * ```ts
 * declare const deps: AdminDeps;
 * Deno.serve({ hostname: "127.0.0.1", port: 9901 }, createAdminApp(deps).fetch);
 * ```
 */
export function createAdminApp(deps: AdminDeps): Hono {
  const now = deps.now ?? Date.now;
  const started = now();
  const rss = deps.rss ?? (() => Deno.memoryUsage().rss);
  const app = new Hono();

  const allowed = bearerChecker(deps.token === undefined ? [] : [deps.token]);
  app.use("/admin/*", async (c, next) => {
    if (deps.token !== undefined) {
      if (!allowed(c.req.header("authorization"))) {
        c.header("www-authenticate", 'Bearer realm="spooky-admin"');
        return errorBody(c, 401, "unauthorized", "a valid admin bearer token is required");
      }
    }
    await next();
  });

  app.get("/health", (c) => {
    const backends = Object.fromEntries(deps.runtime.backends().map((b) => [b.id, b.health]));
    const down = deps.runtime.poolsWithoutHealthyBackend();
    return c.json({
      status: down.length === 0 ? "ok" : "degraded",
      version: deps.version,
      uptime: Math.floor((now() - started) / 1000),
      backends,
      ...(down.length > 0 ? { pools_without_healthy_backend: down } : {}),
    }, down.length === 0 ? 200 : 503);
  });

  app.get("/metrics", (c) => {
    const text = renderPrometheus(deps.runtime.metricsView({
      version: deps.version,
      uptimeSeconds: (now() - started) / 1000,
      startTimeSeconds: started / 1000,
      residentBytes: rss(),
    }));
    return c.body(text, 200, { "content-type": PROMETHEUS_CONTENT_TYPE });
  });

  app.get("/admin/backends", (c) => c.json({ backends: deps.runtime.backends() }));

  for (const action of ["enable", "disable"] as const) {
    app.post(`/admin/backends/:id/${action}`, (c) => {
      const id = c.req.param("id");
      if (!deps.runtime.setEnabled(id, action === "enable")) {
        return errorBody(c, 404, "not_found", `no backend with id ${id}`);
      }
      return c.json({ backend: deps.runtime.backends().find((b) => b.id === id) });
    });
  }

  app.put("/admin/backends/:id/weight", async (c) => {
    const id = c.req.param("id");
    let body: unknown;
    try {
      body = await c.req.json();
    } catch {
      return errorBody(c, 400, "bad_request", 'body must be JSON like {"weight": 50}');
    }
    const weight = (body as { weight?: unknown })?.weight;
    if (typeof weight !== "number" || !Number.isInteger(weight) || weight < 0 || weight > 1e6) {
      return errorBody(c, 400, "bad_request", "weight must be an integer from 0 to 1000000");
    }
    if (!deps.runtime.setWeight(id, weight)) {
      return errorBody(c, 404, "not_found", `no backend with id ${id}`);
    }
    return c.json({ backend: deps.runtime.backends().find((b) => b.id === id) });
  });

  app.post("/admin/reload", async (c) => {
    const outcome = await deps.reload();
    if (!outcome.ok) {
      return c.json({
        error: "invalid_configuration",
        message: "the new configuration was rejected; the previous one keeps serving",
        errors: outcome.errors,
      }, 400);
    }
    return c.json({ reloaded: true, restart_required: outcome.restartRequired });
  });

  app.get("/admin/connections", (c) => c.json({ connections: deps.connections() }));

  app.post("/admin/drain", (c) => {
    deps.drain();
    return c.json({ draining: true }, 202);
  });

  app.notFound((c) => errorBody(c, 404, "not_found", "no such admin endpoint"));
  app.onError((err, c) => c.json({ error: "internal_error", message: String(err) }, 500));
  return app;
}
