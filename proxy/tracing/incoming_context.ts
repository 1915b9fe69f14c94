/**
 * Whose trace a request joins. A `traceparent` is honoured as the parent
 * of the proxy's SERVER span only when the client is one of
 * `trusted_proxies`, as their `x-forwarded-for` is: anyone else could pick
 * the trace id (and so a trace to pollute, or which requests a sampler
 * keeps). Otherwise the request starts a new trace, and the context it came
 * with is kept as a span link, so that a trace the client recorded can still
 * be found from the proxy's.
 *
 * @example
 * ```ts
 * const fields: Array<[string, string]> = [
 *   ["traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"],
 * ];
 * const { parent, links } = incomingContext(fields, false);
 * // parent: a new trace (the root context); links: the client's span context
 * ```
 *
 * @module
 */

import {
  type Context,
  isSpanContextValid,
  type Link,
  propagation,
  ROOT_CONTEXT,
  type TextMapGetter,
  trace,
} from "@opentelemetry/api";
import { singleField, TRACEPARENT } from "./trace_fields.ts";

/** Reads a request's field list (lower-case names) for the propagator; a repeated field is absent. */
const FIELDS_GETTER: TextMapGetter<ReadonlyArray<readonly [string, string]>> = {
  get: (fields, key) => singleField(fields, key.toLowerCase()),
  keys: (fields) => fields.map(([name]) => name),
};

/** The parent context of a request's SERVER span and the links it is started with. */
export interface IncomingContext {
  /** The trusted incoming context, or the root context (a new trace). */
  readonly parent: Context;
  /** The untrusted incoming span context, when the request came with a valid one. */
  readonly links: Link[] | undefined;
}

/** The attribute of a link to a context the proxy did not trust. */
export const UNTRUSTED_LINK_ATTRIBUTES = Object.freeze({
  "spooky.link.reason": "untrusted_parent",
});

/**
 * The context a request with `fields` joins: the one its trace context
 * fields carry when the client is `trusted`, else a new trace, linked to
 * the fields' span context when they carry a valid one. Never the active
 * context: whatever is active where the request is served (`Deno.serve`'s
 * own span, on the TCP fallback) is not the request's parent.
 */
export function incomingContext(
  fields: ReadonlyArray<readonly [string, string]>,
  trusted: boolean,
): IncomingContext {
  if (singleField(fields, TRACEPARENT) === undefined) {
    return { parent: ROOT_CONTEXT, links: undefined };
  }
  const extracted = propagation.extract(ROOT_CONTEXT, fields, FIELDS_GETTER);
  if (trusted) return { parent: extracted, links: undefined };
  const incoming = trace.getSpanContext(extracted);
  if (incoming === undefined || !isSpanContextValid(incoming)) {
    return { parent: ROOT_CONTEXT, links: undefined };
  }
  return {
    parent: ROOT_CONTEXT,
    links: [{ context: incoming, attributes: UNTRUSTED_LINK_ATTRIBUTES }],
  };
}
