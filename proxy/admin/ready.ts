/**
 * `GET /ready`: whether a load balancer should send this instance traffic.
 * 200 once the listeners are up, with the configuration loaded, while the
 * pools have a backend to send to: every pool (`admin.ready.require:
 * all_pools`, the default) or at least one (`any_pool`) has an enabled,
 * healthy backend of weight above 0. Otherwise 503, with the reasons. From
 * the moment a drain starts (SIGTERM, SIGINT, `POST /admin/drain`) it is 503
 * at once, while connections are still being served, so the load balancer
 * stops sending before they close.
 *
 * `/health` is the detailed view of every backend (liveness of the parts);
 * `/ready` is the one answer a probe needs. Like `/health`, it needs no
 * token: load balancers probe without credentials, and it tells nothing
 * `/health` does not.
 *
 * @example
 * ```ts
 * import type { ProxyRuntime } from "../runtime.ts";
 * declare const runtime: ProxyRuntime;
 *
 * const lifecycle = new ProxyLifecycle();
 * lifecycle.markListening();
 * readiness(runtime, lifecycle); // { ready: true, reasons: [] }
 * lifecycle.markDraining();
 * readiness(runtime, lifecycle).reasons; // ["draining: the proxy is shutting down"]
 * ```
 *
 * @module
 */

import type { Context } from "hono";
import type { ProxyRuntime } from "../runtime.ts";

/** Where the process is in its life: listening yet, draining yet. */
export class ProxyLifecycle {
  #listening = false;
  #draining = false;

  /** Whether every listener is up. */
  get listening(): boolean {
    return this.#listening;
  }

  /** Whether a drain (graceful shutdown) has started. */
  get draining(): boolean {
    return this.#draining;
  }

  /** Every listener is up (the proxy printed `Listening on`). */
  markListening(): void {
    this.#listening = true;
  }

  /** A drain has started: not ready from now on. */
  markDraining(): void {
    this.#draining = true;
  }
}

/** What readiness reads of the runtime. */
export type ReadyRuntime = Pick<ProxyRuntime, "config" | "poolsWithoutHealthyBackend">;

/** The answer of `/ready`: ready or not, and why not. */
export interface Readiness {
  /** Whether to send traffic. */
  readonly ready: boolean;
  /** Why not (empty when ready). */
  readonly reasons: readonly string[];
  /** The pools without an available backend (enabled, healthy, weight above 0). */
  readonly poolsWithoutHealthyBackend: readonly string[];
}

/** Whether the proxy is ready now, and the reasons it is not. */
export function readiness(runtime: ReadyRuntime, lifecycle: ProxyLifecycle): Readiness {
  const reasons: string[] = [];
  if (lifecycle.draining) reasons.push("draining: the proxy is shutting down");
  else if (!lifecycle.listening) reasons.push("starting: the listeners are not up yet");
  const down = runtime.poolsWithoutHealthyBackend();
  const pools = Object.keys(runtime.config.upstream).length;
  const require = runtime.config.admin?.ready.require ?? "all_pools";
  if (require === "all_pools") reasons.push(...poolReasons(down));
  else if (down.length === pools) {
    reasons.push("no pool has a healthy enabled backend (admin.ready.require: any_pool)");
  }
  return { ready: reasons.length === 0, reasons, poolsWithoutHealthyBackend: down };
}

/** Readiness from the pools alone, every pool required (for an admin app without a lifecycle). */
export function poolsReadiness(down: readonly string[]): Readiness {
  const reasons = poolReasons(down);
  return { ready: reasons.length === 0, reasons, poolsWithoutHealthyBackend: down };
}

function poolReasons(down: readonly string[]): string[] {
  return down.map((pool) => `pool ${pool} has no healthy enabled backend`);
}

/** The `/ready` response of `r`: 200 or 503, JSON, never cached. */
export function readyResponse(c: Context, r: Readiness): Response {
  c.header("cache-control", "no-store");
  if (r.ready) return c.json({ status: "ready" }, 200);
  return c.json({
    status: "not_ready",
    reasons: r.reasons,
    pools_without_healthy_backend: r.poolsWithoutHealthyBackend,
  }, 503);
}
