/**
 * Route matching: which pool serves a request. The routes of all pools are
 * considered together, and the order they are tried in is written once, in
 * {@link routePrecedence}:
 *
 * 1. **host**: a route with `host` is a candidate only for that host
 *    (case-insensitive, port ignored, `*.example.com` for any subdomain);
 *    a route without one, for any host;
 * 2. **the longest `path_prefix`** of the candidates wins (a route without
 *    one counts as `/`);
 * 3. at equal prefix, **the most specific**: the one with more conditions
 *    (a `host`, a `methods` list and each `headers` entry count one each),
 *    so a host-only route beats a catch-all `/`, and `GET /api` with a
 *    header beats `GET /api` without;
 * 4. then **configuration order** (the order of the pools in the file).
 *
 * The first route in that order whose conditions all hold serves the
 * request. A `path_prefix` that does not end in `/` matches on a segment
 * boundary: `/static` matches `/static`, `/static/x` and `/static?q`, never
 * `/staticx`; one that ends in `/` matches what starts with it.
 *
 * When no route matches but some matched everything except the method,
 * {@link Router.allowedMethods} names their methods (the proxy answers 405
 * with `Allow`); otherwise the answer is 404.
 *
 * The common case, routes without `methods` or `headers`, allocates
 * nothing per request: a prefix test on the path (query included, since a
 * prefix holds no `?`) and, for routes with a host, one normalization of the
 * request's host.
 *
 * @module
 */

/** A `route.headers` condition: an exact value, a value prefix, or presence (absence with `false`). */
export type HeaderCondition = string | { readonly prefix: string } | { readonly present: boolean };

/** One pool's route, as in the configuration. */
export interface RouteRule {
  /** The pool (`upstream` key) the route sends to. */
  pool: string;
  /** `route.host`: the request's host must equal it (no port, any case); absent: any host. */
  host?: string;
  /** `route.path_prefix`: the path must start with it (on a segment boundary); absent: any path. */
  path_prefix?: string;
  /** `route.methods`: the request's method must be one of them (case-sensitive); absent: any. */
  methods?: readonly string[];
  /** `route.headers`: lowercase field name → condition; every one must hold; absent: none. */
  headers?: Readonly<Record<string, HeaderCondition>>;
}

/** The fields of a request, lowercase names, in order (`RequestHead.fields`). */
export type RequestFields = ReadonlyArray<readonly [string, string]>;

/** One compiled `headers` condition. */
export interface FieldCondition {
  /** The field's name, lowercase. */
  readonly name: string;
  /** What must hold: the exact value, a value prefix, the field there, or not there. */
  readonly kind: "exact" | "prefix" | "present" | "absent";
  /** The value or prefix (`""` for presence and absence). */
  readonly value: string;
}

