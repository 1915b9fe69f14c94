/**
 * An OTLP/HTTP receiver for tests: `POST /v1/traces` with
 * `application/x-protobuf` bodies (what Deno exports with
 * `OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf`), decoded with the
 * OpenTelemetry protobuf definitions compiled by protobufjs, as
 * `@opentelemetry/otlp-transformer` ships them (0.216.0 is its last release
 * that carries the generated root; later ones encode by hand and decode
 * only responses). `/v1/logs` and `/v1/metrics` are accepted and dropped.
 *
 * @example
 * ```ts
 * const receiver = await OtlpReceiver.start();
 * // start a process with OTEL_DENO=true and OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint ...
 * const [span] = await receiver.waitFor((s) => s.some((x) => x.name === "GET"), 10_000);
 * await receiver.close();
 * ```
 *
 * @module
 */

import root from "@opentelemetry/otlp-transformer/build/src/generated/root.js";

/** An attribute value as exported: an int is a bigint, a double a number. */
export type ReceivedValue = string | number | bigint | boolean | ReceivedValue[] | null;

/** One exported span, flattened. */
export interface ReceivedSpan {
  /** `service.name` of the exporting process. */
  readonly service: string;
  /** The instrumentation scope (`spooky`, `payments`, `deno`, ...). */
  readonly scope: string;
  readonly name: string;
  readonly kind: "unspecified" | "internal" | "server" | "client" | "producer" | "consumer";
  /** 32 hex digits. */
  readonly traceId: string;
  /** 16 hex digits. */
  readonly spanId: string;
  /** 16 hex digits, or `undefined` for a root span. */
  readonly parentSpanId: string | undefined;
  readonly attributes: Record<string, ReceivedValue>;
  readonly events: ReadonlyArray<{ name: string; attributes: Record<string, ReceivedValue> }>;
  readonly links: ReadonlyArray<
    { traceId: string; spanId: string; attributes: Record<string, ReceivedValue> }
  >;
  /** 0 unset, 1 ok, 2 error. */
  readonly statusCode: number;
  /** Start and end, in nanoseconds since the epoch. */
  readonly start: bigint;
  readonly end: bigint;
}

// deno-lint-ignore no-explicit-any
type Message = any;

const KINDS = ["unspecified", "internal", "server", "client", "producer", "consumer"] as const;

// deno-lint-ignore no-explicit-any
const TRACE_REQUEST = (root as any).opentelemetry.proto.collector.trace.v1
  .ExportTraceServiceRequest;

function hex(bytes: Uint8Array | null | undefined): string | undefined {
  if (!bytes || bytes.length === 0) return undefined;
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function value(v: Message): ReceivedValue {
  if (v === null || v === undefined) return null;
  // `value` names the oneof field set (protobufjs's oneof getter).
  switch (v.value) {
    case "boolValue":
      return v.boolValue;
    case "intValue":
      return BigInt(v.intValue.toString());
    case "doubleValue":
      return v.doubleValue;
    case "arrayValue":
      return (v.arrayValue.values ?? []).map(value);
    case "stringValue":
      return v.stringValue;
    default:
      return null;
  }
}

function attributes(list: Message[] | undefined): Record<string, ReceivedValue> {
  const out: Record<string, ReceivedValue> = {};
  for (const kv of list ?? []) out[kv.key] = value(kv.value);
  return out;
}

/** The spans of one decoded `ExportTraceServiceRequest`. */
export function decodeTraces(body: Uint8Array): ReceivedSpan[] {
  const req = TRACE_REQUEST.decode(body);
  const out: ReceivedSpan[] = [];
  for (const rs of req.resourceSpans ?? []) {
    const service = String(attributes(rs.resource?.attributes)["service.name"] ?? "");
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        out.push({
          service,
          scope: ss.scope?.name ?? "",
          name: s.name,
          kind: KINDS[s.kind] ?? "unspecified",
          traceId: hex(s.traceId)!,
          spanId: hex(s.spanId)!,
          parentSpanId: hex(s.parentSpanId),
          attributes: attributes(s.attributes),
          events: (s.events ?? []).map((e: Message) => ({
            name: e.name,
            attributes: attributes(e.attributes),
          })),
          links: (s.links ?? []).map((l: Message) => ({
            traceId: hex(l.traceId)!,
            spanId: hex(l.spanId)!,
            attributes: attributes(l.attributes),
          })),
          statusCode: s.status?.code ?? 0,
          start: BigInt(s.startTimeUnixNano.toString()),
          end: BigInt(s.endTimeUnixNano.toString()),
        });
      }
    }
  }
  return out;
}

/** A running receiver. */
export class OtlpReceiver {
  /** Every span received so far, in arrival order. */
  readonly spans: ReceivedSpan[] = [];
  /** `POST /v1/traces` requests received (decoded or not). */
  traceRequests = 0;
  /** Bodies that did not decode, with why. */
  readonly errors: string[] = [];
  readonly #server: Deno.HttpServer<Deno.NetAddr>;
  #changed = Promise.withResolvers<void>();

  private constructor(server: Deno.HttpServer<Deno.NetAddr>) {
    this.#server = server;
  }

  /** Starts a receiver on 127.0.0.1, on a free port. */
  static async start(): Promise<OtlpReceiver> {
    const ready = Promise.withResolvers<void>();
    const self: { receiver?: OtlpReceiver } = {};
    const server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => ready.resolve() },
      async (req) => {
        const body = new Uint8Array(await req.arrayBuffer());
        if (new URL(req.url).pathname === "/v1/traces") self.receiver!.#received(req, body);
        return new Response(null, { status: 200 });
      },
    );
    self.receiver = new OtlpReceiver(server);
    await ready.promise;
    return self.receiver;
  }

  /** `OTEL_EXPORTER_OTLP_ENDPOINT` for this receiver. */
  get endpoint(): string {
    return `http://127.0.0.1:${this.#server.addr.port}`;
  }

  #received(req: Request, body: Uint8Array): void {
    this.traceRequests++;
    try {
      if (!req.headers.get("content-type")?.includes("protobuf")) {
        throw new Error(`content-type ${req.headers.get("content-type")}`);
      }
      this.spans.push(...decodeTraces(body));
    } catch (err) {
      this.errors.push(String(err));
    }
    this.#changed.resolve();
    this.#changed = Promise.withResolvers();
  }

  /**
   * Waits until `done(spans)` holds for the spans received so far, at most
   * `timeoutMs`; returns them. Rejects at the deadline, naming what came.
   */
  async waitFor(
    done: (spans: ReceivedSpan[]) => boolean,
    timeoutMs: number,
  ): Promise<ReceivedSpan[]> {
    const deadline = Date.now() + timeoutMs;
    while (!done(this.spans)) {
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new Error(
          `spans not received within ${timeoutMs} ms; got: ${
            this.spans.map((s) => `${s.service}/${s.scope}/${s.name}`).join(", ") || "none"
          }${this.errors.length ? `; errors: ${this.errors.join("; ")}` : ""}`,
        );
      }
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        this.#changed.promise,
        new Promise((r) => timer = setTimeout(r, Math.min(left, 250))),
      ]);
      clearTimeout(timer);
    }
    return this.spans;
  }

  /** Stops the receiver. */
  async close(): Promise<void> {
    await this.#server.shutdown();
  }
}
