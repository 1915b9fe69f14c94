/**
 * Active health checks: periodic HTTP probes of every backend that has a
 * `health_check`, feeding one {@link HealthState} per backend.
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import { parseHostPort } from "../config/schema.ts";
import type { BackendTlsSetting } from "../upstream/client_certificate.ts";
import { untraced } from "../../shared/telemetry.ts";
import { HealthState } from "./health_state.ts";
import {
  type Clock,
  type HealthCheckConfig,
  type HealthStatus,
  MONOTONIC_CLOCK,
  withHealthDefaults,
} from "./types.ts";

const log = getLogger(["proxy", "health"]);

/** A backend to check. `health_check` absent: never probed, always healthy. */
export interface BackendWithHealth {
  /** Unique backend id. */
  readonly id: string;
  /** `host:port` (IPv6 as `[::1]:8080`). */
  readonly address: string;
  /** Ignored by the checker; present so config backends can be passed as they are. */
  readonly weight?: number;
  /** Probe settings; missing fields take the spec's defaults. */
  readonly health_check?: Partial<HealthCheckConfig>;
  /** HTTP client for this backend's probes (overrides the checker's). */
  readonly client?: Deno.HttpClient;
  /**
   * The backend's `tls`: probes go over HTTPS, trusting `ca` (a PEM file)
   * when given (the probe names the address's host: `server_name` is not
   * used by probes). A backend with a `client_certificate` is probed
   * through the checker's {@link ProbeExchange}, which presents it.
   */
  readonly tls?: BackendTlsSetting;
  /**
   * The backend's `protocol`: probes of `http1` and `auto` backends go
   * through the checker's {@link ProbeExchange} (the proxy's own transport,
   * which speaks the backend's protocol); `h2` (or absent) ones through `fetch`.
   */
  readonly protocol?: "h2" | "http1" | "auto";
  /**
   * The address names a host the proxy looks up itself (`dns`): probes go
   * through the checker's {@link ProbeExchange}, whose transport connects to
   * the name's addresses (`fetch` would ask the system's resolver).
   */
  readonly byName?: boolean;
}

/** What a probe passes to `fetch`. */
export type ProbeInit = RequestInit & { client?: Deno.HttpClient };

/** A `fetch`-compatible function used for probes. */
export type ProbeFetch = (url: string, init: ProbeInit) => Promise<Response>;

/** A health state change reported by {@link HealthChecker}. */
export interface HealthTransitionEvent {
  /** Backend id. */
  readonly id: string;
  /** State before. */
  readonly from: HealthStatus;
  /** State after. */
  readonly to: HealthStatus;
  /** For `to: "unhealthy"`: why the last probe failed. */
  readonly reason?: string;
}

/** A probe as {@link ProbeExchange} sends it. */
export interface ProbeExchangeRequest {
  /** The backend's `host:port`. */
  readonly address: string;
  /** The backend's `tls`, as real requests use it (SNI `server_name`, else the address's host); absent: none. */
  readonly tls?: BackendTlsSetting;
  /** The backend's `protocol` (absent: `h2`). */
  readonly protocol?: "h2" | "http1" | "auto";
  /** Probe method. */
  readonly method: string;
  /** Probe path. */
  readonly path: string;
  /** `:authority` of the probe (`health_check.host`). */
  readonly authority: string;
  /** `User-Agent` of the probe. */
  readonly userAgent: string;
  /** Time the probe may take, in milliseconds. */
  readonly timeoutMs: number;
  /** Aborted when the probe times out or the checker stops. */
  readonly signal: AbortSignal;
}

/**
 * Sends a probe over the proxy's own HTTP/2 client and resolves to its
 * status (the body is not wanted). Used for backends over TLS with a probe
 * `host`: `fetch` can name another authority than the address only over
 * h2c (its TCP `proxy` carries no TLS).
 */
export type ProbeExchange = (probe: ProbeExchangeRequest) => Promise<number>;

