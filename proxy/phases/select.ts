/**
 * Phase 3, select: the pool's balancer orders the available backends into
 * candidates (pingora's `upstream_peer`): the first is asked, the next one
 * on a retry. Available means enabled (admin API), healthy (active checks)
 * and not ejected (passive health). When ejection leaves no candidate at
 * all the ejected backends are used anyway (panic mode: better a suspect
 * backend than a 503), and the pool's entering and leaving panic mode is
 * logged once each ({@link PoolState.panic}).
 *
 * @example
 * ```ts
 * import type { RequestHead } from "../http/mod.ts";
 * import type { PoolContext } from "./pool.ts";
 * declare const pool: PoolContext;
 * declare const health: BackendHealth;
 * declare const head: RequestHead;
 *
 * const available = availability(health); // once per handler
 * const candidates = selectCandidates(pool, available, head, "/api/users");
 * if (candidates.length === 0) noCandidate(pool, health).status; // 503
 * ```
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import type { BackendRef, BalanceRequest } from "../balancer/mod.ts";
import type { RequestHead } from "../http/mod.ts";
import type { HealthReport } from "../upstream/outcome.ts";
import { type Refusal, refusal } from "./admit.ts";
import type { PoolContext, PoolState } from "./pool.ts";

const log = getLogger(["proxy", "upstream"]);

/** Availability of backends: active health checks and passive ejection combined. */
export interface BackendHealth {
  /** Whether the backend may be picked: enabled, healthy and not ejected. */
  isAvailable(id: string): boolean;
  /**
   * Availability ignoring passive ejection: used when ejection left a pool
   * with no candidate at all (panic mode: better a suspect backend than a 503).
   */
  isAvailableIgnoringEjection?(id: string): boolean;
  /** Whether the backend is enabled (not disabled by the admin API); default: all are. */
  isEnabled?(id: string): boolean;
  /** Live traffic outcome, for passive health (outlier ejection); see `upstream/outcome.ts`. */
  report?(id: string, outcome: HealthReport): void;
}

/** {@link BackendHealth}'s two availability tests as functions a balancer can call. */
export interface Availability {
  /** {@link BackendHealth.isAvailable}. */
  readonly isAvailable: (id: string) => boolean;
  /** {@link BackendHealth.isAvailableIgnoringEjection}, if any. */
  readonly isAvailableIgnoringEjection: ((id: string) => boolean) | undefined;
}

/** The availability tests of `health`, bound once (not per request). */
export function availability(health: BackendHealth): Availability {
  return {
    isAvailable: (id) => health.isAvailable(id),
    isAvailableIgnoringEjection: health.isAvailableIgnoringEjection
      ? (id) => health.isAvailableIgnoringEjection!(id)
      : undefined,
  };
}

/**
 * The pool's candidates for a request to `path`, best first; empty when
 * no backend can be asked (answer {@link noCandidate}).
 */
export function selectCandidates(
  pool: PoolContext,
  available: Availability,
  head: RequestHead,
  path: string,
): readonly BackendRef[] {
  const balanceReq: BalanceRequest = {
    path,
    header(name: string): string | null {
      const values = head.fields.filter(([n]) => n === name).map(([, v]) => v);
      if (values.length === 0) return null;
      return values.join(name === "cookie" ? "; " : ", ");
    },
  };
  const candidates = pool.balancer.candidates(balanceReq, available.isAvailable);
  const ignoringEjection = available.isAvailableIgnoringEjection;
  if (candidates.length > 0) {
    if (pool.state.panic) leavePanic(pool.name, pool.state);
    return candidates;
  }
  if (ignoringEjection === undefined) return candidates;
  const suspects = pool.balancer.candidates(balanceReq, ignoringEjection);
  if (suspects.length > 0 && !pool.state.panic) {
    pool.state.panic = true;
    log.warn("pool {pool}: every available backend is ejected; asking ejected ones (panic mode)", {
      pool: pool.name,
    });
  }
  return suspects;
}

function leavePanic(name: string, state: PoolState): void {
  state.panic = false;
  log.info("pool {pool} has an available backend again: panic mode over", { pool: name });
}

/** The answer when a pool has no candidate: no enabled backend, or none healthy. */
export function noCandidate(pool: PoolContext, health: BackendHealth): Refusal {
  // Backends disabled by the admin API are not unhealthy: say which it is.
  const enabled = health.isEnabled ? pool.ids.filter((id) => health.isEnabled!(id)) : pool.ids;
  if (enabled.length === 0) {
    return refusal(
      503,
      "no_enabled_backend",
      `no enabled backend in pool ${pool.name} (all disabled by the admin API)`,
    );
  }
  return refusal(503, "no_healthy_backend", `no healthy backend in pool ${pool.name}`);
}
