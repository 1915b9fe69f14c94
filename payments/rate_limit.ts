/**
 * A per-client-address rate limit (token bucket) for the unauthenticated
 * token endpoint, so that one client cannot fill the store with tokens.
 * IPv6 clients are counted per /64 (one host usually holds a whole /64);
 * IPv4-mapped IPv6 addresses count as their IPv4 address. Memory is bounded:
 * past `maxClients` addresses the least recently seen are forgotten.
 *
 * @example
 * ```ts
 * const limit = new RateLimiter({ perMinute: 60, burst: 20 });
 * const wait = limit.take(clientKey("203.0.113.9")); // 0: go ahead; else seconds to wait
 * ```
 *
 * @module
 */

/** Options of {@link RateLimiter}. */
export interface RateLimitOptions {
  /** Requests per minute a client may make on average. */
  perMinute: number;
  /** Requests a client may make at once (the bucket size). */
  burst: number;
  /** Most client addresses remembered; default 10,000. */
  maxClients?: number;
  /** Clock in epoch milliseconds; default `Date.now`. */
  now?: () => number;
}

/** Default limit of the token endpoint: 60 a minute per client, 30 at once. */
export const TOKEN_RATE_LIMIT: RateLimitOptions = { perMinute: 60, burst: 30 };

/** The bucket key of a client address (IPv6: its /64; no address: one shared bucket). */
export function clientKey(address: string | undefined): string {
  if (!address) return "unknown";
  const a = address.toLowerCase().replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  const mapped = /^::ffff:([0-9.]+)$/.exec(a);
  if (mapped) return mapped[1];
  if (!a.includes(":")) return a;
  // Expand "::" to get the first four groups.
  const [head, tail = ""] = a.split("::");
  const left = head ? head.split(":") : [];
  const right = a.includes("::") && tail ? tail.split(":") : [];
  const groups = [
    ...left,
    ...Array(Math.max(0, 8 - left.length - right.length)).fill("0"),
    ...right,
  ];
  return `${groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, "")).join(":")}::/64`;
}

interface Bucket {
  tokens: number;
  at: number;
}

/** Token buckets per client key. */
export class RateLimiter {
  readonly #perMs: number;
  readonly #burst: number;
  readonly #max: number;
  readonly #now: () => number;
  readonly #buckets = new Map<string, Bucket>();

  /** Build a limiter. */
  constructor(options: RateLimitOptions) {
    this.#perMs = options.perMinute / 60_000;
    this.#burst = Math.max(1, options.burst);
    this.#max = options.maxClients ?? 10_000;
    this.#now = options.now ?? Date.now;
  }

  /** The limit as told to a client. */
  describe(): string {
    return `${Math.round(this.#perMs * 60_000)} requests a minute per client address ` +
      `(${this.#burst} at once)`;
  }

  /**
   * Take one request from `key`'s bucket: 0 when allowed, otherwise the
   * whole seconds until the next request will be (for `Retry-After`).
   */
  take(key: string): number {
    const now = this.#now();
    const b = this.#buckets.get(key);
    let tokens = this.#burst;
    if (b) {
      tokens = Math.min(this.#burst, b.tokens + Math.max(0, now - b.at) * this.#perMs);
      this.#buckets.delete(key); // re-inserted last: the map is in order of last use
    } else if (this.#buckets.size >= this.#max) {
      const oldest = this.#buckets.keys().next().value;
      if (oldest !== undefined) this.#buckets.delete(oldest);
    }
    const allowed = tokens >= 1;
    this.#buckets.set(key, { tokens: allowed ? tokens - 1 : tokens, at: now });
    if (allowed) return 0;
    return Math.max(1, Math.ceil((1 - tokens) / this.#perMs / 1000));
  }
}