/** A route ready to match: its rule compiled and its place in the precedence. */
export interface CompiledRoute {
  /** The pool it sends to. */
  readonly pool: string;
  /** The path prefix (`/` when the rule has none). */
  readonly prefix: string;
  /** Whether the prefix must end on a segment boundary (it does not end in `/`). */
  readonly boundary: boolean;
  /** Whether the rule has a host (exact or wildcard). */
  readonly hasHost: boolean;
  /** The exact host, normalized. */
  readonly exactHost: string | undefined;
  /** `.example.com` of a `*.example.com` host. */
  readonly wildcardSuffix: string | undefined;
  /** Methods allowed, or `null` for any. */
  readonly methods: readonly string[] | null;
  /** Field conditions, or `null` for none. */
  readonly fields: readonly FieldCondition[] | null;
  /** Conditions counted for precedence: host, methods, each field. */
  readonly conditions: number;
  /** Position in the configuration. */
  readonly order: number;
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
 * The order routes are tried in (negative: `a` first): the longest prefix,
 * then more conditions, then configuration order. Host is not a key here:
 * it decides which routes are candidates at all (see the module doc).
 */
export function routePrecedence(a: CompiledRoute, b: CompiledRoute): number {
  return b.prefix.length - a.prefix.length || b.conditions - a.conditions || a.order - b.order;
}

/** Compiles `rule`, the `order`-th route of the configuration. */
export function compileRoute(rule: RouteRule, order: number): CompiledRoute {
  const prefix = rule.path_prefix ?? "/";
  const host = rule.host === undefined ? undefined : normalizeHost(rule.host);
  const methods = rule.methods === undefined ? null : [...rule.methods];
  const fields = rule.headers === undefined ? null : Object.entries(rule.headers).map(compileField);
  return {
    pool: rule.pool,
    prefix,
    boundary: !prefix.endsWith("/"),
    hasHost: host !== undefined,
    exactHost: host !== undefined && !host.startsWith("*.") ? host : undefined,
    wildcardSuffix: host?.startsWith("*.") ? host.slice(1) : undefined,
    methods,
    fields: fields !== null && fields.length > 0 ? fields : null,
    conditions: (host !== undefined ? 1 : 0) + (methods !== null ? 1 : 0) + (fields?.length ?? 0),
    order,
  };
}

function compileField([name, condition]: [string, HeaderCondition]): FieldCondition {
  const lower = name.toLowerCase();
  if (typeof condition === "string") return { name: lower, kind: "exact", value: condition };
  if ("prefix" in condition) return { name: lower, kind: "prefix", value: condition.prefix };
  return { name: lower, kind: condition.present ? "present" : "absent", value: "" };
}

/** Whether `path` (query included) starts with the route's prefix, on a segment boundary if it must. */
function prefixMatches(r: CompiledRoute, path: string): boolean {
  if (!path.startsWith(r.prefix)) return false;
  if (!r.boundary || path.length === r.prefix.length) return true;
  const next = path.charCodeAt(r.prefix.length);
  return next === 0x2f /* / */ || next === 0x3f /* ? */;
}

/** Whether the normalized request host `h` is the route's. */
function hostMatches(r: CompiledRoute, h: string | undefined): boolean {
  if (h === undefined) return false;
  if (r.exactHost !== undefined) return h === r.exactHost;
  const suffix = r.wildcardSuffix!;
  return h.length > suffix.length && h.endsWith(suffix);
}

/** Whether one field condition holds for `fields`. */
function fieldHolds(c: FieldCondition, fields: RequestFields): boolean {
  for (const [name, value] of fields) {
    if (name !== c.name) continue;
    if (c.kind === "present") return true;
    if (c.kind === "absent") return false;
    if (c.kind === "exact" ? value === c.value : value.startsWith(c.value)) return true;
  }
  return c.kind === "absent";
}

/** Whether every field condition of `r` holds. */
function fieldsHold(r: CompiledRoute, fields: RequestFields): boolean {
  if (r.fields === null) return true;
  for (const c of r.fields) if (!fieldHolds(c, fields)) return false;
  return true;
}

const NO_FIELDS: RequestFields = [];

/**
 * Chooses the pool for a request.
 *
 * @example
 * ```ts
 * const r = new Router([
 *   { pool: "api", path_prefix: "/api" },
 *   { pool: "writes", path_prefix: "/api", methods: ["POST", "PUT"] },
 *   { pool: "web", path_prefix: "/" },
 * ]);
 * r.match("example.com", "/api/x", "GET"); // "api"
 * r.match("example.com", "/api/x", "POST"); // "writes"
 * r.match("example.com", "/apix", "GET"); // "web": /api ends on a segment boundary
 * ```
 */
export class Router {
  readonly #routes: CompiledRoute[];

  /** Compiles the routes of every pool, in configuration order, and sorts them by precedence. */
  constructor(rules: readonly RouteRule[]) {
    this.#routes = rules.map(compileRoute).sort(routePrecedence);
  }

  /**
   * The pool for a request, or `null`: `host` may carry a port, `path` a
   * query; `method` and `fields` are needed only by routes with `methods`
   * or `headers` (a route with `methods` never matches without a method).
   */
  match(
    host: string | undefined,
    path: string,
    method?: string,
    fields: RequestFields = NO_FIELDS,
  ): string | null {
    let h: string | undefined | null = null; // normalized on first need
    for (const r of this.#routes) {
      if (!prefixMatches(r, path)) continue;
      if (r.hasHost) {
        if (h === null) h = host === undefined ? undefined : normalizeHost(host);
        if (!hostMatches(r, h)) continue;
      }
      if (r.methods !== null && (method === undefined || !r.methods.includes(method))) continue;
      if (!fieldsHold(r, fields)) continue;
      return r.pool;
    }
    return null;
  }

  /**
   * For a request {@link match} found no pool for: the methods of the routes
   * it matched in everything but the method, sorted (answer 405 with them
   * as `Allow`), or `null` when there is none (answer 404).
   */
  allowedMethods(
    host: string | undefined,
    path: string,
    fields: RequestFields = NO_FIELDS,
  ): string[] | null {
    const h = host === undefined ? undefined : normalizeHost(host);
    const allowed = new Set<string>();
    for (const r of this.#routes) {
      if (r.methods === null || !prefixMatches(r, path)) continue;
      if (r.hasHost && !hostMatches(r, h)) continue;
      if (!fieldsHold(r, fields)) continue;
      for (const m of r.methods) allowed.add(m);
    }
    return allowed.size === 0 ? null : [...allowed].sort();
  }
}
