/**
 * What the request path asks of tracing, in one small interface: the
 * application (`app.ts`) serves each request under its SERVER span and
 * notes its route; the forwarder (`phases/forward.ts`) sends
 * each upstream attempt under a CLIENT span. The server layer ends the
 * SERVER span when the response is done (`OutgoingResponse.finished`).
 *
 * Tracing is Deno's (`OTEL_DENO=true`): {@link REQUEST_TRACING} is decided
 * once, when this module loads, and is `null` when Deno does not export
 * traces; the request path then takes its untraced branch and pays at most
 * a null check (see `docs/operations.md`, "Tracing").
 *
 * @example
 * ```ts
 * import type { IncomingRequest, RequestHandler } from "../server/types.ts";
 * declare const req: IncomingRequest;
 * declare const handle: RequestHandler;
 *
 * const tracing = REQUEST_TRACING;
 * const res = tracing === null ? await handle(req) : await tracing.serve(req, false, handle);
 * ```
 *
 * @module
 */

import { denoTracingOn } from "../../shared/telemetry.ts";
import type { BackendRef } from "../balancer/types.ts";
import type { IncomingRequest, OutgoingResponse, RequestHandler } from "../server/types.ts";
import type {
  UpstreamRequest,
  UpstreamResponse,
  UpstreamTransport,
} from "../upstream/transport.ts";
import { OtelRequestTracing } from "./otel_request_tracing.ts";

/** Spans of the proxy's requests. */
export interface RequestTracing {
  /**
   * Runs `handle` for `req` under a new SERVER span, active while it runs:
   * the child of the request's `traceparent` when `trusted` (the client is
   * one of `trusted_proxies`), else the root of a new trace linked to it.
   * An answer of the proxy's own given before any upstream attempt (an
   * admission refusal, no route, a rate limit, the connection's share, no
   * backend) is an event on the span. The response's `finished` ends the
   * span with what the server layer reports; a `handle` that throws ends it
   * as a failure.
   */
  serve(req: IncomingRequest, trusted: boolean, handle: RequestHandler): Promise<OutgoingResponse>;
  /** The active request was routed to `pool` (`http.route`). */
  routed(pool: string): void;
  /**
   * Attempt number `attempt` (1 first) of the active request, to `backend`,
   * under a CLIENT span: the request goes out with the span's `traceparent`
   * instead of the client's, and the span ends with the attempt's outcome
   * (`upstream/outcome.ts`) when the response head arrives or the exchange
   * fails.
   */
  exchange(
    transport: UpstreamTransport,
    request: UpstreamRequest,
    backend: BackendRef,
    attempt: number,
  ): Promise<UpstreamResponse>;
}

/** The process's request tracing: on when Deno exports traces, else `null` (decided at load). */
export const REQUEST_TRACING: RequestTracing | null = denoTracingOn()
  ? new OtelRequestTracing()
  : null;
