/**
 * Shared plumbing of the route modules: an endpoint pairs an OpenAPI route
 * description (from the zod wire schemas) with a thin handler that reads the
 * request, calls the service and writes the reply.
 *
 * @module
 */
import { createRoute, type RouteConfig, z } from "@hono/zod-openapi";
import { type Context, Hono } from "hono";
import { readUpTo } from "../../shared/bytes.ts";
import { deadline } from "../../shared/deadline.ts";
import { ErrorEnvelope } from "../../shared/payments_schemas.ts";
import { PaymentsError } from "../domain/errors.ts";
import { rateLimitAddress, type TrustedPeers } from "../client_address.ts";
import { clientKey, type RateLimiter } from "../rate_limit.ts";
import type { PaymentsService } from "../service.ts";
import type { Reply } from "../store/reply.ts";
import { isJsonMediaType, parseJsonBody } from "./json_body.ts";

/** Largest accepted request body. */
export const MAX_BODY_BYTES = 64 * 1024;

/** Default for how long a request body may take to arrive (see {@link readJson}). */
export const BODY_TIMEOUT_MS = 30_000;

/** `read`, or 408 PMT-4008 when it takes longer than `ms`. */
function bodyWithin<T>(read: Promise<T>, ms: number): Promise<T> {
  return deadline(read, ms, () => PaymentsError.bodyTimeout(ms));
}

/** Everything a handler needs. */
export interface HandlerContext {
  /** The Hono context. */
  c: Context;
  /** The service. */
  svc: PaymentsService;
  /** How long the request body may take to arrive ({@link readJson}). */
  bodyTimeoutMs: number;
}

/** An endpoint: OpenAPI route plus handler. */
export interface Endpoint {
  /** Route description; `path` uses OpenAPI `{param}` syntax relative to the base path. */
  route: RouteConfig;
  /** True for routes that need no bearer token. */
  public?: boolean;
  /** True for routes under the per-client rate limit ({@link MountOptions.rateLimiter}). */
  rateLimited?: boolean;
  /** The handler. */
  handle: (h: HandlerContext) => Promise<Reply>;
}

/** `{param}` → `:param`. */
export function honoPath(path: string): string {
  return path.replace(/\{([A-Za-z0-9_]+)\}/g, ":$1");
}

const REQUEST_ID = /^[A-Za-z0-9._:\-]{1,128}$/;

/** The `Request-Id` header when it is a valid one (echoed on error responses), else undefined. */
export function validRequestId(v: string | null | undefined): string | undefined {
  return v && REQUEST_ID.test(v) ? v : undefined;
}

/** The `Request-Id` header, validated; undefined when absent. */
export function requestIdOf(c: Context): string | undefined {
  const v = c.req.header("request-id");
  if (v === undefined || v === "") return undefined;
  if (!REQUEST_ID.test(v)) {
    throw PaymentsError.invalid("requestId", undefined, "1 to 128 of A-Z a-z 0-9 . _ : -");
  }
  return v;
}

/** Largest `?count=` of a list. */
export const MAX_LIST_COUNT = 1000;

/**
 * The `?count=` of a list request (at most that many items, newest first);
 * undefined when absent; 400 `count is invalid.` unless 1 to
 * {@link MAX_LIST_COUNT}.
 */
export function countOf(c: Context): number | undefined {
  const v = c.req.query("count");
  if (v === undefined || v === "") return undefined;
  const n = Number(v);
  if (!/^[0-9]{1,5}$/.test(v) || n < 1 || n > MAX_LIST_COUNT) {
    throw PaymentsError.invalid("count", undefined, `an integer from 1 to ${MAX_LIST_COUNT}`);
  }
  return n;
}

/** The `count` query parameter of the list routes. */
export const CountQuery = z.object({
  count: z.string().optional().openapi({
    description: "At most this many, newest first (1 to 1000)",
    example: "10",
  }),
});

/** A path parameter of the request (present: the route matched it). */
export function param(h: HandlerContext, name: string): string {
  return h.c.req.param(name)!;
}

const UTF8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Read the JSON body with a size limit and a deadline
 * (`h.bodyTimeoutMs`). An empty body reads as `undefined`; a body whose
 * Content-Type is not JSON is 415 (none at all is read as JSON); malformed
 * JSON, a non-object, a duplicate key or an inexact number is 400
 * ({@link parseJsonBody}); over the limit is 413; a body still incomplete
 * after the deadline (a stalled or very slow client, which would also hold
 * up a graceful shutdown) is 408.
 */
