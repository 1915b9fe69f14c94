/**
 * The payments sandbox as a Hono app: `createApp(deps)` wires the routes on
 * every base path, bearer auth, the error envelope, `/health`,
 * `/openapi.json` and `/docs`.
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
import { bearerChecker } from "./auth.ts";
import { DOCS_HTML } from "./docs_page.ts";
import { PaymentsError } from "./domain/errors.ts";
import { createIdGenerator, type IdGenerator } from "./domain/ids.ts";
import { bankAccountEndpoints } from "./routes/bank_accounts.ts";
import { cardEndpoints } from "./routes/cards.ts";
import { chargeEndpoints } from "./routes/charges.ts";
import { echeckEndpoints } from "./routes/echecks.ts";
import { BODY_ERROR_RESPONSES, type Endpoint, mount } from "./routes/_endpoint.ts";
import { tokenEndpoints } from "./routes/tokens.ts";
import { RateLimiter, type RateLimitOptions, TOKEN_RATE_LIMIT } from "./rate_limit.ts";
import { PaymentsService } from "./service.ts";
import { PaymentsStore } from "./store/kv_store.ts";

const log = getLogger(["payments", "http"]);

/** Most checks a KV Connect server (denokv, Deno Deploy) accepts in one atomic commit. */
export const KV_CONNECT_MAX_CHECKS = 10;

/** Default base path. */
export const DEFAULT_BASE_PATH = "/vendor/v4";

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
  /** Base paths to serve the API under; default `["/vendor/v4"]`. */
  basePaths?: readonly string[];
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

function errorResponse(err: PaymentsError): Response {
  const headers = new Headers({ "content-type": "application/json; charset=utf-8" });
  if (err.status === 401) headers.set("www-authenticate", 'Bearer realm="payments"');
  // Storage busy or contended: worth trying again shortly (RFC 9110 §10.2.3).
  if (err.status === 503 && err.retryable) headers.set("retry-after", "1");
  for (const [k, v] of Object.entries(err.headers ?? {})) headers.set(k, v);
  return new Response(JSON.stringify(err.toEnvelope()), { status: err.status, headers });
}

/** Build the OpenAPI 3.1 document of the API served under `basePath`. */
export function buildOpenApiDocument(basePaths: readonly string[]): Record<string, unknown> {
  const doc = new OpenAPIHono();
  doc.openAPIRegistry.registerComponent("securitySchemes", "bearerAuth", {
    type: "http",
    scheme: "bearer",
  });
  const base = normalizeBase(basePaths[0] ?? DEFAULT_BASE_PATH);
  for (const ep of ALL_ENDPOINTS) {
    const withBody = ep.route.request?.body !== undefined;
    doc.openAPIRegistry.registerPath({
      ...ep.route,
      ...(withBody ? { responses: { ...BODY_ERROR_RESPONSES, ...ep.route.responses } } : {}),
      path: base + ep.route.path,
      security: ep.public ? [] : [{ bearerAuth: [] }],
    });
  }
  doc.openAPIRegistry.registerPath({
    method: "get",
    path: "/health",
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
      version: "4.0.0",
      description: "Stateful sandbox of the payments REST API. Send " +
        "`Authorization: Bearer <token>`; `Request-Id` makes writes idempotent.",
    },
    servers: [{ url: "/" }],
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
  const basePaths = (deps.basePaths?.length ? deps.basePaths : [DEFAULT_BASE_PATH]).map(
    normalizeBase,
  );
  let openapiJson: string | undefined;

  const app = new Hono({ strict: false });
  // Request log at debug level. Logging is configured before the app is
  // built; without debug there is no middleware at all, so each request runs
  // exactly one handler (Hono skips its middleware chain then).
  if (log.isEnabledFor("debug")) {
    app.use("*", (c, next) => {
      const start = performance.now();
      return next().then(() => {
        log.debug("{method} {path} {status} {ms}ms", {
          method: c.req.method,
          path: c.req.path,
          status: c.res.status,
          ms: Math.round((performance.now() - start) * 10) / 10,
        });
      });
    });
  }

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
  });
  for (const base of basePaths) app.route(base, api);

  // An unknown path under a base path is 401 without a valid token (nothing
  // about the API is told to an unauthenticated caller), 404 with one.
  app.notFound((c) => {
    const path = c.req.path;
    const underBase = basePaths.some((b) => path === b || path.startsWith(`${b}/`));
    if (underBase && !allowed(c.req.raw.headers.get("authorization") ?? undefined)) {
      return errorResponse(PaymentsError.unauthorized());
    }
    return errorResponse(PaymentsError.notFound("path", "No such resource or path"));
  });
  app.onError((err) => {
    if (err instanceof PaymentsError) return errorResponse(err);
    log.error("unhandled error: {error}", { error: err });
    return errorResponse(PaymentsError.system("internal error", 500, false));
  });
  return app;
}
