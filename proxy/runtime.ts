/**
 * The proxy's live state around one configuration "generation": routes and
 * balancers (the request handler), active health checks, passive ejection,
 * pooled backend clients, admin overrides (disabled backends, weights), and
 * metrics. A reload builds a new generation from a validated configuration
 * and swaps it in; requests already running finish on the old one.
 *
 * The request handler (`app.ts` and its phases) is rebuilt on every reload
 * and every admin weight change, so state kept in it would silently reset.
 * What must outlive it is kept here: the admin overrides (disabled
 * backends, weights), passive health (its ejections; replaced only when
 * `passive_health` changes), the metrics, and each pool's
 * {@link PoolState} by pool name (`poolState()`; dropped when a reload
 * removes the pool). A pool's rate limiter (its buckets) is in
 * `PoolState`, kept while the limit's definition is unchanged
 * (`phases/rate_limit.ts`); the rate limits' counters are kept here; a per-route rule derived from the configuration belongs in
 * the rebuilt `PoolContext` (`phases/pool.ts`).
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import type { Config } from "./config/schema.ts";
import type { BackendResolver } from "./dns/backend_resolver.ts";
import { resolvedName } from "./dns/names.ts";
import { type ConfigSecrets, NO_SECRETS } from "./config/secrets.ts";
import { AuthCounters, type AuthMethod } from "./auth/counters.ts";
import { tlsSetting } from "./phases/pool.ts";
import { createProxyApp, PoolState } from "./app.ts";
import {
  backendsWithProbeHost,
  HealthChecker,
  PassiveHealth,
  type ProbeFetch,
} from "./health/mod.ts";
import { probeExchangeOf } from "./health/probe_host.ts";
import { ProxyMetrics } from "./metrics/metrics.ts";
import type { MetricsView } from "./metrics/prometheus.ts";
import { RateLimitCounters } from "./rate_limit/counters.ts";
import type { RequestHandler } from "./server/types.ts";
import type { UpstreamTransport } from "./upstream/transport.ts";

const log = getLogger(["proxy", "runtime"]);

/** What the runtime needs from the outside world (main.ts wires real ones). */
export interface RuntimeOptions {
  /** `spooky/<version>` for health probes. */
  userAgent: string;
  /** Carries requests to backends (pooled HTTP/2 per address). */
  transport: UpstreamTransport;
  /** Transport of health probes. */
  probeFetch: ProbeFetch;
  /** Monotonic milliseconds; default `performance.now`. */
  now?: () => number;
  /**
   * The live addresses of backends configured by name (the one `transport`
   * sends through); given each configuration on reload, stopped with the
   * runtime. Absent: no address is looked up by the proxy.
   */
  resolver?: BackendResolver;
}

/** One backend as the admin API shows it. */
export interface BackendInfo {
  /** Backend id, unique across pools. */
  id: string;
  /** The pool (`upstream` key) it belongs to. */
  pool: string;
  /** `host:port` it is reached at. */
  address: string;
  /** Effective weight (an admin override, or the configured one). */
  weight: number;
  /** The weight in the configuration file. */
  configuredWeight: number;
  /** False while the admin API has it disabled (no new requests). */
  enabled: boolean;
  /** Active health-check state. */
  health: "healthy" | "unhealthy";
  /** Ejected by passive health (outlier detection). */
  ejected: boolean;
  /**
   * For an address that names a host: the addresses it resolves to now
   * (`ip:port`; empty before a first answer). Absent for an IP address.
   */
  resolvedAddresses?: string[];
}

interface Generation {
  config: Config;
  /** What the configuration's key, token and certificate files held when it was loaded. */
  secrets: ConfigSecrets;
  checker: HealthChecker;
  handler: RequestHandler;
  inflight: number;
  idle: PromiseWithResolvers<void> | null;
}

