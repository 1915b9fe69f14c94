/**
 * {@link RequestTracing} on `@opentelemetry/api`, which Deno wires to its
 * own exporter (`OTEL_DENO=true`): one SERVER span per request, one CLIENT
 * span per upstream attempt, child of it, and W3C trace context on every
 * upstream request.
 *
 * Context: the SERVER span is made active (Deno's `AsyncContext` carries
 * it across awaits) for the request's phases, so that log lines and the
 * attempts find it. The transport itself runs in the root context: a
 * backend session it opens for a request outlives that request, and must
 * not carry its context (its log lines would name a request long gone).
 *
 * @example
 * ```ts
 * import type { IncomingRequest, RequestHandler } from "../server/types.ts";
 * declare const req: IncomingRequest;
 * declare const handle: RequestHandler;
 *
 * const tracing = new OtelRequestTracing();
 * const res = await tracing.serve(req, false, handle); // res.finished ends the span
 * ```
 *
 * @module
 */

import {
  type Attributes,
  context,
  createContextKey,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type TextMapSetter,
  trace,
  type Tracer,
} from "@opentelemetry/api";
import { PRODUCT, VERSION } from "../../shared/version.ts";
import type { BackendRef } from "../balancer/types.ts";
import { validateResponseHead } from "../http/mod.ts";
import { requestEnd } from "../server/request_end.ts";
import { whenFinished } from "../server/response_finished.ts";
import type { IncomingRequest, OutgoingResponse, RequestHandler } from "../server/types.ts";
import { outcomeOfError, outcomeOfStatus, type UpstreamOutcome } from "../upstream/outcome.ts";
import type {
  UpstreamRequest,
  UpstreamResponse,
  UpstreamTransport,
} from "../upstream/transport.ts";
import { clientSpanAttributes, int, serverSpanAttributes } from "./attributes.ts";
import { incomingContext } from "./incoming_context.ts";
import type { RequestTracing } from "./request_tracing.ts";
import { withTraceContext } from "./trace_fields.ts";

/** What the server layer reports of a finished request (a `RequestRecord`). */
type FinishedRequest = Parameters<NonNullable<OutgoingResponse["finished"]>>[0];

/** What the active context knows of the request being served. */
interface ServedRequest {
  readonly span: Span;
  readonly method: string;
  /** Whether the client is a trusted proxy (its `tracestate` then passes on). */
  readonly trusted: boolean;
  /** Upstream attempts made so far. */
  attempts: number;
}

const SERVED = createContextKey("spooky served request");

/** Writes the propagator's fields into a field list (lower-case names). */
const FIELDS_SETTER: TextMapSetter<Array<[string, string]>> = {
  set: (fields, key, value) => {
    fields.push([key.toLowerCase(), value]);
  },
};

/** The request served in the active context, if any. */
function served(): ServedRequest | undefined {
  return context.active().getValue(SERVED) as ServedRequest | undefined;
}

/** See the module documentation. */
export class OtelRequestTracing implements RequestTracing {
  readonly #tracer: Tracer;

  /** Spans of `tracer` (default: the API's tracer `spooky`, the process's version). */
  constructor(tracer: Tracer = trace.getTracer(PRODUCT, VERSION)) {
    this.#tracer = tracer;
  }

