/**
 * The payments sandbox as a Hono app: `createApp(deps)` wires the routes on
 * every base path, bearer auth, the error envelope, `/health`,
 * `/openapi.json` and `/docs`. Every response carries a fresh `intuit_tid`
 * (the Java SDK reads it from every response); the public token endpoint
 * answers CORS preflights.
 *
 * @example
 * ```ts
 * const kv = await Deno.openKv(":memory:");
 * const app = createApp({ kv, tokens: ["t"] });
 * const res = await app.request("/health");
 * ```
 *
 * @module
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import { getLogger } from "@logtape/logtape";
import { Hono } from "hono";
import { Health } from "../shared/payments_schemas.ts";
import { bearerChecker } from "../shared/bearer.ts";
import { VERSION } from "../shared/version.ts";
import { DOCS_HTML } from "./docs_page.ts";
import { trustedPeers } from "./client_address.ts";
import { INFO_LINK, PaymentsError } from "./domain/errors.ts";
import { createIdGenerator, type IdGenerator } from "./domain/ids.ts";
import { bankAccountEndpoints } from "./routes/bank_accounts.ts";
import { cardEndpoints } from "./routes/cards.ts";
import { chargeEndpoints } from "./routes/charges.ts";
import { echeckEndpoints } from "./routes/echecks.ts";
import {
  BODY_ERROR_RESPONSES,
  type Endpoint,
  mount,
  validRequestId,
  WRITE_UNAVAILABLE_RESPONSE,
} from "./routes/_endpoint.ts";
import { tokenEndpoints } from "./routes/tokens.ts";
import { RateLimiter, type RateLimitOptions, TOKEN_RATE_LIMIT } from "./rate_limit.ts";
import { PaymentsService } from "./service.ts";
import { PaymentsStore } from "./store/kv_store.ts";

const log = getLogger(["payments", "http"]);

/** Most checks a KV Connect server (denokv, Deno Deploy) accepts in one atomic commit. */
export const KV_CONNECT_MAX_CHECKS = 10;

/**
 * Base paths always served: the real API's (`/quickbooks/v4`, what the Java
 * and npm SDKs call) and the spec's neutral `/vendor/v4`; `basePaths` adds
 * more.
 */
export const DEFAULT_BASE_PATHS: readonly string[] = ["/quickbooks/v4", "/vendor/v4"];

/** The first default base path (the real API's). */
export const DEFAULT_BASE_PATH: string = DEFAULT_BASE_PATHS[0];

/** Origins allowed to call the token endpoint from a browser by default: any. */
export const DEFAULT_CORS_ORIGINS: readonly string[] = ["*"];

/** Response header naming each response (the real API's transaction id). */
export const INTUIT_TID = "intuit_tid";

/** The base paths served: the defaults plus `extra`, normalised, each once. */
export function basePathsOf(extra: readonly string[] = []): string[] {
  return [...new Set([...DEFAULT_BASE_PATHS, ...extra].map(normalizeBase))];
}

/** Dependencies of {@link createApp}. */
export interface PaymentsDeps {
  /** An open Deno KV handle (the caller closes it). */
  kv: Deno.Kv;
  /**
   * Most versionstamp checks in one commit: 100 for the embedded store
   * (default), {@link KV_CONNECT_MAX_CHECKS} for a KV Connect server.
   */
  maxChecksPerCommit?: number;
  /** Accepted bearer tokens (at least one). */
  tokens: readonly string[];
  /** Base paths to serve the API under besides {@link DEFAULT_BASE_PATHS}. */
  basePaths?: readonly string[];
  /** `infoLink` of every error; default {@link INFO_LINK}. */
  infoLink?: string;
  /**
   * Origins a browser may call the public token endpoint from
   * (`Access-Control-Allow-Origin`); default `["*"]`; empty: no CORS
   * headers. Authenticated routes never send CORS headers.
   */
  corsOrigins?: readonly string[];
  /**
   * CIDRs of proxies whose forwarded client address (`Forwarded` /
   * `X-Forwarded-For`) the token rate limit counts; default none.
   */
  trustedProxies?: readonly string[];
  /** `intuit_tid` generator; default `crypto.randomUUID`. */
  intuitTid?: () => string;
  /** Clock; default `() => new Date()`. */
  now?: () => Date;
  /** Id generator; default time-ordered random ids. */
  ids?: IdGenerator;
  /** Random bytes source; default `crypto.getRandomValues`. */
  random?: (b: Uint8Array) => void;
  /** How long a commit waits for a database locked by another process; default 5 s. */
  lockedWaitMs?: number;
  /** Longest wait for one store call before answering 503; default 10 s. */
  storeDeadlineMs?: number;
  /** How long a request body may take to arrive before 408; default 30 s. */
  bodyTimeoutMs?: number;
  /**
   * Limit of the unauthenticated token endpoint per client address; default
   * {@link TOKEN_RATE_LIMIT} (60 a minute, 30 at once); `false` for none.
   */
  tokenRateLimit?: Omit<RateLimitOptions, "now"> | false;
}