/**
 * The changed keys of `next` that take effect only after a restart, compared
 * with `running`: the configuration the process started with, which is what
 * its listeners, QUIC admission limits and admin listener still use (so a
 * change reverted before a restart is no longer listed). Everything else a
 * reload applies: routes, pools, backends, weights, health checks, load
 * balancing, `passive_health`, `limits.drain_timeout_ms`, `log` (by the
 * caller: `reload.ts`) and the certificate of HTTP/3.
 *
 * @example
 * ```ts
 * import type { Config } from "./config/mod.ts";
 * declare const running: Config;
 * declare const next: Config;
 *
 * restartRequired(running, next); // ["listen.port", "limits.max_connections"]
 * ```
 */
export function restartRequired(running: Config, next: Config): string[] {
  const notes: string[] = [];
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  for (const key of RESTART_LISTEN) {
    if (!same(running.listen[key], next.listen[key])) notes.push(`listen.${key}`);
  }
  for (const key of Object.keys(running.limits) as Array<keyof Config["limits"]>) {
    if (key === "drain_timeout_ms") continue; // read at shutdown
    if (!same(running.limits[key], next.limits[key])) notes.push(`limits.${key}`);
  }
  if (!same(adminListener(running.admin), adminListener(next.admin))) notes.push("admin");
  return notes;
}

/**
 * The `admin` keys the admin listener was started with: all but who may
 * call it (`token`, `tokens`, `allow`) and what `/ready` requires (`ready`),
 * which a reload applies.
 */
function adminListener(admin: Config["admin"]): unknown {
  if (admin === undefined) return undefined;
  const { token: _token, tokens: _tokens, allow: _allow, ready: _ready, ...listener } = admin;
  return listener;
}

/** `listen` keys the listeners were created with (the certificate is reloaded). */
const RESTART_LISTEN = [
  "address",
  "port",
  "max_streams",
  "idle_timeout_ms",
  "tcp_fallback",
] as const;

/**
 * Live proxy state with hot reload and admin controls.
 *
 * @example
 * ```ts
 * import type { Config } from "./config/mod.ts";
 * import type { QuicServerTransport } from "./quic/mod.ts";
 * import { H3Server } from "./server/mod.ts";
 * import { USER_AGENT } from "../shared/version.ts";
 * declare const config: Config;
 * declare const newConfig: Config;
 * declare const transport: RuntimeOptions["transport"];
 * declare const probeFetch: RuntimeOptions["probeFetch"];
 * declare const quic: QuicServerTransport;
 *
 * const runtime = new ProxyRuntime(config, { userAgent: USER_AGENT, transport, probeFetch });
 * runtime.start();
 * const server = new H3Server(quic, {
 *   handler: runtime.handler,
 *   maxFieldSectionSize: config.limits.max_header_list_size,
 *   maxRequestBodyBytes: config.limits.max_request_body_bytes,
 *   qpackMaxTableCapacity: 4096,
 *   qpackBlockedStreams: 16,
 * });
 * server.start();
 * await runtime.reload(newConfig); // routes, pools, weights and checks swap
 * ```
 */
export class ProxyRuntime {
  /** Counters, gauges and the latency histogram. */
  readonly metrics: ProxyMetrics = new ProxyMetrics();
  /** Allowed and limited requests of each rate limit, by name (survive reloads). */
  readonly rateLimitCounters: RateLimitCounters = new RateLimitCounters();
  /** Decisions of each pool's `auth`, by pool (survive reloads). */
  readonly authCounters: AuthCounters = new AuthCounters();
  /** The request handler; always serves with the current generation. */
  readonly handler: RequestHandler;
  readonly #opts: RuntimeOptions;
  readonly #now: () => number;
  readonly #disabled = new Set<string>();
  readonly #weights = new Map<string, number>();
  /** Each pool's state that outlives the handler, by pool name (see the module doc). */
  readonly #pools = new Map<string, PoolState>();
  #passive: PassiveHealth | null;
  /** The configuration the process started with: what listeners and limits still use. */
  readonly #running: Config;
  #gen: Generation;
  #started = false;