  /** See {@link RequestTracing.serve}. */
  async serve(
    req: IncomingRequest,
    trusted: boolean,
    handle: RequestHandler,
  ): Promise<OutgoingResponse> {
    const method = req.head.method;
    const { parent, links } = incomingContext(req.head.fields, trusted);
    const span = this.#tracer.startSpan(
      method,
      { kind: SpanKind.SERVER, attributes: serverSpanAttributes(req), links },
      parent,
    );
    const state: ServedRequest = { span, method, trusted, attempts: 0 };
    const active = trace.setSpan(parent, span).setValue(SERVED, state);
    let res: OutgoingResponse;
    try {
      res = await context.with(active, handle, null, req);
    } catch (err) {
      span.recordException(err instanceof Error ? err : String(err));
      span.setStatus({ code: SpanStatusCode.ERROR, message: "the request handler failed" });
      span.end();
      throw err;
    }
    if (res.error !== undefined && state.attempts === 0) addRefusalEvent(span, res);
    whenFinished(res, (record) => endServerSpan(span, record));
    return res;
  }

  /** See {@link RequestTracing.routed}. */
  routed(pool: string): void {
    const req = served();
    if (req === undefined) return;
    req.span.setAttribute("http.route", pool);
    req.span.updateName(`${req.method} ${pool}`);
  }

  /** See {@link RequestTracing.exchange}. */
  async exchange(
    transport: UpstreamTransport,
    request: UpstreamRequest,
    backend: BackendRef,
    attempt: number,
  ): Promise<UpstreamResponse> {
    const parent = context.active();
    const req = parent.getValue(SERVED) as ServedRequest | undefined;
    if (req !== undefined) req.attempts++;
    const span = this.#tracer.startSpan(
      request.method,
      { kind: SpanKind.CLIENT, attributes: clientSpanAttributes(request, backend, attempt) },
      parent,
    );
    const injected: Array<[string, string]> = [];
    propagation.inject(trace.setSpan(parent, span), injected, FIELDS_SETTER);
    const headers = withTraceContext(request.headers, injected, req?.trusted ?? false);
    let res: UpstreamResponse;
    try {
      res = await context.with(ROOT_CONTEXT, () => transport.exchange({ ...request, headers }));
    } catch (err) {
      endClientSpan(span, outcomeOfError(err, requestEnd(request.signal ?? NEVER)), undefined, err);
      throw err;
    }
    const invalid = typeof validateResponseHead(res.status, res.headers) === "string";
    endClientSpan(span, invalid ? "invalid_response" : outcomeOfStatus(res.status), res.status);
    return res;
  }
}

/** A signal that never aborts, for a request without one. */
const NEVER = new AbortController().signal;

/**
 * The proxy's own answer to a request it did not forward, as an event:
 * `spooky.rate_limited` (with the limit) or `spooky.refused` (with the
 * answer's `error`: an admission refusal, no route, the connection's
 * share, no backend).
 */
function addRefusalEvent(span: Span, res: OutgoingResponse): void {
  const attributes: Attributes = {
    "http.response.status_code": int(res.status),
    "spooky.refusal": res.error!,
  };
  if (res.rateLimit !== undefined) attributes["spooky.rate_limit"] = res.rateLimit;
  span.addEvent(res.rateLimit !== undefined ? "spooky.rate_limited" : "spooky.refused", attributes);
}

/** Ends a SERVER span with the finished request's status, size and outcome. */
function endServerSpan(span: Span, record: FinishedRequest): void {
  span.setAttribute("http.response.status_code", int(record.status));
  span.setAttribute("http.response.body.size", int(record.bytes));
  if (record.backend !== undefined) span.setAttribute("spooky.backend.id", record.backend);
  if (record.rateLimit !== undefined) span.setAttribute("spooky.rate_limit", record.rateLimit);
  if (record.outcome !== "complete") span.setAttribute("spooky.response.outcome", record.outcome);
  if (record.failure !== undefined) span.setAttribute("error.type", record.failure);
  else if (record.status >= 500) span.setAttribute("error.type", String(record.status));
  // A server span's 4xx is the client's doing (semantic conventions): status unset.
  if (record.status >= 500 || record.outcome === "broken") {
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end();
}

/** Ends a CLIENT span with the attempt's outcome (`upstream/outcome.ts`) and, if it answered, its status. */
function endClientSpan(
  span: Span,
  outcome: UpstreamOutcome,
  status: number | undefined,
  err?: unknown,
): void {
  span.setAttribute("spooky.outcome", outcome);
  if (status !== undefined) span.setAttribute("http.response.status_code", int(status));
  const answered = outcome === "answered" || outcome === "answered_5xx";
  if (!answered) span.setAttribute("error.type", outcome);
  else if (status !== undefined && status >= 400) span.setAttribute("error.type", String(status));
  if (!answered || (status !== undefined && status >= 400)) {
    const message = err instanceof Error ? err.message : undefined;
    span.setStatus({ code: SpanStatusCode.ERROR, message });
  }
  span.end();
}