/** Every endpoint of the API, relative to a base path. */
export const ALL_ENDPOINTS: readonly Endpoint[] = [
  ...cardEndpoints,
  ...bankAccountEndpoints,
  ...chargeEndpoints,
  ...echeckEndpoints,
  ...tokenEndpoints,
];

function normalizeBase(p: string): string {
  const trimmed = p.replace(/\/+$/, "");
  return trimmed.startsWith("/") ? trimmed : `/${trimmed}`;
}

/**
 * The response of a failure: the envelope (with `infoLink`), the
 * `Request-Id` of the request echoed when it is a valid one (unless the
 * error sets its own), `Retry-After` on a retryable 503.
 */
function errorResponse(err: PaymentsError, requestId: string | undefined, infoLink: string) {
  const headers = new Headers({ "content-type": "application/json; charset=utf-8" });
  if (err.status === 401) headers.set("www-authenticate", 'Bearer realm="payments"');
  // Storage busy or contended: worth trying again shortly (RFC 9110 §10.2.3).
  if (err.status === 503 && err.retryable) headers.set("retry-after", "1");
  if (requestId) headers.set("request-id", requestId);
  for (const [k, v] of Object.entries(err.headers ?? {})) headers.set(k, v);
  return new Response(JSON.stringify(err.toEnvelope(infoLink)), { status: err.status, headers });
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

/** Headers a browser may send to the token endpoint (answer to a preflight). */
const CORS_ALLOW_HEADERS = "Content-Type, Request-Id, Accept";
/** Response headers a browser script may read from the token endpoint. */
const CORS_EXPOSE_HEADERS = `Request-Id, ${INTUIT_TID}, Retry-After`;

/** Build the OpenAPI 3.1 document of the API served under `basePath`. */
export function buildOpenApiDocument(basePaths: readonly string[]): Record<string, unknown> {
  const doc = new OpenAPIHono();
  doc.openAPIRegistry.registerComponent("securitySchemes", "bearerAuth", {
    type: "http",
    scheme: "bearer",
  });
  const bases = basePaths.length ? basePaths.map(normalizeBase) : [...DEFAULT_BASE_PATHS];
  for (const ep of ALL_ENDPOINTS) {
    const withBody = ep.route.request?.body !== undefined;
    const write = ep.route.method !== "get";
    doc.openAPIRegistry.registerPath({
      ...ep.route,
      responses: {
        ...(withBody ? BODY_ERROR_RESPONSES : {}),
        ...ep.route.responses,
        ...(write ? WRITE_UNAVAILABLE_RESPONSE : {}),
      },
      // Paths are relative to each server (one per base path).
      path: ep.route.path,
      security: ep.public ? [] : [{ bearerAuth: [] }],
    });
  }
  doc.openAPIRegistry.registerPath({
    method: "get",
    path: "/health",
    // At the root, not under a base path.
    servers: [{ url: "/" }],
    operationId: "health",
    tags: ["Service"],
    summary: "Health check (public)",
    responses: {
      200: { description: "Healthy", content: { "application/json": { schema: Health } } },
    },
  });
  return doc.getOpenAPI31Document({
    openapi: "3.1.0",
    info: {
      title: "Payments API sandbox",
      // The build's version (deno.json's, as `payments -V` prints); the API it
      // serves is the payments REST API v4.
      version: VERSION,
      description: "Stateful sandbox of the payments REST API v4, served under every base path " +
        `(${bases.map((b) => `\`${b}\``).join(", ")}; \`/health\` is at the root). Send ` +
        "`Authorization: Bearer <token>`; `Request-Id` makes writes idempotent. Every " +
        "response carries a unique `intuit_tid` header.",
    },
    servers: bases.map((url) => ({ url, description: `Base path ${url}` })),
  }) as unknown as Record<string, unknown>;
}

/**
 * Build the payments app. The caller owns `deps.kv`.
 */