  /**
   * Builds the first generation from `config` and what its files held
   * (`secrets`: the loader's, default none); nothing runs until {@link start}.
   */
  constructor(config: Config, opts: RuntimeOptions, secrets: ConfigSecrets = NO_SECRETS) {
    this.#opts = opts;
    this.#now = opts.now ?? (() => performance.now());
    this.#running = config;
    this.#passive = passiveOf(config);
    this.#gen = this.#build(config, secrets);
    this.handler = async (req) => {
      const gen = this.#gen;
      gen.inflight++;
      const t0 = this.#now();
      try {
        return await gen.handler(req);
      } finally {
        this.metrics.latency.observe((this.#now() - t0) / 1000);
        if (--gen.inflight === 0) gen.idle?.resolve();
      }
    };
  }

  /** The configuration being served. */
  get config(): Config {
    return this.#gen.config;
  }

  /** What the files of the configuration being served held (keys, tokens, certificates). */
  get secrets(): ConfigSecrets {
    return this.#gen.secrets;
  }

  /** Starts health checks. */
  start(): void {
    this.#started = true;
    this.#gen.checker.start();
  }

  #effectiveConfig(config: Config): Config {
    if (this.#weights.size === 0) return config;
    const copy = structuredClone(config) as Config;
    for (const pool of Object.values(copy.upstream)) {
      for (const b of pool.backends) {
        const w = this.#weights.get(b.id);
        if (w !== undefined) (b as { weight: number }).weight = w;
      }
    }
    return copy;
  }

  #makeHandler(config: Config, checker: HealthChecker, secrets: ConfigSecrets): RequestHandler {
    const passive = this.#passive;
    return createProxyApp({
      config: this.#effectiveConfig(config),
      metrics: this.metrics,
      transport: this.#opts.transport,
      poolState: (name) => this.poolState(name),
      rateLimitCounters: this.rateLimitCounters,
      secrets,
      authCounters: this.authCounters,
      now: this.#now,
      health: {
        isAvailable: (id) =>
          !this.#disabled.has(id) && checker.isHealthy(id) && !(passive?.isEjected(id) ?? false),
        isAvailableIgnoringEjection: (id) => !this.#disabled.has(id) && checker.isHealthy(id),
        isEnabled: (id) => !this.#disabled.has(id),
        report: passive
          ? (id, outcome) => {
            if (outcome === "success") passive.reportSuccess(id);
            else passive.reportFailure(id, outcome);
          }
          : undefined,
      },
    });
  }

  #build(config: Config, secrets: ConfigSecrets): Generation {
    // Probes send the Host real requests send (the pool's set.host), and
    // the client certificate they present.
    const backends = backendsWithProbeHost(config.upstream).map((b) =>
      b.tls?.cert === undefined ? b : { ...b, tls: tlsSetting(b, secrets) }
    ).map((b) => this.#opts.resolver && resolvedName(b.address) ? { ...b, byName: true } : b);
    const checker = new HealthChecker({
      backends,
      fetch: this.#opts.probeFetch,
      exchange: probeExchangeOf(this.#opts.transport),
      userAgent: this.#opts.userAgent,
    });
    return {
      config,
      secrets,
      checker,
      handler: this.#makeHandler(config, checker, secrets),
      inflight: 0,
      idle: null,
    };
  }

  /**
   * Swaps in a new, already validated configuration, with what its files
   * held (`secrets`: keys, tokens and certificates read with it). Returns
   * the changed keys that only take effect after a restart (see
   * {@link restartRequired}).
   */
  async reload(next: Config, secrets: ConfigSecrets = NO_SECRETS): Promise<string[]> {
    // New names (and every name, when `dns` changed) are looked up before
    // the new generation serves; a name that does not resolve is logged.
    await this.#opts.resolver?.update(next);
    const old = this.#gen;
    const notes = restartRequired(this.#running, next);
    if (JSON.stringify(old.config.passive_health) !== JSON.stringify(next.passive_health)) {
      // New thresholds start from a clean slate: no backend stays ejected.
      this.#passive = passiveOf(next);
    }
    const ids = new Set(Object.values(next.upstream).flatMap((u) => u.backends.map((b) => b.id)));
    for (const id of [...this.#weights.keys()]) if (!ids.has(id)) this.#weights.delete(id);
    for (const id of [...this.#disabled]) if (!ids.has(id)) this.#disabled.delete(id);
    for (const pool of [...this.#pools.keys()]) {
      if (!Object.hasOwn(next.upstream, pool)) this.#pools.delete(pool);
    }
    const gen = this.#build(next, secrets);
    if (this.#started) gen.checker.start();
    this.#gen = gen;
    await old.checker.stop();
    // Connections to addresses no longer used close once the old
    // generation's requests are done.
    const before = new Set(
      Object.values(old.config.upstream).flatMap((u) => u.backends.map((b) => b.address)),
    );
    const used = new Set(
      Object.values(next.upstream).flatMap((u) => u.backends.map((b) => b.address)),
    );
    this.#whenIdle(old).then(() => {
      for (const address of before) {
        if (!used.has(address) && !this.#inUse(address)) this.#opts.transport.release(address);
      }
    });
    log.info("configuration reloaded: {pools} pools, {backends} backends", {
      pools: Object.keys(next.upstream).length,
      backends: ids.size,
    });
    for (const key of notes) log.warn("{key} changed: takes effect after a restart", { key });
    return notes;
  }

  #whenIdle(gen: Generation): Promise<void> {
    if (gen.inflight === 0) return Promise.resolve();
    gen.idle ??= Promise.withResolvers<void>();
    return gen.idle.promise;
  }

  #find(id: string): { pool: string; address: string; weight: number } | undefined {
    for (const [pool, u] of Object.entries(this.#gen.config.upstream)) {
      const b = u.backends.find((x) => x.id === id);
      if (b) return { pool, address: b.address, weight: b.weight };
    }
    return undefined;
  }

  /** Every backend with its state. */
  backends(): BackendInfo[] {
    const out: BackendInfo[] = [];
    for (const [pool, u] of Object.entries(this.#gen.config.upstream)) {
      for (const b of u.backends) {
        out.push({
          id: b.id,
          pool,
          address: b.address,
          weight: this.#weights.get(b.id) ?? b.weight,
          configuredWeight: b.weight,
          enabled: !this.#disabled.has(b.id),
          health: this.#gen.checker.isHealthy(b.id) ? "healthy" : "unhealthy",
          ejected: this.#passive?.isEjected(b.id) ?? false,
          ...this.#resolvedAddresses(b.address),
        });
      }
    }
    return out;
  }

  /** `resolvedAddresses` of a backend whose address the proxy looks up, else nothing. */
  #resolvedAddresses(address: string): Pick<BackendInfo, "resolvedAddresses"> {
    const endpoints = this.#opts.resolver?.endpoints(address);
    return endpoints === undefined ? {} : { resolvedAddresses: [...endpoints] };
  }

  /**
   * The state of pool `name` that outlives the request handler (reloads,
   * admin weight changes): the same object for as long as the pool stays in
   * the configuration.
   */
  poolState(name: string): PoolState {
    let state = this.#pools.get(name);
    if (state === undefined) {
      state = new PoolState();
      this.#pools.set(name, state);
    }
    return state;
  }

  /** Disables or re-enables a backend; `false` for an unknown id. */
  setEnabled(id: string, enabled: boolean): boolean {
    if (!this.#find(id)) return false;
    if (enabled) this.#disabled.delete(id);
    else this.#disabled.add(id);
    log.info("backend {id} {state} by the admin API", {
      id,
      state: enabled ? "enabled" : "disabled",
    });
    return true;
  }

  /**
   * Overrides a backend's weight; `false` for an unknown id. The override,
   * like a disabled backend, survives reloads for as long as the backend's
   * id stays in the configuration, and ends with the process.
   */
  setWeight(id: string, weight: number): boolean {
    if (!this.#find(id)) return false;
    this.#weights.set(id, weight);
    this.#gen.handler = this.#makeHandler(this.#gen.config, this.#gen.checker, this.#gen.secrets);
    log.info("backend {id} weight set to {weight} by the admin API", { id, weight });
    return true;
  }

  /** Pools in which no backend is available (enabled and healthy). */
  poolsWithoutHealthyBackend(): string[] {
    const byPool = new Map<string, boolean>();
    for (const b of this.backends()) {
      const ok = b.enabled && b.health === "healthy" && b.weight > 0;
      byPool.set(b.pool, (byPool.get(b.pool) ?? false) || ok);
    }
    return [...byPool].filter(([, ok]) => !ok).map(([pool]) => pool);
  }

  /** Everything `/metrics` shows, except process figures the caller adds. */
  metricsView(
    extra: Pick<MetricsView, "version" | "uptimeSeconds" | "startTimeSeconds" | "residentBytes">,
  ): MetricsView {
    const picks = this.metrics.picks();
    return {
      ...extra,
      global: this.metrics.global,
      backends: this.backends().map((b) => ({
        id: b.id,
        pool: b.pool,
        counters: this.metrics.backend(b.id),
        healthy: b.health === "healthy",
        enabled: b.enabled,
        weight: b.weight,
        picks: picks.get(b.id) ?? 0,
        dns: this.#opts.resolver?.stats(b.address),
        inflight: this.#pools.get(b.pool)?.gate?.inflight(b.id) ?? 0,
        overloaded: this.#pools.get(b.pool)?.gate?.refused(b.id),
      })),
      pools: this.#poolsView(),
      websockets: this.metrics.websockets.snapshot(Object.keys(this.#gen.config.upstream)),
      upstreamConnections: this.#opts.transport.connections?.(),
      latency: this.metrics.latency.snapshot(),
      activeConnections: this.metrics.activeConnections,
      rejectedConnections: this.metrics.rejectedConnections,
      quic: this.metrics.quicSocket?.(),
      tcpListeners: [...this.metrics.tcpListeners].map(([listener, read]) => ({
        listener,
        ...read(),
      })),
      activeStreams: this.metrics.activeStreams,
      qpackDynamicSections: this.metrics.qpackDynamicSections,
      rateLimits: this.rateLimitCounters.snapshot(
        (this.#gen.config.rate_limits ?? []).map((l) => l.name),
      ),
      auth: this.authCounters.snapshot(authMethods(this.#gen.config)),
    };
  }

  /** Each configured pool's retries, budget refusals and requests waiting for a slot. */
  #poolsView(): NonNullable<MetricsView["pools"]> {
    return Object.entries(this.#gen.config.upstream).map(([pool, u]) => {
      const state = this.poolState(pool);
      return {
        pool,
        retries: state.retryCounters.snapshot(u.retries?.retry_on.map(String) ?? []),
        budgetExhausted: state.retryCounters.budgetExhausted,
        pending: state.gate?.pending ?? 0,
      };
    });
  }

  /** Whether the configuration served now uses a backend address. */
  #inUse(address: string): boolean {
    return Object.values(this.#gen.config.upstream).some((u) =>
      u.backends.some((b) => b.address === address)
    );
  }

  /** Stops health checks and closes the upstream transport (pending exchanges are cancelled). */
  async stop(): Promise<void> {
    this.#opts.resolver?.stop();
    await this.#gen.checker.stop();
    await this.#opts.transport.close();
  }
}

/** The pools with `auth`, each with the credentials it accepts (for the metrics). */
function authMethods(config: Config): Array<[string, AuthMethod[]]> {
  const out: Array<[string, AuthMethod[]]> = [];
  for (const [pool, u] of Object.entries(config.upstream)) {
    const auth = u.auth;
    if (auth === undefined) continue;
    const methods: AuthMethod[] = [];
    if (auth.api_keys !== undefined) methods.push("api_key");
    if (auth.jwt !== undefined) methods.push("jwt");
    out.push([pool, methods]);
  }
  return out;
}

function passiveOf(config: Config): PassiveHealth | null {
  const ph = config.passive_health;
  return ph.enabled
    ? new PassiveHealth({ consecutiveFailures: ph.consecutive_failures, ejectMs: ph.eject_ms })
    : null;
}
