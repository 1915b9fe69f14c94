/**
 * The Hono middleware around every payments request: a fresh `intuit_tid`
 * on every response ({@link intuitTid}; the Java SDK reads it from every
 * response), CORS on the public token endpoint ({@link tokenCors}), and one
 * log line per request ({@link requestLog}). `createApp` (`app.ts`)
 * registers them in that order, before any route.
 *
 * @example
 * ```ts
 * import { Hono } from "hono";
 *
 * const app = new Hono<PaymentsEnv>();
 * app.use(requestLog(), intuitTid(() => crypto.randomUUID()));
 * app.use(tokenCors(["*"], new Set(["/quickbooks/v4/payments/tokens"])));
 * ```
 *
 * @module
 */
import { getLogger } from "@logtape/logtape";
import type { Context, MiddlewareHandler } from "hono";
import { validRequestId } from "./routes/_endpoint.ts";

const log = getLogger(["payments", "http"]);

/** Response header naming each response (the real API's transaction id). */
export const INTUIT_TID = "intuit_tid";

/** Headers a browser may send to the token endpoint (answer to a preflight). */
const CORS_ALLOW_HEADERS = "Content-Type, Request-Id, Accept";
/** Response headers a browser script may read from the token endpoint. */
const CORS_EXPOSE_HEADERS = `Request-Id, ${INTUIT_TID}, Retry-After`;

/** The Hono environment of the payments app: the request's `intuit_tid` as a variable. */
export interface PaymentsEnv {
  /** Set by {@link intuitTid} before any handler runs. */
  Variables: { intuitTid: string };
}

/** Gives every response a fresh `intuit_tid` from `newTid`, also set as the `intuitTid` variable. */
export function intuitTid(newTid: () => string): MiddlewareHandler<PaymentsEnv> {
  return async function intuitTid(c, next) {
    const tid = newTid();
    c.set("intuitTid", tid);
    await next();
    setHeader(c, INTUIT_TID, tid);
  };
}

/**
 * CORS on the token endpoint (`tokenPaths`, one per base path) for browsers
 * of `origins` (`*`: any; empty: no CORS headers at all): a preflight is
 * answered here, other responses are labelled. Authenticated routes never
 * send CORS headers.
 */
export function tokenCors(
  origins: readonly string[],
  tokenPaths: ReadonlySet<string>,
): MiddlewareHandler<PaymentsEnv> {
  return async function tokenCors(c, next) {
    const req = c.req.raw;
    const cors = origins.length > 0 && req.url.includes("/payments/tokens") &&
      tokenPaths.has(pathOf(req.url));
    if (!cors) return await next();
    const origin = req.headers.get("origin");
    if (req.method === "OPTIONS") {
      return new Response(null, {
        status: 204,
        headers: {
          ...corsHeaders(origins, origin),
          "access-control-allow-methods": "POST, OPTIONS",
          "access-control-allow-headers": CORS_ALLOW_HEADERS,
          "access-control-max-age": "600",
        },
      });
    }
    await next();
    for (const [k, v] of Object.entries(corsHeaders(origins, origin))) setHeader(c, k, v);
    if (c.res.headers.has("access-control-allow-origin")) {
      setHeader(c, "access-control-expose-headers", CORS_EXPOSE_HEADERS);
    }
  };
}

/**
 * One line per request with its method, path, status, time, `intuit_tid`
 * and `Request-Id`: at debug level, or at warning for a status of 500 and
 * up (logged whatever the level).
 */
export function requestLog(): MiddlewareHandler<PaymentsEnv> {
  const debug = log.isEnabledFor("debug");
  return async function requestLog(c, next) {
    const start = performance.now();
    await next();
    const status = c.res.status;
    if (!debug && status < 500) return;
    const req = c.req.raw;
    const fields = {
      method: req.method,
      path: pathOf(req.url),
      status,
      ms: Math.round((performance.now() - start) * 10) / 10,
      intuitTid: c.get("intuitTid"),
      requestId: validRequestId(req.headers.get("request-id")) ?? "",
    };
    const line = "{method} {path} {status} {ms}ms intuit_tid={intuitTid} request_id={requestId}";
    if (status >= 500) log.warn(line, fields);
    else log.debug(line, fields);
  };
}

/** Sets a header of the response, copying a response whose headers are immutable. */
function setHeader(c: Context<PaymentsEnv>, name: string, value: string): void {
  try {
    c.res.headers.set(name, value);
  } catch {
    c.res = new Response(c.res.body, c.res);
    c.res.headers.set(name, value);
  }
}

/** The path of a request URL (no query), without a trailing slash. */
function pathOf(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start < 0) return "/";
  const q = url.indexOf("?", start);
  const path = q < 0 ? url.slice(start) : url.slice(start, q);
  return path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path;
}

/** The CORS headers of a token endpoint response to a request from `origin`. */
function corsHeaders(origins: readonly string[], origin: string | null): Record<string, string> {
  if (origins.includes("*")) return { "access-control-allow-origin": "*" };
  if (origin !== null && origins.includes(origin)) {
    return { "access-control-allow-origin": origin, "vary": "Origin" };
  }
  // The answer depends on the origin either way: caches must key on it.
  return { "vary": "Origin" };
}
