/**
 * The live addresses of backends configured by name (`api.internal:8080`):
 * each name is looked up (A and AAAA) when it enters the configuration, then
 * again every `dns_refresh_ms` of its pools, sooner when the answer's TTL is
 * shorter (never more often than once a second on a TTL, however short).
 * Every address of the answer, with the configured port, is an endpoint of
 * the backend; {@link BackendResolver.endpointFor} takes them in turn,
 * passing over for a while an endpoint a connection to which just failed.
 *
 * A lookup that fails (no answer in `dns.timeout_ms`, or no address at all)
 * keeps the last good answer; it is logged (a warning the first time in a
 * row) and counted, and asked again sooner (1 s, doubling up to
 * `dns_refresh_ms`). A family whose question got no answer while the other
 * was answered keeps its last addresses. An endpoint that leaves the answer
 * is reported through {@link BackendResolver.onRemoved} (the transport
 * drains its connections) unless another name or a backend's own address
 * still uses it. Until a name has resolved once, it has no endpoint: its
 * requests go to the name itself, through the system's resolver.
 *
 * One health view per backend: probes, passive health, the admin API and
 * the metrics see the backend, not its endpoints.
 *
 * @example
 * ```ts
 * import type { Config } from "../config/mod.ts";
 * import { systemDnsLookup } from "./lookup.ts";
 * declare const config: Config;
 *
 * const resolver = new BackendResolver({ lookup: systemDnsLookup() });
 * const failures = await resolver.update(config); // first lookups, bounded by dns.timeout_ms
 * resolver.endpointFor("api.internal:8080"); // "10.1.2.3:8080", or null before any answer
 * resolver.stop();
 * ```
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import type { Config } from "../config/types.ts";
import type { DnsLookup, FamilyAnswer, LookupAnswer, LookupOptions } from "./lookup.ts";
import { type NamedAddress, namedAddresses, type ResolvedName } from "./names.ts";

const log = getLogger(["proxy", "dns"]);

/** A TTL shorter than this is read as this (ms): a TTL of 0 must not mean a lookup per tick. */
export const MIN_TTL_REFRESH_MS = 1000;
/** The first retry after a failed lookup (ms); it doubles, up to the name's `dns_refresh_ms`. */
export const FAILED_RETRY_MS = 1000;
/** How long an endpoint a connection to which failed is passed over (ms), when another remains. */
export const ENDPOINT_DOWN_MS = 5000;

/** A name whose lookup failed during {@link BackendResolver.update}. */
export interface LookupFailure {
  /** The backend address (`api.internal:8080`). */
  readonly address: string;
  /** Why, and what is kept. */
  readonly message: string;
  /** Key paths of the backends using it. */
  readonly paths: NamedAddress["paths"];
}

/** What `/metrics` and the admin API show of a name. */
export interface NameStats {
  /** Lookups that gave addresses. */
  readonly success: number;
  /** Lookups that failed (the last good answer kept). */
  readonly failure: number;
  /** The endpoints in use (`ip:port`). */
  readonly endpoints: readonly string[];
}

/** Options of {@link BackendResolver}. */
export interface BackendResolverOptions {
  /** Looks a name up (`systemDnsLookup()` in production). */
  readonly lookup: DnsLookup;
  /** Monotonic ms; default `performance.now`. */
  readonly now?: () => number;
  /** Schedules a refresh; default the global `setTimeout`. */
  readonly setTimeout?: (fn: () => void, ms: number) => unknown;
  /** Cancels one; default the global `clearTimeout`. */
  readonly clearTimeout?: (handle: unknown) => void;
}

/** One name's state. */
interface NameState {
  readonly address: string;
  readonly name: ResolvedName;
  refreshMs: number;
  paths: NamedAddress["paths"];
  /** Still in the configuration (else kept, unrefreshed, until {@link BackendResolver.forget}). */
  configured: boolean;
  v4: readonly string[];
  v6: readonly string[];
  /** `v4` and `v6` as `ip:port`, sorted. */
  endpoints: readonly string[];
  /** Index of the next endpoint to hand out. */
  next: number;
  success: number;
  failure: number;
  failuresInRow: number;
  timer: unknown;
  inflight: Promise<string | null> | null;
}

/** See the module doc. */
export class BackendResolver {
  /**
   * Called with endpoints that left every answer and are no backend's own
   * address: their connections should drain (the transport sets it).
   */
  onRemoved: (endpoints: readonly string[]) => void = () => {};
  readonly #lookup: DnsLookup;
  readonly #now: () => number;
  readonly #setTimeout: (fn: () => void, ms: number) => unknown;
  readonly #clearTimeout: (handle: unknown) => void;
  readonly #names = new Map<string, NameState>();
  /** Endpoints passed over until the time given (a connection to them failed). */
  readonly #down = new Map<string, number>();
  #literal = new Set<string>();
  #options: LookupOptions = { servers: [], timeoutMs: 5000 };
  #stopped = false;