/** Options of {@link HealthChecker}. */
export interface HealthCheckerOptions {
  /** The backends; ids must be unique (later duplicates are ignored). */
  readonly backends: readonly BackendWithHealth[];
  /**
   * Probe transport. Default: the global `fetch` with an HTTP/2-only client
   * (`Deno.createHttpClient({ http1: false, http2: true })`, i.e. h2c with
   * prior knowledge) that the checker creates in `start()` and closes in `stop()`.
   */
  readonly fetch?: ProbeFetch;
  /** Clock for the state machine and the probe schedule; default `performance.now()`. */
  readonly clock?: Clock;
  /** Schedules `fn` after `ms`; default the global `setTimeout`. Returns a handle for `clearTimeout`. */
  readonly setTimeout?: (fn: () => void, ms: number) => unknown;
  /** Cancels a handle returned by `setTimeout`; default the global `clearTimeout`. */
  readonly clearTimeout?: (handle: never) => void;
  /** `User-Agent` of probes, `spooky/<version>`. */
  readonly userAgent: string;
  /** Called on every state change (after it is logged). Exceptions are logged and ignored. */
  readonly onTransition?: (ev: HealthTransitionEvent) => void;
  /**
   * Probes of backends over TLS with a probe `host` go through this; without
   * it such a probe names the backend's address (`fetch` cannot send another
   * authority over TLS).
   */
  readonly exchange?: ProbeExchange;
}

/** Outcome of one probe. */
interface ProbeResult {
  readonly ok: boolean;
  readonly reason?: string;
}

interface Target {
  readonly id: string;
  readonly url: string;
  readonly host: string;
  readonly hc: HealthCheckConfig;
  client: Deno.HttpClient | undefined;
  /** PEM file of the CA a client of this target's own trusts (made at start, closed at stop). */
  readonly caFile: string | undefined;
  /**
   * With a probe `host`: where the target's own client connects (the URL
   * names the host, so that HTTP/2 sends it as `:authority`).
   */
  readonly dial: { readonly hostname: string; readonly port: number } | undefined;
  /** Whether the checker makes this target a client of its own (at start) and closes it (at stop). */
  readonly ownsClient: boolean;
  /** Set when the probes go through the checker's {@link ProbeExchange} (TLS with a probe host). */
  readonly exchange: Omit<ProbeExchangeRequest, "userAgent" | "signal"> | undefined;
  readonly state: HealthState;
  timer: unknown;
  inflight: Promise<void> | undefined;
  controller: AbortController | undefined;
  lastReason: string | undefined;
}

/**
 * Probes each backend with a `health_check` every `interval` ms: `method`
 * to `http://<address><path>` with `Host: <address>` and the configured
 * `User-Agent`, aborted after `timeout_ms`, redirects not followed. Over
 * HTTP/2 the host travels as `:authority` (RFC 9113 §8.3.1), taken from the
 * same URL. With `health_check.host`, the URL names that host instead
 * (`http://<host><path>`, `Host: <host>`) and the target gets a client of
 * its own that connects to the address whatever the URL names; over TLS
 * such a probe goes through the {@link ProbeExchange} given (the proxy's
 * own client, with the backend's `server_name`). A 2xx status is a success, anything else (other status,
 * connection error, timeout) a failure. The body is never read: it is
 * cancelled.
 *
 * Scheduling: the first probe of every backend starts in `start()` without
 * waiting; each backend then runs its own loop, so a slow backend never
 * delays another, and a probe never overlaps the previous probe of the same
 * backend: the next one starts `interval` ms after the previous one started,
 * or as soon as it ended when it took longer than that.
 *
 * Logging (category `proxy.health`): every failed probe logs `health check
 * failed` at warn with the backend id and reason, except that repeats of the
 * same reason while the backend is already unhealthy go to debug;
 * transitions log `backend <id> is now unhealthy` (warn) and `backend <id>
 * is now healthy` (info).
 *
 * @example
 * ```ts
 * import { USER_AGENT } from "../../shared/version.ts";
 * import type { Config } from "../config/mod.ts";
 * import type { BalanceRequest, Balancer } from "../balancer/mod.ts";
 * declare const config: Config;
 * declare const balancer: Balancer;
 * declare const req: BalanceRequest;
 *
 * const checker = new HealthChecker({
 *   backends: config.upstream.api.backends,
 *   userAgent: USER_AGENT,
 *   onTransition: (ev) => console.log(`${ev.id}: ${ev.from} -> ${ev.to}`),
 * });
 * checker.start();
 * const order = balancer.candidates(req, (id) => checker.isHealthy(id));
 * // ... on shutdown:
 * await checker.stop();
 * ```
 */
