/**
 * Passive health (outlier detection) from the outcome of real requests.
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import { type Clock, HEALTH_CHECK_DEFAULTS, MONOTONIC_CLOCK } from "./types.ts";

const log = getLogger(["proxy", "health"]);

/**
 * Kinds of request failure that count against a backend (the table in
 * `upstream/outcome.ts` decides which outcome reports which): nothing
 * reached it (`connect`), it reset the stream (`reset`), broke HTTP/2
 * (`protocol`), answered with a head no client may get
 * (`invalid_response`), did not answer in time (`timeout`), or answered
 * 500-599 (`5xx`).
 */
export type PassiveFailureKind =
  | "connect"
  | "reset"
  | "protocol"
  | "invalid_response"
  | "timeout"
  | "5xx";

/** Options of {@link PassiveHealth}. */
export interface PassiveHealthOptions {
  /** Consecutive failed requests that eject a backend; default 5. */
  readonly consecutiveFailures?: number;
  /** How long an ejection lasts, in ms; default 5000 (the `cooldown_ms` default). */
  readonly ejectMs?: number;
  /** Clock in ms; default `performance.now()`. */
  readonly clock?: Clock;
  /** Called when a backend is ejected (after it is logged). */
  readonly onEject?: (ev: { id: string; kind: PassiveFailureKind; until: number }) => void;
}

interface Entry {
  failures: number;
  ejectedUntil: number;
}

/**
 * Ejects backends that fail real requests, between active probes.
 *
 * - Every proxied request reports its outcome: {@link reportSuccess} for a
 *   response that is not a 5xx, {@link reportFailure} with the
 *   {@link PassiveFailureKind} (connect, reset, protocol error, invalid
 *   response, timeout, or a 500-599 answer). A client that left, a request
 *   the proxy could not express, and a failure inside the proxy report
 *   nothing: they say nothing about the backend.
 * - `consecutiveFailures` failures in a row, with no success between them,
 *   eject the backend for `ejectMs`: {@link isEjected} is true until then,
 *   and the balancer should skip it (`isAvailable = (id) =>
 *   checker.isHealthy(id) && !passive.isEjected(id)`).
 * - When the ejection ends the backend is back at once with a clean count;
 *   it is ejected again only after another full run of failures. Reports
 *   arriving while it is ejected (requests that were already in flight) do
 *   not extend the ejection; a success among them still clears the count.
 * - A backend never seen is not ejected. State is kept per backend id and
 *   only for ids that reported something.
 *
 * This complements the active {@link HealthChecker}: a backend that stops
 * answering is caught after a few requests instead of after
 * `failure_threshold × interval`, and a short ejection (no cooldown state,
 * no probes) keeps it from taking traffic meanwhile.
 *
 * @example
 * ```ts
 * declare const backend: { id: string };
 * declare function forward(backend: { id: string }): Promise<Response>;
 *
 * const passive = new PassiveHealth({ consecutiveFailures: 5, ejectMs: 5000 });
 * try {
 *   const res = await forward(backend);
 *   if (res.status >= 500) passive.reportFailure(backend.id, "5xx");
 *   else passive.reportSuccess(backend.id);
 * } catch {
 *   passive.reportFailure(backend.id, "reset");
 * }
 * ```
 */
export class PassiveHealth {
  readonly #threshold: number;
  readonly #ejectMs: number;
  readonly #clock: Clock;
  readonly #onEject: PassiveHealthOptions["onEject"];
  readonly #entries = new Map<string, Entry>();

  /**
   * Creates the detector; every backend starts not ejected.
   *
   * @throws {RangeError} when `consecutiveFailures` is not an integer >= 1 or `ejectMs` < 0.
   */
  constructor(opts: PassiveHealthOptions = {}) {
    this.#threshold = opts.consecutiveFailures ?? 5;
    this.#ejectMs = opts.ejectMs ?? HEALTH_CHECK_DEFAULTS.cooldown_ms;
    this.#clock = opts.clock ?? MONOTONIC_CLOCK;
    this.#onEject = opts.onEject;
    if (!Number.isInteger(this.#threshold) || this.#threshold < 1) {
      throw new RangeError("consecutiveFailures must be an integer >= 1");
    }
    if (!(this.#ejectMs >= 0) || !Number.isFinite(this.#ejectMs)) {
      throw new RangeError("ejectMs must be a finite number >= 0");
    }
  }

  /** Records a request the backend served (any status below 500). */
  reportSuccess(id: string): void {
    const e = this.#entries.get(id);
    if (e !== undefined) e.failures = 0;
  }

  /**
   * Records a failed request. Returns `true` when this failure ejected the
   * backend.
   */
  reportFailure(id: string, kind: PassiveFailureKind): boolean {
    const now = this.#clock.now();
    let e = this.#entries.get(id);
    if (e === undefined) {
      e = { failures: 0, ejectedUntil: -Infinity };
      this.#entries.set(id, e);
    }
    if (now < e.ejectedUntil) return false;
    e.failures++;
    if (e.failures < this.#threshold) return false;
    e.failures = 0;
    e.ejectedUntil = now + this.#ejectMs;
    log.warn("backend {id} ejected for {ms} ms after {count} consecutive failures ({kind})", {
      id,
      ms: this.#ejectMs,
      count: this.#threshold,
      kind,
    });
    try {
      this.#onEject?.({ id, kind, until: e.ejectedUntil });
    } catch (err) {
      log.error("onEject callback failed for backend {id}: {error}", { id, error: err });
    }
    return true;
  }

  /** Whether the backend is currently ejected. */
  isEjected(id: string): boolean {
    const e = this.#entries.get(id);
    return e !== undefined && this.#clock.now() < e.ejectedUntil;
  }

  /** Ids ejected right now. */
  ejected(): string[] {
    const now = this.#clock.now();
    const out: string[] = [];
    for (const [id, e] of this.#entries) if (now < e.ejectedUntil) out.push(id);
    return out;
  }
}
