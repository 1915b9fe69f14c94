/**
 * The admin listener's application (Hono): `GET /health`, `GET /metrics`
 * (Prometheus text), and the admin API under `/admin/`. Who may call is
 * decided before any route (`access.ts`): the peer's address
 * (`admin.allow`), then, for every call under `/admin/`, a bearer token of
 * `admin.tokens` or `admin.token` whose role (`roles.ts`: viewer, operator,
 * admin) allows it, with mutating and refused calls in the audit log
 * (`audit.ts`); `/health`, `/ready` (`ready.ts`)
 * and `/metrics` stay open for probes and scrapers. The configuration refuses an admin listener on a
 * non-loopback address without a token, so this never fails open.
 *
 * @module
 */

import { Hono } from "hono";
import type { Context } from "hono";
import { PROMETHEUS_CONTENT_TYPE, renderPrometheus } from "../metrics/prometheus.ts";
import { type AdminAccess, adminAccessOf, AdminCounts, adminGuard } from "./access.ts";
import type { AuditSink } from "./audit.ts";
import type { ProxyRuntime } from "../runtime.ts";
import type { ConnectionInfo } from "../server/server.ts";
import { poolsReadiness, type Readiness, readyResponse } from "./ready.ts";

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
  /**
   * Who may call now (`access.ts`: `admin.allow`, `admin.tokens` with their
   * roles, `admin.token`), asked on every call so that a reload applies;
   * default: `token` alone, as the `admin` role.
   */
  access?: () => AdminAccess;
  /** The audit log (`admin.audit_log`); none when absent. */
  audit?: AuditSink;
  /** Wall-clock ms since the epoch; injectable for tests. */
  now?: () => number;
  /** Resident memory in bytes; default `Deno.memoryUsage().rss`. */
  rss?: () => number;
  /**
   * What `GET /ready` answers (`ready.ts`: listeners, drain, pools); default:
   * ready while every pool has an available backend.
   */
  readiness?: () => Readiness;
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

  // The peer's address, then the credential and its role (`access.ts`), before any route.
  const counts = new AdminCounts();
  const fixed = deps.access === undefined ? adminAccessOf({ token: deps.token }, []) : undefined;
  app.use("*", adminGuard({ access: deps.access ?? (() => fixed!), audit: deps.audit, counts }));

  app.get("/health", (c) => {
    // A disabled backend takes no request: "disabled", whatever its probes say.
    const backends = Object.fromEntries(
      deps.runtime.backends().map((b) => [b.id, b.enabled ? b.health : "disabled"]),
    );
    const down = deps.runtime.poolsWithoutHealthyBackend();
    return c.json({
      status: down.length === 0 ? "ok" : "degraded",
      version: deps.version,
      uptime: Math.floor((now() - started) / 1000),
      backends,
      ...(down.length > 0 ? { pools_without_healthy_backend: down } : {}),
    }, down.length === 0 ? 200 : 503);
  });

  app.get("/ready", (c) =>
    readyResponse(
      c,
      deps.readiness?.() ?? poolsReadiness(deps.runtime.poolsWithoutHealthyBackend()),
    ));

  app.get("/metrics", (c) => {
    const text = renderPrometheus({
      ...deps.runtime.metricsView({
        version: deps.version,
        uptimeSeconds: (now() - started) / 1000,
        startTimeSeconds: started / 1000,
        residentBytes: rss(),
      }),
      admin: counts.snapshot(),
    });
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
