/**
 * Requests each limit let through and refused, by limit name, for
 * `/metrics` (`spooky_rate_limit_decisions_total`). Kept by `ProxyRuntime`,
 * so a reload does not reset them.
 *
 * @example
 * ```ts
 * const counters = new RateLimitCounters();
 * counters.of("api").limited++;
 * counters.snapshot(["api"]); // [{ limit: "api", allowed: 0, limited: 1 }]
 * ```
 *
 * @module
 */

/** One limit's counts. */
export interface LimitCounts {
  /** Requests the limit let through. */
  allowed: number;
  /** Requests it refused (429). */
  limited: number;
}

/** The counts of every limit, by name. */
export class RateLimitCounters {
  readonly #byName = new Map<string, LimitCounts>();

  /** The counts of limit `name` (created at zero). */
  of(name: string): LimitCounts {
    let counts = this.#byName.get(name);
    if (counts === undefined) {
      counts = { allowed: 0, limited: 0 };
      this.#byName.set(name, counts);
    }
    return counts;
  }

  /** The counts of `names` (the configured limits), in that order. */
  snapshot(names: readonly string[]): Array<{ limit: string } & LimitCounts> {
    return names.map((limit) => ({ limit, ...this.of(limit) }));
  }
}