export async function readJson(h: HandlerContext, limit = MAX_BODY_BYTES): Promise<unknown> {
  const req = h.c.req.raw;
  const length = req.headers.get("content-length");
  const declared = Number(length ?? "0");
  if (declared > limit) throw PaymentsError.tooLarge(limit);
  // With a valid Content-Length (at most `limit`, enforced by the HTTP layer)
  // the body is taken whole (without touching `req.body`, which would make a
  // stream of it); otherwise it is streamed with the limit.
  let bytes: Uint8Array;
  if (length !== null && /^[0-9]+$/.test(length)) {
    bytes = new Uint8Array(await bodyWithin(req.arrayBuffer(), h.bodyTimeoutMs));
  } else {
    if (!req.body) return undefined;
    const read = await bodyWithin(readUpTo(req.body, limit), h.bodyTimeoutMs);
    if (read === null) throw PaymentsError.tooLarge(limit);
    bytes = read;
  }
  if (bytes.byteLength > limit) throw PaymentsError.tooLarge(limit);
  if (bytes.byteLength === 0) return undefined;
  const type = req.headers.get("content-type");
  if (type !== null && !isJsonMediaType(type)) throw PaymentsError.unsupportedMediaType(type);
  let text: string;
  try {
    text = UTF8.decode(bytes);
  } catch {
    throw PaymentsError.invalid("body", "Request body is not UTF-8", "JSON text in UTF-8");
  }
  if (text.trim() === "") return undefined;
  return parseJsonBody(text);
}

/**
 * Send a reply as JSON. `requestId` (the request's `Request-Id` header) is
 * echoed unless the reply sets its own; a replayed reply says so
 * (`Idempotent-Replayed: true`).
 */
export function send(r: Reply, requestId?: string): Response {
  const headers: Record<string, string> = { "content-type": "application/json; charset=utf-8" };
  if (r.headers) { for (const k in r.headers) headers[k.toLowerCase()] = r.headers[k]; }
  if (r.replayed) headers["idempotent-replayed"] = "true";
  if (requestId && headers["request-id"] === undefined) headers["request-id"] = requestId;
  return new Response(r.json ?? JSON.stringify(r.body), { status: r.status, headers });
}

/** Longest accepted path identifier (Deno KV keys are limited to 2 KiB). */
export const MAX_ID_LENGTH = 256;

/** Options of {@link mount}. */
export interface MountOptions {
  /** How long a request body may take to arrive before 408; default {@link BODY_TIMEOUT_MS}. */
  bodyTimeoutMs?: number;
  /** The limit of endpoints marked `rateLimited` (per client address); none by default. */
  rateLimiter?: RateLimiter;
  /**
   * Proxies whose forwarded client address the rate limit counts instead of
   * theirs (see {@link rateLimitAddress}); none by default.
   */
  trustedProxies?: TrustedPeers;
}

/** The TCP peer's address as the HTTP server saw it (`Deno.serve` passes it as Hono's env). */
function peerAddress(c: Context): string | undefined {
  const env = c.env as { remoteAddr?: { hostname?: string } } | undefined;
  return env?.remoteAddr?.hostname;
}

/**
 * A Hono sub-app serving the given endpoints. Endpoints not marked `public`
 * first check the `Authorization` header with `allowed` (401 when it says
 * no); endpoints marked `rateLimited` then take from the client's bucket
 * (429 with `Retry-After` when empty). One handler per route, no middleware
 * chain. A path identifier longer than {@link MAX_ID_LENGTH} cannot name a
 * stored resource: 404 before any lookup.
 */
export function mount(
  endpoints: readonly Endpoint[],
  svc: PaymentsService,
  allowed: (authorization: string | undefined) => boolean,
  options: MountOptions = {},
): Hono {
  const app = new Hono({ strict: false });
  const bodyTimeoutMs = options.bodyTimeoutMs ?? BODY_TIMEOUT_MS;
  const limiter = options.rateLimiter;
  const trusted = options.trustedProxies ?? (() => false);
  for (const ep of endpoints) {
    const params = [...ep.route.path.matchAll(/\{([A-Za-z0-9_]+)\}/g)].map((m) => m[1]);
    app.on(
      ep.route.method.toUpperCase(),
      honoPath(ep.route.path),
      async (c) => {
        const headers = c.req.raw.headers;
        if (!ep.public && !allowed(headers.get("authorization") ?? undefined)) {
          throw PaymentsError.unauthorized();
        }
        if (ep.rateLimited && limiter) {
          const address = rateLimitAddress(peerAddress(c), headers, trusted);
          const wait = limiter.take(clientKey(address));
          if (wait > 0) throw PaymentsError.rateLimited(wait, limiter.describe());
        }
        for (const name of params) {
          if ((c.req.param(name) ?? "").length > MAX_ID_LENGTH) throw PaymentsError.notFound(name);
        }
        const reply = await ep.handle({ c, svc, bodyTimeoutMs });
        return send(reply, headers.get("request-id") ?? undefined);
      },
    );
  }
  return app;
}