  /** A resolver tracking nothing yet; {@link update} gives it the configuration's names. */
  constructor(opts: BackendResolverOptions) {
    this.#lookup = opts.lookup;
    this.#now = opts.now ?? (() => performance.now());
    this.#setTimeout = opts.setTimeout ?? ((fn, ms) => setTimeout(fn, ms));
    this.#clearTimeout = opts.clearTimeout ??
      ((h) => clearTimeout(h as ReturnType<typeof setTimeout>));
  }

  /** Names tracked (configured or waiting to be forgotten); 0: every address is used as it is. */
  get size(): number {
    return this.#names.size;
  }

  /**
   * Takes the names of `config`: a new name (or every name, when `dns`
   * changed) is looked up now, and this resolves once those lookups are
   * done (each bounded by `dns.timeout_ms`), with the ones that failed; a
   * name that left the configuration stops being refreshed and keeps its
   * endpoints until {@link forget}.
   */
  async update(config: Config): Promise<LookupFailure[]> {
    this.#stopped = false;
    const options = { servers: [...config.dns.servers], timeoutMs: config.dns.timeout_ms };
    const serversChanged = JSON.stringify(options) !== JSON.stringify(this.#options);
    this.#options = options;
    const { named, literal } = namedAddresses(config);
    this.#literal = literal;
    for (const state of this.#names.values()) {
      if (named.has(state.address)) continue;
      state.configured = false;
      this.#cancel(state);
    }
    const asked: NameState[] = [];
    for (const n of named.values()) {
      const known = this.#names.get(n.address);
      const state = known ?? this.#track(n);
      const fresh = known === undefined || !known.configured || serversChanged;
      state.configured = true;
      state.paths = n.paths;
      const refreshChanged = state.refreshMs !== n.refreshMs;
      state.refreshMs = n.refreshMs;
      if (fresh) asked.push(state);
      else if (refreshChanged) this.#schedule(state, state.refreshMs);
    }
    const outcomes = await Promise.all(asked.map((s) => this.#refreshAfter(s)));
    return asked.flatMap((s, i) => {
      const message = outcomes[i];
      return message === null ? [] : [{ address: s.address, message, paths: s.paths }];
    });
  }

  /** The endpoints of `address` now (`ip:port`), or `undefined` for an address not looked up. */
  endpoints(address: string): readonly string[] | undefined {
    return this.#names.get(address)?.endpoints;
  }

  /**
   * The endpoint the next connection to `address` goes to: the endpoints in
   * turn, passing over one marked down while another is not; `null` when
   * `address` is not looked up or has no endpoint yet (use it as it is).
   */
  endpointFor(address: string): string | null {
    const state = this.#names.get(address);
    if (state === undefined || state.endpoints.length === 0) return null;
    const eps = state.endpoints;
    const now = this.#down.size === 0 ? 0 : this.#now();
    for (let i = 0; i < eps.length; i++) {
      const ep = eps[(state.next + i) % eps.length];
      if (this.#down.size > 0 && (this.#down.get(ep) ?? 0) > now) continue;
      state.next = (state.next + i + 1) % eps.length;
      return ep;
    }
    const ep = eps[state.next % eps.length];
    state.next = (state.next + 1) % eps.length;
    return ep;
  }

  /** A connection to `endpoint` failed: pass it over for {@link ENDPOINT_DOWN_MS}. */
  markDown(endpoint: string): void {
    const now = this.#now();
    this.#down.set(endpoint, now + ENDPOINT_DOWN_MS);
    for (const [ep, until] of this.#down) if (until <= now) this.#down.delete(ep);
  }

  /** The name `address` looks up, or `undefined` when it is not looked up. */
  nameOf(address: string): string | undefined {
    return this.#names.get(address)?.name.host;
  }

  /**
   * Drops `address`, a name no longer configured (its backends' requests
   * are over), and returns its endpoints that nothing else uses (to
   * release). A configured name is kept: `[]`.
   */
  forget(address: string): string[] {
    const state = this.#names.get(address);
    if (state === undefined || state.configured) return [];
    this.#cancel(state);
    this.#names.delete(address);
    return state.endpoints.filter((ep) => !this.inUse(ep));
  }

  /** Whether some name resolves to `endpoint` now, or a backend has it as its address. */
  inUse(endpoint: string): boolean {
    if (this.#literal.has(endpoint)) return true;
    for (const s of this.#names.values()) if (s.endpoints.includes(endpoint)) return true;
    return false;
  }

  /** Counts and endpoints of `address`, or `undefined` when it is not looked up. */
  stats(address: string): NameStats | undefined {
    const s = this.#names.get(address);
    return s && { success: s.success, failure: s.failure, endpoints: s.endpoints };
  }

  /** Stops every refresh (lookups under way finish, their answers are still taken). */
  stop(): void {
    this.#stopped = true;
    for (const state of this.#names.values()) this.#cancel(state);
  }

  #track(n: NamedAddress): NameState {
    const state: NameState = {
      address: n.address,
      name: n.name,
      refreshMs: n.refreshMs,
      paths: n.paths,
      configured: true,
      v4: [],
      v6: [],
      endpoints: [],
      next: 0,
      success: 0,
      failure: 0,
      failuresInRow: 0,
      timer: undefined,
      inflight: null,
    };
    this.#names.set(n.address, state);
    return state;
  }

  /** Looks `state` up once any lookup under way is over; resolves to the failure, or `null`. */
  async #refreshAfter(state: NameState): Promise<string | null> {
    if (state.inflight !== null) await state.inflight;
    return await this.#refresh(state);
  }

  /** Looks `state` up (one lookup at a time), takes the answer, schedules the next. */
  #refresh(state: NameState): Promise<string | null> {
    if (state.inflight !== null) return state.inflight;
    this.#cancel(state);
    const done = this.#lookup(state.name.host, this.#options).then(
      (answer) => this.#take(state, answer),
      (err) => this.#fail(state, err instanceof Error ? err.message : String(err)),
    ).finally(() => {
      state.inflight = null;
    });
    state.inflight = done;
    return done;
  }

  /** Takes an answer: new endpoints, or a failure when it has no address at all. */
  #take(state: NameState, answer: LookupAnswer): string | null {
    const v4 = familyAddresses(answer.v4, state.v4);
    const v6 = familyAddresses(answer.v6, state.v6);
    if (v4.length + v6.length === 0 || !answeredAny(answer)) {
      return this.#fail(state, describeFailure(answer));
    }
    state.success++;
    if (state.failuresInRow > 0) {
      log.info("lookup of {name} answered again after {failures} failures", {
        name: state.name.host,
        failures: state.failuresInRow,
      });
    }
    state.failuresInRow = 0;
    state.v4 = v4;
    state.v6 = v6;
    this.#setEndpoints(state, [...v4, ...v6].map((ip) => endpointOf(ip, state.name.port)).sort());
    this.#schedule(state, Math.min(state.refreshMs, ttlMs(answer)));
    return null;
  }

  /** A failed lookup: counted, logged, the last answer kept, asked again sooner. */
  #fail(state: NameState, reason: string): string {
    state.failure++;
    state.failuresInRow++;
    const kept = state.endpoints.length > 0
      ? `keeping ${state.endpoints.join(", ")}`
      : "no address yet: connecting by name";
    const message = `lookup of ${state.name.host} failed (${reason}); ${kept}`;
    const props = { name: state.name.host, address: state.address, reason, kept };
    if (state.failuresInRow === 1) log.warn("lookup of {name} failed ({reason}); {kept}", props);
    else log.debug("lookup of {name} failed ({reason}); {kept}", props);
    const backoff = FAILED_RETRY_MS * 2 ** Math.min(state.failuresInRow - 1, 20);
    this.#schedule(state, Math.min(state.refreshMs, backoff));
    return message;
  }

  /** Swaps in `endpoints`, reporting those that left and that nothing else uses. */
  #setEndpoints(state: NameState, endpoints: string[]): void {
    const before = state.endpoints;
    if (sameList(before, endpoints)) return;
    state.endpoints = endpoints;
    state.next = 0;
    log.info("{name} resolves to {endpoints}", {
      name: state.name.host,
      address: state.address,
      endpoints: endpoints.join(", "),
    });
    const gone = before.filter((ep) => !endpoints.includes(ep) && !this.inUse(ep));
    if (gone.length > 0) this.onRemoved(gone);
  }

  #schedule(state: NameState, ms: number): void {
    this.#cancel(state);
    if (this.#stopped || !state.configured) return;
    state.timer = this.#setTimeout(() => {
      state.timer = undefined;
      void this.#refresh(state);
    }, ms);
  }

  #cancel(state: NameState): void {
    if (state.timer === undefined) return;
    this.#clearTimeout(state.timer);
    state.timer = undefined;
  }
}

