/**
 * The decisions of each pool's `auth`, for `/metrics`
 * (`spooky_auth_decisions_total{pool,method,result}`). Kept by
 * `ProxyRuntime`, so a reload does not reset them.
 *
 * `method` is the credential the request carried: `api_key`, `jwt`, or
 * `none` (no credential); `result` is `allowed`, or why it was refused:
 * `missing` (no credential), `invalid_request`, `invalid_token`,
 * `insufficient_scope` (the RFC 6750 codes).
 *
 * @example
 * ```ts
 * const counters = new AuthCounters();
 * counters.of("api").count("jwt", "allowed");
 * counters.snapshot([["api", ["jwt"]]]); // [{ pool: "api", method: "none", result: "missing", count: 0 }, …]
 * ```
 *
 * @module
 */

/** The credential a request was judged by. */
export type AuthMethod = "api_key" | "jwt" | "none";

/** What became of it. */
export type AuthResult =
  | "allowed"
  | "missing"
  | "invalid_request"
  | "invalid_token"
  | "insufficient_scope";

/** The results each method can have, in the order `/metrics` shows them. */
const RESULTS: Readonly<Record<AuthMethod, readonly AuthResult[]>> = {
  none: ["missing"],
  api_key: ["allowed", "invalid_request", "invalid_token"],
  jwt: ["allowed", "invalid_request", "invalid_token", "insufficient_scope"],
};

/** One series of `spooky_auth_decisions_total`. */
export interface AuthDecisionCount {
  /** The pool. */
  pool: string;
  /** The credential judged. */
  method: AuthMethod;
  /** The decision. */
  result: AuthResult;
  /** How many requests. */
  count: number;
}

/** One pool's counts. */
export class PoolAuthCounts {
  readonly #counts: Record<AuthMethod, Record<AuthResult, number>> = {
    none: zeros(),
    api_key: zeros(),
    jwt: zeros(),
  };

  /** Counts one decision. */
  count(method: AuthMethod, result: AuthResult): void {
    this.#counts[method][result]++;
  }

  /** The count of one decision. */
  get(method: AuthMethod, result: AuthResult): number {
    return this.#counts[method][result];
  }
}

function zeros(): Record<AuthResult, number> {
  return { allowed: 0, missing: 0, invalid_request: 0, invalid_token: 0, insufficient_scope: 0 };
}

/** The counts of every pool with `auth`, by pool name. */
export class AuthCounters {
  readonly #byPool = new Map<string, PoolAuthCounts>();

  /** The counts of pool `name` (created at zero). */
  of(name: string): PoolAuthCounts {
    let counts = this.#byPool.get(name);
    if (counts === undefined) {
      counts = new PoolAuthCounts();
      this.#byPool.set(name, counts);
    }
    return counts;
  }

  /**
   * Every series of the configured pools: each pool with the methods its
   * `auth` has (`none` always), every result of each, zeros included.
   */
  snapshot(pools: ReadonlyArray<readonly [string, readonly AuthMethod[]]>): AuthDecisionCount[] {
    const out: AuthDecisionCount[] = [];
    for (const [pool, methods] of pools) {
      const counts = this.of(pool);
      for (const method of ["none", ...methods] as const) {
        for (const result of RESULTS[method]) {
          out.push({ pool, method, result, count: counts.get(method, result) });
        }
      }
    }
    return out;
  }
}