export class HealthChecker {
  readonly #targets = new Map<string, Target | null>();
  readonly #fetch: ProbeFetch | undefined;
  readonly #clock: Clock;
  readonly #setTimeout: (fn: () => void, ms: number) => unknown;
  readonly #clearTimeout: (handle: never) => void;
  readonly #userAgent: string;
  readonly #onTransition: ((ev: HealthTransitionEvent) => void) | undefined;
  readonly #exchange: ProbeExchange | undefined;
  #ownClient: Deno.HttpClient | undefined;
  #running = false;
  /** Bumped by stop(): results of probes started before are discarded. */
  #epoch = 0;

  /**
   * Creates the checker; nothing runs until {@link start}.
   *
   * @throws {RangeError} for invalid thresholds, interval or timeout.
   */
  constructor(opts: HealthCheckerOptions) {
    this.#fetch = opts.fetch;
    this.#clock = opts.clock ?? MONOTONIC_CLOCK;
    this.#setTimeout = opts.setTimeout ?? ((fn, ms) => setTimeout(fn, ms));
    this.#clearTimeout = opts.clearTimeout ??
      ((id: never) => clearTimeout(id as ReturnType<typeof setTimeout>));
    this.#userAgent = opts.userAgent;
    this.#onTransition = opts.onTransition;
    this.#exchange = opts.exchange;
    for (const b of opts.backends) {
      if (this.#targets.has(b.id)) continue;
      if (b.health_check === undefined) {
        this.#targets.set(b.id, null);
        continue;
      }
      const hc = withHealthDefaults(b.health_check);
      for (const [name, v] of [["interval", hc.interval], ["timeout_ms", hc.timeout_ms]] as const) {
        if (!(v > 0) || !Number.isFinite(v)) throw new RangeError(`${name} must be > 0`);
      }
      const path = hc.path.startsWith("/") ? hc.path : `/${hc.path}`;
      const method = hc.method.toUpperCase();
      // Over TLS a probe host needs the exchange; without it the address is named.
      const named = hc.host !== undefined && (b.tls === undefined || opts.exchange !== undefined)
        ? hc.host
        : undefined;
      const host = named ?? b.address;
      const caFile = b.client === undefined ? b.tls?.ca : undefined;
      const dial = b.client === undefined && named !== undefined && b.tls === undefined
        ? dialOf(b.address)
        : undefined;
      // Not HTTP/2: the proxy's own transport speaks the backend's protocol.
      const notH2 = b.protocol !== undefined && b.protocol !== "h2" && opts.exchange !== undefined;
      // A client certificate is presented by the proxy's own transport only.
      const mutual = b.tls?.client_certificate !== undefined && opts.exchange !== undefined;
      // A name the proxy looks up: its own transport knows the addresses.
      const byName = b.byName === true && opts.exchange !== undefined;
      const exchange = (named !== undefined && b.tls !== undefined) || notH2 || mutual || byName
        ? {
          address: b.address,
          tls: b.tls,
          protocol: b.protocol,
          method,
          path,
          authority: named ?? hc.host ?? b.address,
          timeoutMs: hc.timeout_ms,
        }
        : undefined;
      this.#targets.set(b.id, {
        id: b.id,
        url: `${b.tls ? "https" : "http"}://${host}${path}`,
        host,
        exchange,
        hc: { ...hc, method },
        client: b.client,
        caFile,
        dial,
        ownsClient: caFile !== undefined || dial !== undefined,
        state: new HealthState(hc),
        timer: undefined,
        inflight: undefined,
        controller: undefined,
        lastReason: undefined,
      });
    }
  }

  /** Starts probing (the first probe of each backend at once). Calling it again is a no-op. */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    if (this.#fetch === undefined && this.#ownClient === undefined && this.#needsOwnClient()) {
      this.#ownClient = Deno.createHttpClient({ http1: false, http2: true });
    }
    for (const t of this.#targets.values()) {
      if (t === null || !t.ownsClient || t.client !== undefined) continue;
      t.client = targetClient(t);
    }
    for (const t of this.#targets.values()) {
      if (t !== null && t.timer === undefined && t.inflight === undefined) this.#probe(t);
    }
  }

  /**
   * Stops probing: cancels pending timers, aborts probes in flight and waits
   * for them to settle, then closes the HTTP client it created. Results of
   * aborted probes are discarded. `start()` may be called again afterwards.
   */
  async stop(): Promise<void> {
    this.#running = false;
    this.#epoch++;
    const pending: Promise<void>[] = [];
    for (const t of this.#targets.values()) {
      if (t === null) continue;
      if (t.timer !== undefined) {
        this.#clearTimeout(t.timer as never);
        t.timer = undefined;
      }
      t.controller?.abort(new DOMException("health checker stopped", "AbortError"));
      if (t.inflight !== undefined) pending.push(t.inflight);
    }
    await Promise.all(pending);
    if (!this.#running && this.#ownClient !== undefined) {
      this.#ownClient.close();
      this.#ownClient = undefined;
    }
    for (const t of this.#targets.values()) {
      if (this.#running || t === null || !t.ownsClient || t.client === undefined) continue;
      t.client.close();
      t.client = undefined;
    }
  }

  /**
   * Whether a backend is healthy. Backends without `health_check`, and ids
   * this checker does not know, are healthy (they are not checked).
   */
  isHealthy(id: string): boolean {
    const t = this.#targets.get(id);
    return t === undefined || t === null || t.state.status === "healthy";
  }

  /** Every known backend and its state (backends without `health_check` are healthy). */
  snapshot(): Record<string, HealthStatus> {
    const out: Record<string, HealthStatus> = {};
    for (const [id, t] of this.#targets) out[id] = t === null ? "healthy" : t.state.status;
    return out;
  }

  #needsOwnClient(): boolean {
    for (const t of this.#targets.values()) {
      if (t !== null && t.client === undefined && !t.ownsClient) return true;
    }
    return false;
  }

  #probe(t: Target): void {
    t.timer = undefined;
    if (!this.#running) return;
    const startedAt = this.#clock.now();
    const epoch = this.#epoch;
    t.inflight = this.#probeOnce(t).then((result) => {
      if (this.#running && epoch === this.#epoch) this.#record(t, result);
    }).catch((err) => {
      log.error("health probe of backend {id} crashed: {error}", { id: t.id, error: err });
    }).finally(() => {
      t.inflight = undefined;
      if (!this.#running || t.timer !== undefined) return;
      // Restarted while this (discarded) probe was settling: probe again at once.
      const delay = epoch !== this.#epoch
        ? 0
        : Math.max(0, startedAt + t.hc.interval - this.#clock.now());
      t.timer = this.#setTimeout(() => this.#probe(t), delay);
    });
  }

  async #probeOnce(t: Target): Promise<ProbeResult> {
    const controller = new AbortController();
    t.controller = controller;
    let timedOut = false;
    const timer = this.#setTimeout(() => {
      timedOut = true;
      controller.abort(new DOMException(`timeout after ${t.hc.timeout_ms} ms`, "TimeoutError"));
    }, t.hc.timeout_ms);
    try {
      const status = await this.#send(t, controller.signal);
      if (status >= 200 && status < 300) return { ok: true };
      return { ok: false, reason: `status ${status}` };
    } catch (err) {
      if (timedOut) return { ok: false, reason: `timeout after ${t.hc.timeout_ms} ms` };
      return { ok: false, reason: describeError(err) };
    } finally {
      this.#clearTimeout(timer as never);
      t.controller = undefined;
    }
  }

  /** Sends one probe of `t` and resolves to its status; the body is cancelled unread. */
  async #send(t: Target, signal: AbortSignal): Promise<number> {
    if (t.exchange !== undefined && this.#exchange !== undefined) {
      return await this.#exchange({ ...t.exchange, userAgent: this.#userAgent, signal });
    }
    const init: ProbeInit = {
      method: t.hc.method,
      headers: { "host": t.host, "user-agent": this.#userAgent },
      signal,
      redirect: "manual",
    };
    const client = t.client ?? this.#ownClient;
    if (client !== undefined) init.client = client;
    const fetchFn = this.#fetch ?? fetch;
    const res = await untraced(() => fetchFn(t.url, init));
    try {
      await res.body?.cancel();
    } catch {
      // The status is all we need; a body that fails to cancel does not matter.
    }
    return res.status;
  }

  #record(t: Target, result: ProbeResult): void {
    const now = this.#clock.now();
    if (result.ok) {
      t.lastReason = undefined;
      const tr = t.state.recordSuccess(now);
      if (tr !== null) {
        log.info("backend {id} is now healthy", { id: t.id, from: tr.from, to: tr.to });
        this.#emit({ id: t.id, from: tr.from, to: tr.to });
      }
      return;
    }
    const reason = result.reason ?? "failed";
    const repeat = t.state.status === "unhealthy" && t.lastReason === reason;
    t.lastReason = reason;
    const props = { id: t.id, reason, url: t.url };
    if (repeat) log.debug("health check failed for backend {id}: {reason}", props);
    else log.warn("health check failed for backend {id}: {reason}", props);
    const tr = t.state.recordFailure(now, reason);
    if (tr !== null) {
      log.warn("backend {id} is now unhealthy ({reason})", { id: t.id, reason, from: tr.from });
      this.#emit({ id: t.id, from: tr.from, to: tr.to, reason });
    }
  }

  #emit(ev: HealthTransitionEvent): void {
    if (this.#onTransition === undefined) return;
    try {
      this.#onTransition(ev);
    } catch (err) {
      log.error("onTransition callback failed for backend {id}: {error}", {
        id: ev.id,
        error: err,
      });
    }
  }
}

/** Where a target probed under another host name connects: its address. */
function dialOf(address: string): { hostname: string; port: number } | undefined {
  const parsed = parseHostPort(address);
  return parsed === null ? undefined : { hostname: parsed.host, port: parsed.port };
}

/**
 * A target's own HTTP/2 client: trusting its CA file (an unreadable one is
 * left out: the probes then fail their TLS check and say so), connecting to
 * its address when the URL names another host.
 */
function targetClient(t: Target): Deno.HttpClient {
  const opts: Deno.CreateHttpClientOptions = { http1: false, http2: true };
  if (t.dial !== undefined) opts.proxy = { transport: "tcp", ...t.dial };
  if (t.caFile !== undefined) {
    try {
      opts.caCerts = [Deno.readTextFileSync(t.caFile)];
    } catch {
      // Left out: see above.
    }
  }
  return Deno.createHttpClient(opts);
}

/** A short reason for a failed fetch: the innermost cause's message. */
function describeError(err: unknown): string {
  let e: unknown = err;
  for (let depth = 0; depth < 4 && e instanceof Error && e.cause !== undefined; depth++) {
    e = e.cause;
  }
  if (e instanceof Error) return e.name === "Error" ? e.message : `${e.name}: ${e.message}`;
  return String(e);
}
