/**
 * Types shared by every load-balancing algorithm.
 *
 * @module
 */

import type { BackendTlsSetting } from "../upstream/client_certificate.ts";
import type { LoadReader } from "./load.ts";

/** A backend as the balancer sees it. `weight` 0 means drained: never returned. */
export interface BackendRef {
  /** Unique backend identifier (`backends[].id`). */
  readonly id: string;
  /** `host:port` of the backend. */
  readonly address: string;
  /** Relative weight (config default 100). 0, negative or non-finite means drained. */
  readonly weight: number;
  /** The backend's `tls` setting (HTTP/2 over TLS), when it has one. */
  readonly tls?: BackendTlsSetting;
  /** How the proxy speaks to it (`backends[].protocol`; default `h2`). */
  readonly protocol?: "h2" | "http1" | "auto";
}

/** The parts of a client request a balancer may look at. */
export interface BalanceRequest {
  /** Request path including the query string, e.g. `/a/b?x=1`. */
  readonly path: string;
  /**
   * Value of a request header, or `null` when absent. Names are passed in
   * lowercase. Several `cookie` fields must be joined with `"; "`
   * (RFC 9114 §4.2.1), other repeated fields with `", "`.
   */
  header(name: string): string | null;
}

/**
 * A load-balancing strategy over a fixed backend list.
 *
 * @example
 * ```ts
 * declare const balancer: Balancer;
 * declare const req: BalanceRequest;
 * declare const health: { isHealthy(id: string): boolean };
 *
 * const order = balancer.candidates(req, (id) => health.isHealthy(id));
 * if (order.length > 0) {
 *   const [chosen, ...retries] = order; // empty: answer 503
 * }
 * ```
 */
export interface Balancer {
  /**
   * Ordered candidates among the available, non-drained backends, without
   * duplicates: the first is the chosen backend, the rest the retry order.
   * Empty when no backend is available. `isAvailable` is called at most once
   * per backend and call.
   */
  candidates(req: BalanceRequest, isAvailable: (id: string) => boolean): BackendRef[];
}

/** The load-balancing algorithms (`load_balancing.type`), in the order error messages list them. */
export const LOAD_BALANCING_TYPES = [
  "random",
  "round-robin",
  "consistent-hash",
  "least-request",
  "latency",
] as const;

/** One of {@link LOAD_BALANCING_TYPES}. */
export type LoadBalancingType = (typeof LOAD_BALANCING_TYPES)[number];

/**
 * A load-balancing choice (`load_balancing` of the configuration, global or
 * per pool). Only `consistent-hash` has a `key`: `header:<name>`,
 * `cookie:<name>`, `query:<name>` or `path` (the default); the configuration
 * schema always fills it in.
 */
export type LoadBalancingConfig =
  | { readonly type: "random" }
  | { readonly type: "round-robin" }
  | { readonly type: "consistent-hash"; readonly key?: string }
  | { readonly type: "least-request" }
  | { readonly type: "latency" };

/** Whether `type` reads the pool's load (`least-request`, `latency`): its requests feed a `LoadTable`. */
export function isLoadAware(type: LoadBalancingType): boolean {
  return type === "least-request" || type === "latency";
}

/** Options shared by the balancer factories. */
export interface BalancerOptions {
  /**
   * Uniform random numbers in [0, 1); defaults to `Math.random`. Used by
   * `random`, `least-request` and `latency`.
   */
  readonly random?: () => number;
  /**
   * The pool's load (in flight, response times: `load.ts`), read by
   * `least-request` and `latency`; kept across reloads by the caller, so a
   * rebuilt balancer carries on. Default: a table of the balancer's own.
   */
  readonly load?: LoadReader;
}

/** Raised by the factories for a configuration they cannot honour (e.g. a bad hash key). */
export class BalancerConfigError extends Error {
  /**
   * Creates the error.
   *
   * @param message what is wrong, naming the bad value.
   */
  constructor(message: string) {
    super(message);
    this.name = "BalancerConfigError";
  }
}

/**
 * Keeps the usable backends: drops later duplicates of an id (the first
 * occurrence wins, even when it is drained), then weight 0 / negative /
 * non-finite ones (drained).
 */
export function usableBackends(backends: readonly BackendRef[]): BackendRef[] {
  const seen = new Set<string>();
  const out: BackendRef[] = [];
  for (const b of backends) {
    if (seen.has(b.id)) continue;
    seen.add(b.id);
    if (b.weight > 0 && Number.isFinite(b.weight)) out.push(b);
  }
  return out;
}