export function createApp(deps: PaymentsDeps): Hono {
  if (deps.tokens.length === 0) throw new Error("createApp: at least one token is required");
  const random = deps.random ?? ((b: Uint8Array) => void crypto.getRandomValues(b));
  const now = deps.now ?? (() => new Date());
  const svc = new PaymentsService({
    store: new PaymentsStore(deps.kv, {
      maxChecksPerCommit: deps.maxChecksPerCommit,
      lockedWaitMs: deps.lockedWaitMs,
      deadlineMs: deps.storeDeadlineMs,
    }),
    now,
    ids: deps.ids ?? createIdGenerator(() => now().getTime(), random),
    random,
  });
  const basePaths = basePathsOf(deps.basePaths);
  const infoLink = deps.infoLink ?? INFO_LINK;
  const corsOrigins = deps.corsOrigins ?? DEFAULT_CORS_ORIGINS;
  const trustedProxies = trustedPeers(deps.trustedProxies ?? []);
  const tokenPaths = new Set(basePaths.map((b) => `${b}/payments/tokens`));
  const newTid = deps.intuitTid ?? (() => crypto.randomUUID());
  let openapiJson: string | undefined;

  const app = new Hono({ strict: false });

  app.get("/health", (c) => c.json({ status: "ok", timestamp: now().toISOString() }));
  app.get("/openapi.json", () => {
    openapiJson ??= JSON.stringify(buildOpenApiDocument(basePaths));
    return new Response(openapiJson, {
      headers: { "content-type": "application/json; charset=utf-8" },
    });
  });
  app.get("/docs", (c) => c.html(DOCS_HTML));

  // Each private endpoint checks the bearer token itself before anything else.
  const allowed = bearerChecker(deps.tokens);
  const rateLimiter = deps.tokenRateLimit === false ? undefined : new RateLimiter({
    ...(deps.tokenRateLimit ?? TOKEN_RATE_LIMIT),
    now: () => now().getTime(),
  });
  const api = mount(ALL_ENDPOINTS, svc, allowed, {
    bodyTimeoutMs: deps.bodyTimeoutMs,
    rateLimiter,
    trustedProxies,
  });
  for (const base of basePaths) app.route(base, api);

  // An unknown path under a base path is 401 without a valid token (nothing
  // about the API is told to an unauthenticated caller), 404 with one.
  app.notFound((c) => {
    const path = c.req.path;
    const underBase = basePaths.some((b) => path === b || path.startsWith(`${b}/`));
    const requestId = validRequestId(c.req.header("request-id"));
    if (underBase && !allowed(c.req.raw.headers.get("authorization") ?? undefined)) {
      return errorResponse(PaymentsError.unauthorized(), requestId, infoLink);
    }
    const served = `the API is served under ${basePaths.join(", ")}`;
    return errorResponse(
      PaymentsError.notFound("path", "No such resource or path", `no such path: ${served}`),
      requestId,
      infoLink,
    );
  });
  app.onError((err, c) => {
    const requestId = validRequestId(c.req.header("request-id"));
    if (err instanceof PaymentsError) return errorResponse(err, requestId, infoLink);
    log.error("unhandled error: {error} intuit_tid={intuitTid}", {
      error: err,
      intuitTid: (c.env as { intuitTid?: string } | undefined)?.intuitTid,
    });
    return errorResponse(PaymentsError.system("internal error", 500, false), requestId, infoLink);
  });

  // Every response gets its own intuit_tid, written to the request's log
  // line too (debug level; failures with status 500 and up at warning). The
  // token endpoint answers CORS preflights and labels its responses for
  // browsers. Done around the router rather than as Hono middleware, so
  // each request still runs exactly one handler.
  const route = app.fetch;
  const debug = log.isEnabledFor("debug");
  const finish = (req: Request, res: Response, tid: string, start: number, cors: boolean) => {
    try {
      res.headers.set(INTUIT_TID, tid);
    } catch {
      res = new Response(res.body, res); // immutable headers: copy
      res.headers.set(INTUIT_TID, tid);
    }
    if (cors) {
      for (const [k, v] of Object.entries(corsHeaders(corsOrigins, req.headers.get("origin")))) {
        res.headers.set(k, v);
      }
      if (res.headers.has("access-control-allow-origin")) {
        res.headers.set("access-control-expose-headers", CORS_EXPOSE_HEADERS);
      }
    }
    if (debug || res.status >= 500) {
      const fields = {
        method: req.method,
        path: pathOf(req.url),
        status: res.status,
        ms: Math.round((performance.now() - start) * 10) / 10,
        intuitTid: tid,
        requestId: validRequestId(req.headers.get("request-id")) ?? "",
      };
      const line = "{method} {path} {status} {ms}ms intuit_tid={intuitTid} " +
        "request_id={requestId}";
      if (res.status >= 500) log.warn(line, fields);
      else log.debug(line, fields);
    }
    return res;
  };
  app.fetch = (req: Request, env?: unknown, ctx?: unknown) => {
    const tid = newTid();
    const start = performance.now();
    const cors = corsOrigins.length > 0 && req.url.includes("/payments/tokens") &&
      tokenPaths.has(pathOf(req.url));
    if (cors && req.method === "OPTIONS") {
      const res = new Response(null, {
        status: 204,
        headers: {
          ...corsHeaders(corsOrigins, req.headers.get("origin")),
          "access-control-allow-methods": "POST, OPTIONS",
          "access-control-allow-headers": CORS_ALLOW_HEADERS,
          "access-control-max-age": "600",
        },
      });
      return finish(req, res, tid, start, false);
    }
    const remoteAddr = (env as { remoteAddr?: unknown } | undefined)?.remoteAddr;
    const out = route(req, { remoteAddr, intuitTid: tid }, ctx as never);
    return out instanceof Promise
      ? out.then((res) => finish(req, res, tid, start, cors))
      : finish(req, out, tid, start, cors);
  };
  return app;
}