/** JSON request body description. */
export function jsonBody(schema: z.ZodType, description: string) {
  return { content: { "application/json": { schema } }, description, required: true };
}

/** JSON response description. */
export function jsonResponse(schema: z.ZodType, description: string) {
  return { content: { "application/json": { schema } }, description };
}

/** The `Retry-After` header of a 429 or 503 response. */
export const RETRY_AFTER_HEADER = {
  "Retry-After": { schema: { type: "integer" as const }, description: "Seconds to wait" },
};

/**
 * The 503 every write may give: the store was locked, contended, did not
 * answer in time or is full (PMT-6000, retryable, with `Retry-After`).
 */
export const WRITE_UNAVAILABLE_RESPONSE = {
  503: {
    ...jsonResponse(
      ErrorEnvelope,
      "Store busy, contended, not answering or full (PMT-6000 `system_error`); retry the " +
        "same request with the same Request-Id after `Retry-After` seconds (a create whose " +
        "outcome is unknown returns the Request-Id to retry with)",
    ),
    headers: RETRY_AFTER_HEADER,
  },
};

/** The error responses every authenticated operation may give. */
export const ERROR_RESPONSES = {
  400: jsonResponse(
    ErrorEnvelope,
    "Invalid or missing field (PMT-4000 / PMT-4002); `moreInfo` tells the rule that failed",
  ),
  401: jsonResponse(ErrorEnvelope, "Missing or wrong bearer token"),
  404: jsonResponse(ErrorEnvelope, "Unknown resource (PMT-4000)"),
};

/** The further error responses of every operation that takes a request body. */
export const BODY_ERROR_RESPONSES = {
  408: jsonResponse(ErrorEnvelope, "Request body not received in time (PMT-4008)"),
  413: jsonResponse(ErrorEnvelope, "Request body over 64 KiB (PMT-4013)"),
  415: jsonResponse(ErrorEnvelope, "Request body not JSON (PMT-4015)"),
};

/** What a route of this API states: one tag, one success answer, the common errors. */
export interface RouteSpec {
  method: "get" | "post" | "delete";
  /** OpenAPI `{param}` syntax, relative to the base path. */
  path: string;
  operationId: string;
  tag: string;
  summary: string;
  description?: string;
  params?: z.ZodObject;
  query?: z.ZodObject;
  /** The JSON body and its description: a write, keyed by its `Request-Id` header. */
  body?: readonly [z.ZodType, string];
  /** The success status, with the schema and description of its body. */
  ok: readonly [200 | 201, z.ZodType, string];
}

/**
 * The OpenAPI route of `spec`: its path parameters and query, for a write
 * the `Request-Id` header and the JSON body, and as responses the success
 * answer and {@link ERROR_RESPONSES}.
 */
export function routeOf(spec: RouteSpec): RouteConfig {
  const { method, path, operationId, tag, summary, description, params, query, body } = spec;
  const [status, okSchema, okDescription] = spec.ok;
  return createRoute({
    method,
    path,
    operationId,
    tags: [tag],
    summary,
    ...(description === undefined ? {} : { description }),
    request: {
      ...(params && { params }),
      ...(query && { query }),
      ...(body && { headers: RequestIdHeader, body: jsonBody(...body) }),
    },
    responses: { [status]: jsonResponse(okSchema, okDescription), ...ERROR_RESPONSES },
  });
}

/** Request-Id header parameter schema. */
export const RequestIdHeader = z.object({
  "Request-Id": z.string().optional().openapi({
    description: "Idempotency key; a repeat of the identical request (operation, path and " +
      "body) returns the original response (kept 24 h); the same key with another body is " +
      "400 `requestId is invalid.`",
  }),
});

export { createRoute, z };
