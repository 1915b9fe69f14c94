/**
 * What tracing costs per request, off and on (`docs/operations.md`,
 * "Tracing"). Off, the request path is the untraced branch behind a null
 * check; on, a SERVER span, one CLIENT span, the trace context injected and
 * the spans ended. Run it both ways (on, with a receiver that answers, so
 * that the exporter does not back up):
 *
 * ```sh
 * deno bench -A proxy/tracing/tracing_bench.ts
 * OTEL_DENO=true OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 deno bench -A proxy/tracing/tracing_bench.ts
 * ```
 *
 * @module
 */

import { trace } from "@opentelemetry/api";
import type { BackendRef } from "../balancer/types.ts";
import type { IncomingRequest, OutgoingResponse } from "../server/types.ts";
import type { UpstreamRequest, UpstreamTransport } from "../upstream/transport.ts";
import { OtelRequestTracing } from "./otel_request_tracing.ts";
import { REQUEST_TRACING, type RequestTracing } from "./request_tracing.ts";

const req: IncomingRequest = {
  head: {
    method: "GET",
    scheme: "https",
    authority: "example.com",
    path: "/api/users/42?x=1",
    fields: [["user-agent", "bench/1"], ["accept", "*/*"]],
  },
  body: null,
  remote: { hostname: "192.0.2.7", port: 50000 },
  signal: new AbortController().signal,
};
const upstream: UpstreamRequest = {
  address: "10.0.0.1:8080",
  method: "GET",
  path: "/api/users/42?x=1",
  authority: "example.com",
  headers: [["user-agent", "bench/1"], ["accept", "*/*"]],
  body: null,
  timeoutMs: 1000,
};
const backend: BackendRef = { id: "api-1", address: "10.0.0.1:8080", weight: 100 };
const transport: UpstreamTransport = {
  exchange: () => Promise.resolve({ status: 200, headers: [], body: null }),
  close: () => Promise.resolve(),
} as unknown as UpstreamTransport;
const record = { status: 200, bytes: 0, outcome: "complete" as const };

const traced = new OtelRequestTracing();
const answer = (): OutgoingResponse => ({ status: 200, headers: [], body: null });
const handle = (_req: IncomingRequest): Promise<OutgoingResponse> =>
  transport.exchange(upstream).then(answer);

/** One request as the request path runs it: untraced behind a null check, or under its spans. */
async function serveOnce(tracing: RequestTracing | null): Promise<void> {
  const res = tracing === null
    ? await handle(req)
    : await tracing.serve(req, false, () =>
      tracing.exchange(transport, upstream, backend, 1).then(answer));
  res.finished?.(record);
}

Deno.bench(
  `the request path as this process runs it (tracing ${REQUEST_TRACING === null ? "off" : "on"})`,
  { baseline: true },
  () => serveOnce(REQUEST_TRACING),
);

Deno.bench("the untraced branch", () => serveOnce(null));

Deno.bench(
  "OtelRequestTracing: a SERVER span, one attempt's CLIENT span, ended",
  () => serveOnce(traced),
);

Deno.bench("@opentelemetry/api: getTracer().startSpan().end()", () => {
  trace.getTracer("bench").startSpan("x").end();
});
