/**
 * The payments sandbox as a Hono app: `createApp(deps)` wires the routes on
 * every base path over a {@link PaymentsService}, bearer auth, the error
 * envelope, `/health`, `/openapi.json` and `/docs`, behind the middleware of
 * `middleware.ts` (a fresh `intuit_tid` on every response, CORS on the
 * public token endpoint, a log line per request). The service and its store
 * are built by `server.ts` (`createPaymentsService`).
 *
 * @example
 * ```ts
 * import { createPaymentsService } from "./server.ts";
 *
 * const kv = await Deno.openKv(":memory:");
 * const app = createApp({ service: createPaymentsService({ kv }), tokens: ["t"] });
 * const res = await app.request("/health");
 * ```
 *
 * @module
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import { getLogger } from "@logtape/logtape";
import { type Context, Hono } from "hono";
import { Health } from "../shared/payments_schemas.ts";
import { bearerChecker } from "../shared/bearer.ts";
import { VERSION } from "../shared/version.ts";
import { DOCS_HTML } from "./docs_page.ts";
import { trustedPeers } from "./client_address.ts";
import { INFO_LINK, PaymentsError } from "./domain/errors.ts";
import { intuitTid, type PaymentsEnv, requestLog, tokenCors } from "./middleware.ts";
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
import type { PaymentsService } from "./service.ts";

const log = getLogger(["payments", "http"]);

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

/** The base paths served: the defaults plus `extra`, normalised, each once. */
export function basePathsOf(extra: readonly string[] = []): string[] {
  return [...new Set([...DEFAULT_BASE_PATHS, ...extra].map(normalizeBase))];
}

/** Dependencies of {@link createApp}. */
export interface PaymentsDeps {
  /** The use cases over a store (`createPaymentsService` in `server.ts` builds one). */
  service: PaymentsService;
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
  /** Clock of `/health` and the token rate limit; default `() => new Date()`. */
  now?: () => Date;
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
 * Build the payments app over `deps.service`: the middleware, then `/health`,
 * `/openapi.json`, `/docs` and the API on every base path.
 */
export function createApp(deps: PaymentsDeps): Hono<PaymentsEnv> {
  if (deps.tokens.length === 0) throw new Error("createApp: at least one token is required");
  const now = deps.now ?? (() => new Date());
  const basePaths = basePathsOf(deps.basePaths);
  const infoLink = deps.infoLink ?? INFO_LINK;
  const tokenPaths = new Set(basePaths.map((b) => `${b}/payments/tokens`));
  const app = new Hono<PaymentsEnv>({ strict: false });
  app.use(
    requestLog(),
    intuitTid(deps.intuitTid ?? (() => crypto.randomUUID())),
    tokenCors(deps.corsOrigins ?? DEFAULT_CORS_ORIGINS, tokenPaths),
  );
  serveDocuments(app, basePaths, now);
  // Each private endpoint checks the bearer token itself before anything else.
  const allowed = bearerChecker(deps.tokens);
  const rateLimiter = deps.tokenRateLimit === false ? undefined : new RateLimiter({
    ...(deps.tokenRateLimit ?? TOKEN_RATE_LIMIT),
    now: () => now().getTime(),
  });
  const api = mount(ALL_ENDPOINTS, deps.service, allowed, {
    bodyTimeoutMs: deps.bodyTimeoutMs,
    rateLimiter,
    trustedProxies: trustedPeers(deps.trustedProxies ?? []),
  });
  for (const base of basePaths) app.route(base, api);
  app.notFound((c) => notFound(c, basePaths, allowed, infoLink));
  app.onError((err, c) => {
    const requestId = validRequestId(c.req.header("request-id"));
    if (err instanceof PaymentsError) return errorResponse(err, requestId, infoLink);
    log.error("unhandled error: {error} intuit_tid={intuitTid}", {
      error: err,
      intuitTid: c.get("intuitTid"),
    });
    return errorResponse(PaymentsError.system("internal error", 500, false), requestId, infoLink);
  });
  return app;
}

/** `/health`, `/openapi.json` (built on first use) and `/docs`, at the root. */
function serveDocuments(app: Hono<PaymentsEnv>, basePaths: string[], now: () => Date): void {
  let openapiJson: string | undefined;
  app.get("/health", (c) => c.json({ status: "ok", timestamp: now().toISOString() }));
  app.get("/openapi.json", () => {
    openapiJson ??= JSON.stringify(buildOpenApiDocument(basePaths));
    return new Response(openapiJson, {
      headers: { "content-type": "application/json; charset=utf-8" },
    });
  });
  app.get("/docs", (c) => c.html(DOCS_HTML));
}

/**
 * An unknown path: under a base path it is 401 without a valid token
 * (nothing about the API is told to an unauthenticated caller), else 404.
 */
function notFound(
  c: Context<PaymentsEnv>,
  basePaths: string[],
  allowed: (authorization: string | undefined) => boolean,
  infoLink: string,
): Response {
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
}
