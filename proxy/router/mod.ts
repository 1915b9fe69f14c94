/**
 * Routing: which pool serves a request (host, longest path prefix), and which
 * request targets are refused before routing because they could mean another
 * path to a backend than to the router.
 *
 * @example
 * ```ts
 * import { checkRequestTarget, Router } from "./mod.ts";
 *
 * const router = new Router([{ pool: "api", path_prefix: "/api" }, { pool: "web" }]);
 * if (checkRequestTarget("/api/x") === null) router.match("example.com", "/api/x"); // "api"
 * ```
 *
 * @module
 */

export { normalizeHost, Router, type RouteRule } from "./router.ts";
export { checkRequestTarget } from "./request_target.ts";
