/**
 * Spans of the store's KV commits and idempotent replays, on Deno's
 * built-in OpenTelemetry (`OTEL_DENO=true`). Each is a child of the span
 * active where the store is called: `Deno.serve`'s own span of the request,
 * which joins the caller's trace through its `traceparent` (the proxy's
 * upstream attempt). {@link STORE_TRACING} is decided once, when this module
 * loads: `null` when Deno does not export traces, and the store then calls
 * KV as it always did.
 *
 * The commit or read itself runs in the root context: the batchers that
 * carry it serve many requests at once and must not carry one request's
 * context into the others' (`commit_batcher.ts`, `read_batcher.ts`).
 *
 * @example
 * ```ts
 * const tracing = STORE_TRACING; // null unless started with OTEL_DENO=true
 * const ok = tracing === null
 *   ? await Promise.resolve(true)
 *   : await tracing.commit("create_charge", 1, () => Promise.resolve(true));
 * ```
 *
 * @module
 */

import {
  context,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
  type Tracer,
} from "@opentelemetry/api";
import { denoTracingOn, intAttribute } from "../../shared/telemetry.ts";
import { VERSION } from "../../shared/version.ts";
import type { Reply } from "./reply.ts";

/** Spans around the store's calls. */
export interface StoreTracing {
  /**
   * Attempt `attempt` (1 first) of committing a change of operation `op`
   * (`run` commits it; true when its checks held and it was written).
   */
  commit(op: string, attempt: number, run: () => Promise<boolean>): Promise<boolean>;
  /**
   * The lookup of a stored response for operation `op`: `run` reads the
   * idempotency record and gives the reply it replays, or `undefined` when
   * there is none (it throws when the record is of another request).
   */
  replay(op: string, run: () => Promise<Reply | undefined>): Promise<Reply | undefined>;
}

/** The attributes every store span has: the store and the payments operation. */
function storeAttributes(op: string, operation: string) {
  return { "db.system.name": "deno_kv", "db.operation.name": operation, "payments.operation": op };
}

function endFailed(span: Span, err: unknown): void {
  span.recordException(err instanceof Error ? err : String(err));
  span.setStatus({
    code: SpanStatusCode.ERROR,
    message: err instanceof Error ? err.message : undefined,
  });
  span.end();
}

/** {@link StoreTracing} on `@opentelemetry/api`. */
export class OtelStoreTracing implements StoreTracing {
  readonly #tracer: Tracer;

  /** Spans of `tracer` (default: the API's tracer `payments`, the process's version). */
  constructor(tracer: Tracer = trace.getTracer("payments", VERSION)) {
    this.#tracer = tracer;
  }

  /** See {@link StoreTracing.commit}. */
  async commit(op: string, attempt: number, run: () => Promise<boolean>): Promise<boolean> {
    const span = this.#tracer.startSpan("kv commit", {
      kind: SpanKind.CLIENT,
      attributes: {
        ...storeAttributes(op, "atomic_commit"),
        "payments.commit.attempt": intAttribute(attempt),
      },
    }, context.active());
    let committed: boolean;
    try {
      committed = await context.with(ROOT_CONTEXT, run);
    } catch (err) {
      endFailed(span, err);
      throw err;
    }
    span.setAttribute("payments.commit.committed", committed);
    span.end();
    return committed;
  }

  /** See {@link StoreTracing.replay}. */
  async replay(op: string, run: () => Promise<Reply | undefined>): Promise<Reply | undefined> {
    const span = this.#tracer.startSpan("idempotent replay", {
      kind: SpanKind.INTERNAL,
      attributes: storeAttributes(op, "get"),
    }, context.active());
    let reply: Reply | undefined;
    try {
      reply = await context.with(ROOT_CONTEXT, run);
    } catch (err) {
      endFailed(span, err);
      throw err;
    }
    span.setAttribute("payments.replayed", reply !== undefined);
    if (reply !== undefined) {
      span.setAttribute("http.response.status_code", intAttribute(reply.status));
    }
    span.end();
    return reply;
  }
}

/** The process's store tracing: on when Deno exports traces, else `null` (decided at load). */
export const STORE_TRACING: StoreTracing | null = denoTracingOn() ? new OtelStoreTracing() : null;
