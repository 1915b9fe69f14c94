/**
 * The rate limiter behind `rate_limits`: a {@link RateLimiter} answers, for
 * one key at one instant, whether a request may pass. The proxy's own
 * {@link GcraLimiter} keeps its state in this process (each instance limits
 * on its own); a limiter backed by a shared store (Redis, a KV) would
 * implement the same interface.
 *
 * GCRA (the generic cell rate algorithm) is a token bucket written as one
 * number per key, the "theoretical arrival time" (TAT): a request at `now`
 * moves it to `max(TAT, now) + T` (`T` = 1 / rate) and passes while that
 * stays within `burst × T` of `now`. A key whose TAT is in the past holds
 * a full bucket, exactly as a key never seen, so dropping it loses nothing.
 *
 * The key table is bounded: at `maxKeys` the least recently used key is
 * dropped (a `Map` kept in use order), so a flood of distinct keys costs at
 * most `maxKeys` entries; the keys it drops are the longest idle.
 *
 * @example
 * ```ts
 * const limiter = new GcraLimiter({ requestsPerSecond: 10, burst: 5, maxKeys: 10_000 });
 * const d = limiter.take("4:192.0.2.0/24", performance.now());
 * if (!d.allowed) d.retryAfterSeconds; // answer 429 with Retry-After
 * ```
 *
 * @module
 */

/** One decision of a {@link RateLimiter}. */
export interface RateDecision {
  /** Whether the request may pass (it was counted if so). */
  readonly allowed: boolean;
  /** Requests the key may still make at once after this one. */
  readonly remaining: number;
  /** Seconds until the key's bucket is full again (rounded up). */
  readonly resetSeconds: number;
  /** Seconds until a refused request would pass (0 when allowed; rounded up, at least 1 when refused). */
  readonly retryAfterSeconds: number;
}

/** Decides requests against a limit, per key. */
export interface RateLimiter {
  /** Counts one request of `key` at `now` (monotonic milliseconds) if it may pass. */
  take(key: string, now: number): RateDecision;
  /** Keys held now (bounded by the limiter's key cap). */
  readonly size: number;
}

/** A limit's numbers. */
export interface GcraOptions {
  /** Sustained rate, requests per second (> 0). */
  requestsPerSecond: number;
  /** Requests a key with a full bucket may make at once (≥ 1). */
  burst: number;
  /** Keys held at most; past it the least recently used is dropped. */
  maxKeys: number;
}

/** In-memory GCRA limiter with a bounded key table (see the module doc). */
export class GcraLimiter implements RateLimiter {
  /** Emission interval `T`, milliseconds. */
  readonly #interval: number;
  /** `burst × T`: how far ahead of now a key's TAT may be. */
  readonly #tolerance: number;
  readonly #maxKeys: number;
  /** TAT by key, least recently used first. */
  readonly #tat = new Map<string, number>();
  /**
   * Where eviction left off in {@link #tat}: every key before it is gone,
   * so the next one is the oldest. (A new `keys()` iterator per eviction
   * would step over every deleted slot from the start: O(cap) each.)
   */
  #oldest: Iterator<string> | null = null;

  /** A limiter of `opts`. */
  constructor(opts: GcraOptions) {
    this.#interval = 1000 / opts.requestsPerSecond;
    this.#tolerance = opts.burst * this.#interval;
    this.#maxKeys = Math.max(1, opts.maxKeys);
  }

  /** Keys held now. */
  get size(): number {
    return this.#tat.size;
  }

  /** See {@link RateLimiter.take}. */
  take(key: string, now: number): RateDecision {
    const table = this.#tat;
    const stored = table.get(key);
    const tat = stored === undefined || stored < now ? now : stored;
    const next = tat + this.#interval;
    const ahead = next - now;
    if (ahead > this.#tolerance) {
      // Refused: nothing counted, the key's place in the use order unchanged.
      return {
        allowed: false,
        remaining: 0,
        resetSeconds: Math.ceil((tat - now) / 1000),
        retryAfterSeconds: Math.max(1, Math.ceil((ahead - this.#tolerance) / 1000)),
      };
    }
    if (stored !== undefined) table.delete(key);
    else if (table.size >= this.#maxKeys) this.#evictOldest();
    table.set(key, next);
    return {
      allowed: true,
      remaining: Math.floor((this.#tolerance - ahead) / this.#interval + 1e-9),
      resetSeconds: Math.ceil(ahead / 1000),
      retryAfterSeconds: 0,
    };
  }

  /** Drops the least recently used key. */
  #evictOldest(): void {
    let next = this.#oldest?.next();
    if (next === undefined || next.done) {
      this.#oldest = this.#tat.keys();
      next = this.#oldest.next();
    }
    if (!next.done) this.#tat.delete(next.value);
  }
}
