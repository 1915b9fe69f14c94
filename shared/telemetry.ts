/**
 * Deno's built-in OpenTelemetry, as the proxy and the payments service see
 * it. Deno turns it on by its own switch (`OTEL_DENO=true`, or
 * `OTEL_DENO_TRACING=true`; `OTEL_SDK_DISABLED=true` wins) and then
 * registers its tracer provider, propagator and context manager with
 * `@opentelemetry/api` before any module runs; off, the API's tracers are
 * no-ops. Code that would spend anything per request on tracing asks
 * {@link denoTracingOn} once, at load, and takes a no-op path of its own
 * when it is off (see `docs/operations.md`, "Tracing").
 *
 * @example
 * ```ts
 * import { activeSpanIds, denoTracingOn } from "./telemetry.ts";
 *
 * const tracing = denoTracingOn(); // false unless started with OTEL_DENO=true
 * activeSpanIds(); // undefined outside a span
 * ```
 *
 * @module
 */

import {
  type AttributeValue,
  context,
  isSpanContextValid,
  ProxyTracerProvider,
  ROOT_CONTEXT,
  trace,
} from "@opentelemetry/api";

/**
 * Whether Deno exports traces in this process: its tracer provider is the
 * API's global one (off, the API answers with its own no-op proxy provider).
 * Read what Deno decided rather than the environment, so that every way
 * Deno has of turning tracing on or off counts.
 */
export function denoTracingOn(): boolean {
  return !(trace.getTracerProvider() instanceof ProxyTracerProvider);
}

/** The ids of a span, as W3C trace context writes them (lower-case hex). */
export interface SpanIds {
  /** 32 hex digits. */
  readonly traceId: string;
  /** 16 hex digits. */
  readonly spanId: string;
}

/** The ids of the span active in the current async context, or `undefined` when none is. */
export function activeSpanIds(): SpanIds | undefined {
  const span = trace.getActiveSpan();
  if (span === undefined) return undefined;
  const ctx = span.spanContext();
  return isSpanContextValid(ctx) ? { traceId: ctx.traceId, spanId: ctx.spanId } : undefined;
}

/**
 * `n` as an integer attribute. Deno 2.9.6's exporter writes a JS number as
 * a double and a bigint as an int (measured); the semantic conventions type
 * status codes, ports and counts as int, and trace backends compare them so.
 */
export function intAttribute(n: number): AttributeValue {
  return BigInt(Math.trunc(n)) as unknown as AttributeValue;
}

const TRACING = denoTracingOn();

/**
 * `fn()` run outside any trace, for work of the process's own (health
 * probes) rather than of a request. Deno 2.9.6's instrumented `fetch` leaves
 * its span active in the caller after the `await` (measured), so a loop of
 * probes would otherwise chain into one endless trace; inside the root
 * context it does not. With tracing off this is `fn()`.
 */
export function untraced<T>(fn: () => T): T {
  return TRACING ? context.with(ROOT_CONTEXT, fn) : fn();
}
