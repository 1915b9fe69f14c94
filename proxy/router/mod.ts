/**
 * Routing: which pool serves a request (host, longest path prefix, methods,
 * header conditions; the precedence is `routePrecedence`), and which
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

export {
  type CompiledRoute,
  compileRoute,
  type FieldCondition,
  type HeaderCondition,
  normalizeHost,
  type RequestFields,
  routePrecedence,
  Router,
  type RouteRule,
} from "./router.ts";
export { checkRequestTarget } from "./request_target.ts";