/** A family's addresses after an answer: the new ones, none, or (no answer) the last ones. */
function familyAddresses(answer: FamilyAnswer, last: readonly string[]): readonly string[] {
  if (answer.kind === "addresses") return [...answer.addresses];
  return answer.kind === "none" ? [] : last;
}

/** Whether the server answered at least one of the two questions with addresses. */
function answeredAny(answer: LookupAnswer): boolean {
  return answer.v4.kind === "addresses" || answer.v6.kind === "addresses";
}

/** Why an answer gave no address. */
function describeFailure(answer: LookupAnswer): string {
  const { v4, v6 } = answer;
  if (v4.kind === "none" && v6.kind === "none") return "no A or AAAA record";
  const why = (f: FamilyAnswer) => f.kind === "addresses" ? "answered" : f.message;
  return `A: ${why(v4)}; AAAA: ${why(v6)}`;
}

/** The next refresh the answer's TTLs allow (ms), at least {@link MIN_TTL_REFRESH_MS}. */
function ttlMs(answer: LookupAnswer): number {
  const ttls = [answer.v4, answer.v6].flatMap((f) => f.kind === "addresses" ? [f.ttlSeconds] : []);
  return Math.max(MIN_TTL_REFRESH_MS, Math.min(...ttls) * 1000);
}

/** `ip:port`, IPv6 in brackets. */
function endpointOf(ip: string, port: number): string {
  return ip.includes(":") ? `[${ip}]:${port}` : `${ip}:${port}`;
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
