/**
 * Route matching of the spec: routes of all pools are considered together and
 * the longest matching path prefix wins; a host rule matches case-insensitively,
 * ignores the port and accepts `*.example.com` wildcards; host + prefix needs
 * both. A host-only route matches like the prefix `/`, and at equal prefix
 * length a route with a host beats one without (so a host-only route is not
 * shadowed by a catch-all `/`).
 *
 * @module
 */

/** One pool's route, as in the configuration. */
export interface RouteRule {
  /** The pool (`upstream` key) the route sends to. */
  pool: string;
  /** `route.host`: the request's host must equal it (no port, any case); absent: any host. */
  host?: string;
  /** `route.path_prefix`: the path must start with it; absent: any path. */
  path_prefix?: string;
}

interface CompiledRoute {
  pool: string;
  prefix: string;
  exactHost?: string;
  wildcardSuffix?: string;
  hasHost: boolean;
}

/** Lowercases a host and strips its port (`Example.com:443` → `example.com`, `[::1]:8` → `[::1]`). */
export function normalizeHost(host: string): string {
  let h = host.trim().toLowerCase();
  if (h.startsWith("[")) {
    const end = h.indexOf("]");
    return end === -1 ? h : h.slice(0, end + 1);
  }
  const colon = h.indexOf(":");
  if (colon !== -1 && h.indexOf(":", colon + 1) === -1) h = h.slice(0, colon);
  if (h.endsWith(".")) h = h.slice(0, -1);
  return h;
}

/**
 * Chooses the pool for a request.
 *
 * @example
 * ```ts
 * const r = new Router([{ pool: "api", path_prefix: "/api" }, { pool: "web", path_prefix: "/" }]);
 * r.match("example.com", "/api/x"); // "api"
 * ```
 */
export class Router {
  readonly #routes: CompiledRoute[];

  /** Compiles the routes of every pool; matching order is longest prefix first. */
  constructor(rules: readonly RouteRule[]) {
    this.#routes = rules.map((r) => {
      const route: CompiledRoute = {
        pool: r.pool,
        prefix: r.path_prefix ?? "/",
        hasHost: r.host !== undefined,
      };
      if (r.host !== undefined) {
        const h = normalizeHost(r.host);
        if (h.startsWith("*.")) route.wildcardSuffix = h.slice(1);
        else route.exactHost = h;
      }
      return route;
    });
    // Longest prefix first; at equal length, host rules first; then config order.
    this.#routes.sort((a, b) =>
      b.prefix.length - a.prefix.length || Number(b.hasHost) - Number(a.hasHost)
    );
  }

  /** The pool for `host` (may carry a port) and `path` (query ignored), or `null` (404). */
  match(host: string | undefined, path: string): string | null {
    const q = path.indexOf("?");
    const p = q === -1 ? path : path.slice(0, q);
    const h = host === undefined ? undefined : normalizeHost(host);
    for (const r of this.#routes) {
      if (!p.startsWith(r.prefix)) continue;
      if (r.hasHost) {
        if (h === undefined) continue;
        if (r.exactHost !== undefined && h !== r.exactHost) continue;
        if (
          r.wildcardSuffix !== undefined &&
          !(h.endsWith(r.wildcardSuffix) && h.length > r.wildcardSuffix.length)
        ) continue;
      }
      return r.pool;
    }
    return null;
  }
}
