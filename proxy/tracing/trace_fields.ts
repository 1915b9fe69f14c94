/**
 * The W3C trace context fields (`traceparent`, `tracestate`) of a request's
 * field list: read from the client's, and replaced in what the backend is
 * sent. A client's `traceparent` never reaches a backend: each upstream
 * attempt carries its own span's; a `tracestate` passes only from a trusted
 * proxy (it belongs to the trace the proxy then joins).
 *
 * @example
 * ```ts
 * const client: Array<[string, string]> = [["traceparent", "00-…-01"], ["accept", "text/html"]];
 * withTraceContext(client, [["traceparent", "00-…-02"]], false);
 * // [["accept", "text/html"], ["traceparent", "00-…-02"]]
 * ```
 *
 * @module
 */

/** The W3C trace context field naming the parent span (W3C Trace Context §3.2). */
export const TRACEPARENT = "traceparent";
/** The W3C trace context field of vendor state (W3C Trace Context §3.3). */
export const TRACESTATE = "tracestate";

/**
 * The one value of field `name` (lower case) in `fields`, or `undefined` when
 * it is absent or repeated: a request with two `traceparent` fields has no
 * valid parent (W3C Trace Context §3.2: the field must not be repeated).
 */
export function singleField(
  fields: ReadonlyArray<readonly [string, string]>,
  name: string,
): string | undefined {
  let value: string | undefined;
  for (const [n, v] of fields) {
    if (n !== name) continue;
    if (value !== undefined) return undefined;
    value = v;
  }
  return value;
}

/**
 * The fields a backend is sent for one attempt: `fields` without the
 * client's `traceparent`, without its `tracestate` unless `keepTracestate`
 * (the client is a trusted proxy whose trace the request joins), and
 * without any field `injected` sets; then the `injected` ones (the
 * attempt's span, as the propagator wrote it).
 */
export function withTraceContext(
  fields: ReadonlyArray<readonly [string, string]>,
  injected: ReadonlyArray<readonly [string, string]>,
  keepTracestate: boolean,
): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const [name, value] of fields) {
    if (name === TRACEPARENT || (name === TRACESTATE && !keepTracestate)) continue;
    if (injected.some(([n]) => n === name)) continue;
    out.push([name, value]);
  }
  for (const [name, value] of injected) out.push([name, value]);
  return out;
}
