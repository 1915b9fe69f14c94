/**
 * One HTTP/3 request stream (RFC 9114 §4.1): its frames decoded in order,
 * the header section decoded by QPACK (a blocked section waits, bounded by
 * the request idle timeout), validated, handed to the application with its
 * body streaming, and the answer written back as HEADERS and DATA.
 *
 * @example
 * ```ts
 * import type { BidiStream } from "../quic/mod.ts";
 * declare const stream: BidiStream;
 * declare const streamId: number;
 * declare const context: StreamContext;
 *
 * // Called by H3Connection for each bidirectional stream the client opens.
 * await serveRequest(stream, streamId, context, new AbortController());
 * ```
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import { deadline, idleWatch } from "../../shared/deadline.ts";
import {
  encodeFrame,
  encodeHeadersAndData,
  FieldSectionTooLargeError,
  FrameType,
  H3Code,
  H3Error,
  MalformedMessageError,
  type RequestEvent,
  RequestStreamParser,
  validateRequestFields,
} from "../h3/mod.ts";
import { allowedInTrailers, HOP_BY_HOP, type RequestHead, responseHasNoBody } from "../http/mod.ts";
import type { BidiStream, PeerAddr } from "../quic/transport.ts";
import {
  chunkReader,
  pipeBody,
  RequestBodyTooLarge,
  RequestIdleTimeout,
  ResponseWriteStall,
} from "./body_io.ts";
import { cancelProbe } from "./cancel_probe.ts";
import { errorResponse } from "./error_response.ts";
import { headersFrameLimits } from "./header_limits.ts";
import { requestBody, type SectionEvent } from "./request_body.ts";
import { RequestEnd } from "./request_end.ts";
import { tunnelBody } from "./tunnel_body.ts";
import type {
  ConnectionOptions,
  IncomingRequest,
  OutgoingResponse,
  RequestRecord,
} from "./types.ts";

const log = getLogger(["proxy", "server"]);

/** What a request stream needs from its connection. */
export interface StreamContext {
  /** The connection's limits and application. */
  readonly opts: ConnectionOptions;
  /** The client's address. */
  readonly remote: PeerAddr;
  /** Whether the connection has closed. */
  readonly closed: boolean;
  /** Decodes a header section: the fields, or a promise when QPACK blocks it (RFC 9204 §2.1.2). */
  decodeHeaders(
    streamId: number,
    block: Uint8Array,
  ): Array<[string, string]> | Promise<Array<[string, string]>>;
  /** Forgets a blocked section of a stream that is done (Stream Cancellation, RFC 9204 §4.4.2). */
  cancelBlocked(streamId: number): void;
  /**
   * A header section of the stream was skipped undecoded (over the size
   * bound): its dynamic-table references, if any, are released with a
   * Stream Cancellation (RFC 9204 §2.2.2.2, §4.4.2); no Section
   * Acknowledgment is owed for a section never decoded.
   */
  sectionSkipped(streamId: number): void;
  /** QPACK-encodes a field section. */
  encodeSection(fields: Array<[string, string]>): Uint8Array;
  /**
   * Counts stream `streamId` against `key` (a pool) until the stream is
   * done ({@link IncomingRequest.claimBackendStream}). Absent: no limit.
   */
  claimBackendStream?(
    streamId: number,
    key: string,
    waitMs: number,
    signal: AbortSignal,
  ): boolean | Promise<boolean>;
}

/**
 * Methods that almost never carry content: without a content-length, the
 * server waits for the stream's next event to tell "no body" from a body.
 * (Not for other methods: a client may wait for the response before it
 * sends its body, and must not be made to wait for us.)
 */
const PEEK_METHODS = new Set(["GET", "HEAD", "OPTIONS", "DELETE"]);

/**
 * This server advertises SETTINGS_ENABLE_CONNECT_PROTOCOL (`connection.ts`):
 * a request may carry `:protocol` (RFC 9220 §3).
 */
const EXTENDED_CONNECT = { allowExtendedConnect: true } as const;

/** Whether whisper (trace) logging is on: byte counts and hex dumps of what arrives. */
const whisper = () => log.isEnabledFor("trace");

function dump(streamId: number, bytes: Uint8Array): void {
  const head = [...bytes.subarray(0, 32)].map((b) => b.toString(16).padStart(2, "0")).join(" ");
  log.trace("stream {id}: received {n} bytes: {hex}{more}", {
    id: streamId,
    n: bytes.length,
    hex: head,
    more: bytes.length > 32 ? " ..." : "",
  });
}

/**
 * Serves one request stream to its end. `abort` is the request's one end
 * signal, always aborted with a {@link RequestEnd}: by the connection when
 * it closes, and here when the client stops reading (`client_gone`), when
 * its body fails (`client_body_failed`) or when it takes no response data
 * (`write_stalled`). Rejects only with a connection-level {@link H3Error}.
 */
export async function serveRequest(
  stream: BidiStream,
  streamId: number,
  ctx: StreamContext,
  abort: AbortController,
): Promise<void> {
  const started = performance.now();
  const opts = ctx.opts;
  const reader = chunkReader(stream.readable);
  const writer = stream.writable.getWriter();
  const limits = headersFrameLimits(opts.maxFieldSectionSize);
  const parser = new RequestStreamParser({
    maxFrameSize: limits.closeAbove,
    maxHeadersSize: limits.skipAbove,
  });
  const trace = whisper();
  const queue: RequestEvent[] = [];
  let readDone = false;
  writer.closed.catch((err) => {
    if (trace) {
      log.trace("stream {id}: send side closed: {error}", { id: streamId, error: String(err) });
    }
    abort.abort(new RequestEnd("client_gone", { cause: err }));
  });

  const idleMs = opts.requestIdleTimeoutMs ?? 30_000;
  // One watch for all the stream's reads, armed only while a read waits: a
  // read that waits too long is cancelled (STOP_SENDING), and the request
  // answered 408.
  let lateRead = false;
  // Off for a tunnel's reads once it is known: its pool's websocket limits bound it.
  let watchReads = true;
  const readWatch = idleWatch(idleMs, () => {
    lateRead = true;
    reader.cancel(new RequestIdleTimeout(idleMs)).catch(() => {});
  });
  readWatch.pause();
  /**
   * The next event. `recycle`: the caller keeps nothing of earlier events'
   * bytes; a read then goes into the last read's buffer when the parser
   * keeps none of it either (the queue is empty whenever a read is made).
   */
  const nextEvent = async (recycle = false): Promise<RequestEvent> => {
    while (queue.length === 0) {
      if (readDone) return { type: "end" };
      if (recycle && parser.pendingBytes === 0) reader.recycle?.();
      if (watchReads) readWatch.touch();
      let r: ReadableStreamReadResult<Uint8Array>;
      try {
        r = await reader.read();
      } finally {
        readWatch.pause();
      }
      if (lateRead) throw new RequestIdleTimeout(idleMs);
      if (r.done) {
        readDone = true;
        queue.push(...parser.end());
      } else {
        if (trace) dump(streamId, r.value);
        queue.push(...parser.push(r.value));
      }
    }
    return queue.shift()!;
  };
  const decode = (ev: SectionEvent) => {
    if (ev.type === "headers_too_large") {
      log.debug("stream {id}: HEADERS frame of {n} bytes over {limit}: answered 431 undecoded", {
        id: streamId,
        n: ev.length,
        limit: limits.skipAbove,
      });
      ctx.sectionSkipped(streamId);
      throw new FieldSectionTooLargeError(opts.maxFieldSectionSize);
    }
    const fields = ctx.decodeHeaders(streamId, ev.block);
    // A section QPACK blocks waits for the encoder stream no longer than any other part.
    return Array.isArray(fields)
      ? fields
      : deadline(fields, idleMs, () => new RequestIdleTimeout(idleMs));
  };

  let response: OutgoingResponse;
  let head: RequestHead | undefined;
  // What the application asked to be told when the request is done (its span).
  let finished: OutgoingResponse["finished"];
  try {
    const first = await nextEvent();
    if (first.type !== "headers" && first.type !== "headers_too_large") {
      throw new H3Error(H3Code.REQUEST_INCOMPLETE, "stream", "request without HEADERS");
    }
    head = validateRequestFields(await decode(first), EXTENDED_CONNECT);
    // An extended CONNECT (RFC 9220): the stream carries a tunnel once answered 2xx.
    const tunnel = head.protocol !== undefined;
    if (tunnel) watchReads = false;
    const declared = head.contentLength;
    if (declared !== undefined && declared > opts.maxRequestBodyBytes) {
      response = errorResponse(413, "payload_too_large", "request body exceeds the limit");
    } else {
      // Peek at what is already buffered: a request whose stream ended with its
      // HEADERS has no body.
      let ended = declared === 0 || (readDone && queue.every((e) => e.type === "end"));
      if (!ended && declared === undefined && PEEK_METHODS.has(head.method)) {
        // A GET's FIN often follows its HEADERS a moment later: wait for it
        // rather than forward an empty streamed body. A GET that does carry
        // content is forwarded with it (nothing is dropped silently).
        const ev = await nextEvent();
        if (ev.type === "end") ended = true;
        else queue.unshift(ev);
      }
      let trailers: Array<[string, string]> | null = null;
      const body = tunnel ? tunnelBody(nextEvent, abort) : ended ? null : requestBody(
        {
          next: nextEvent,
          lastReadTaken: () => parser.pendingBytes === 0 && queue.every((e) => e.type === "end"),
        },
        decode,
        declared,
        opts.maxRequestBodyBytes,
        abort,
        (fields) => trailers = fields,
      );
      const req: IncomingRequest = {
        head,
        body,
        trailers: body === null || tunnel ? undefined : () => trailers,
        remote: ctx.remote,
        signal: abort.signal,
        claimBackendStream: ctx.claimBackendStream
          ? (key, waitMs) => ctx.claimBackendStream!(streamId, key, waitMs, abort.signal)
          : undefined,
      };
      // Nothing is written while the backend is asked: probe the stream so
      // that a client's STOP_SENDING aborts the request (and resets the
      // backend stream) without waiting for the answer.
      const probe = cancelProbe.watch(writer);
      try {
        response = await opts.handler(req);
        finished = response.finished;
      } catch (err) {
        // A failure of the client's own body is reported below, not as a bug.
        if (bodyFailed(abort.signal) === undefined) {
          log.error("handler failed: {error}", { error: String(err) });
        }
        response = errorResponse(500, "internal_error", "internal proxy error");
      } finally {
        probe.stop();
      }
      // A failure of the client's own body outranks what the backend said.
      const failed = bodyFailed(abort.signal);
      if (failed !== undefined) throw failed.cause;
    }
  } catch (err) {
    if (err instanceof RequestBodyTooLarge) {
      response = errorResponse(413, "payload_too_large", err.message);
    } else if (err instanceof RequestIdleTimeout) {
      response = errorResponse(408, "request_timeout", err.message);
    } else if (err instanceof MalformedMessageError) {
      response = errorResponse(400, "bad_request", err.message);
    } else if (err instanceof H3Error && err.scope === "stream") {
      if (err.code === H3Code.EXCESSIVE_LOAD) {
        response = errorResponse(431, "headers_too_large", "header list exceeds the limit");
      } else if (err.code === H3Code.REQUEST_CANCELLED || ctx.closed) {
        abandon(reader, writer);
        finish(ctx, streamId, head, started, 499, 0, undefined, "aborted", finished);
        return;
      } else {
        response = errorResponse(400, "bad_request", err.message);
      }
    } else if (err instanceof H3Error) {
      abandon(reader, writer);
      // A request that broke its connection is a request too: accounted as 400.
      finish(ctx, streamId, head, started, 400, 0, undefined, "aborted", finished);
      throw err; // connection error
    } else {
      // the client reset the stream or the connection went away
      if (trace) log.trace("stream {id}: abandoned: {error}", { id: streamId, error: String(err) });
      abandon(reader, writer);
      finish(ctx, streamId, head, started, 499, 0, undefined, "aborted", finished);
      return;
    }
  } finally {
    ctx.cancelBlocked(streamId);
  }

  if (trace) log.trace("stream {id}: response {status}", { id: streamId, status: response.status });
  const tunnel = head?.protocol !== undefined && response.status >= 200 && response.status < 300;
  const written = await writeResponse(
    ctx,
    writer,
    response,
    head?.method ?? "",
    abort,
    idleMs,
    tunnel,
  );
  // Whatever of the request the application did not read (a body it did not
  // want, a GET's late FIN or stray DATA) is not wanted: stop receiving it.
  if (!readDone) reader.cancel().catch(() => {});
  const { bytes, outcome } = written;
  finish(ctx, streamId, head, started, response.status, bytes, response, outcome, finished);
  // A tunnel's client that broke HTTP/3 on its stream (HEADERS after CONNECT) broke its connection.
  const broke = tunnel ? bodyFailed(abort.signal)?.cause : undefined;
  if (broke instanceof H3Error && broke.scope === "connection") throw broke;
}

function finish(
  ctx: StreamContext,
  streamId: number,
  head: RequestHead | undefined,
  started: number,
  status: number,
  bytes: number,
  response: OutgoingResponse | undefined,
  outcome: "complete" | "broken" | "aborted",
  finished: OutgoingResponse["finished"],
): void {
  const done = ctx.opts.hooks?.requestDone;
  if (done === undefined && finished === undefined) return;
  // A request whose head could not be decoded is accounted for too (`-`).
  const record: RequestRecord = {
    listener: "h3",
    streamId,
    remote: ctx.remote,
    method: head?.method ?? "-",
    authority: head?.authority,
    path: head === undefined ? "-" : head.path ?? "",
    status,
    bytes,
    durationMs: performance.now() - started,
    backend: response?.backend,
    upstreamMs: response?.upstreamMs,
    failure: response?.failure,
    rateLimit: response?.rateLimit,
    outcome,
  };
  // The response's own listeners (a backend slot among them) run whatever the sink does.
  try {
    done?.(record);
  } finally {
    finished?.(record);
  }
}

/** The end of a request whose own body failed, or `undefined`. */
function bodyFailed(signal: AbortSignal): RequestEnd | undefined {
  const end = signal.reason;
  return end instanceof RequestEnd && end.kind === "client_body_failed" ? end : undefined;
}

function abandon(
  reader: { cancel(reason?: unknown): Promise<void> },
  writer: WritableStreamDefaultWriter<Uint8Array>,
): void {
  reader.cancel().catch(() => {});
  writer.close().catch(() => {});
}

/**
 * The response's trailer section as a HEADERS frame, QPACK-encoded like the
 * head, or `null` when it has none to send: fields that may not be trailers
 * (RFC 9110 §6.5.1, hop-by-hop and pseudo-headers included) are dropped.
 */
function trailerFrame(ctx: StreamContext, res: OutgoingResponse): Uint8Array | null {
  const trailers = res.trailers?.();
  if (trailers === undefined) return null;
  const fields: Array<[string, string]> = [];
  for (const [name, value] of trailers) {
    const lower = name.toLowerCase();
    if (lower.charCodeAt(0) !== 0x3a && allowedInTrailers(lower)) fields.push([lower, value]);
  }
  return fields.length === 0 ? null : encodeFrame(FrameType.HEADERS, ctx.encodeSection(fields));
}

/** Writes the response; resolves with what was sent and how it ended (never rejects). */
async function writeResponse(
  ctx: StreamContext,
  writer: WritableStreamDefaultWriter<Uint8Array>,
  res: OutgoingResponse,
  method: string,
  abort: AbortController,
  idleMs: number,
  tunnel = false,
): Promise<{ bytes: number; outcome: "complete" | "broken" | "aborted" }> {
  const fields: Array<[string, string]> = [[":status", String(res.status)]];
  for (const [name, value] of res.headers) {
    const lower = name.toLowerCase();
    if (HOP_BY_HOP.has(lower) || lower === "host") continue;
    fields.push([lower, value]);
  }
  const noBody = responseHasNoBody(method, res.status);
  let body = res.body;
  if (noBody && body instanceof ReadableStream) {
    body.cancel().catch(() => {});
    body = null;
  }
  let bytes = 0;
  // A client that grants no flow-control credit holds a write forever: bounded.
  const write = (bytes: Uint8Array) =>
    deadline(writer.write(bytes), idleMs, () => new ResponseWriteStall(idleMs));
  try {
    // Inside the try: whatever fails, the response ends and its `finished` is called.
    const block = ctx.encodeSection(fields);
    if (body === null || noBody) {
      await write(encodeFrame(FrameType.HEADERS, block));
    } else if (body instanceof Uint8Array) {
      await write(encodeHeadersAndData(block, body));
      bytes = body.length;
    } else {
      await write(encodeFrame(FrameType.HEADERS, block));
      // While the backend's body is awaited nothing is written either.
      const probe = cancelProbe.watch(writer, true);
      let outcome;
      try {
        // A tunnel's backend side may be silent for long: its pool's websocket limits bound it.
        outcome = await pipeBody(writer, body, abort.signal, tunnel ? Infinity : idleMs, probe);
      } finally {
        probe.stop();
      }
      bytes = outcome.bytes;
      if (outcome.kind === "stalled") {
        // The client took nothing for idleMs and the backend stream is
        // reset. The malformed end goes behind the stuck write, so a client
        // that reads again rejects the response; one that never does has
        // the stream dropped after another idleMs (Deno then sends a FIN).
        log.debug("response cut: {error}", { error: outcome.error.message });
        abort.abort(new RequestEnd("write_stalled", { cause: outcome.error }));
        const trailer = encodeFrame(FrameType.HEADERS, ctx.encodeSection([[":status", "502"]]));
        const ended = writer.write(trailer).then(() => writer.close());
        deadline(ended, idleMs, () => outcome.error).catch(() => writer.abort().catch(() => {}));
        return { bytes, outcome: "broken" };
      }
      if (outcome.kind === "broken" && tunnel) {
        // No frame but DATA may follow a CONNECT's answer (RFC 9114 §4.4), and
        // Deno cannot reset a send stream: the tunnel ends with a FIN, which a
        // WebSocket client without a Close frame sees as an abnormal closure.
        log.debug("tunnel ended: {error}", { error: String(outcome.error) });
        await writer.close();
        return { bytes, outcome: "broken" };
      }
      if (outcome.kind === "broken") {
        // The upstream body broke or stalled mid-way. A clean FIN would make
        // the response look complete, so end it with a trailer section holding
        // a pseudo-header: a malformed response the client must reject
        // (RFC 9114 §4.1.2, §4.3).
        log.debug("response body cut: {error}", { error: String(outcome.error) });
        await writer.write(encodeFrame(FrameType.HEADERS, ctx.encodeSection([[":status", "502"]])));
        await writer.close();
        return { bytes, outcome: "broken" };
      }
    }
    // The body is complete: its trailers follow it (RFC 9114 §4.1).
    const tail = body === null || noBody ? null : trailerFrame(ctx, res);
    if (tail !== null) await write(tail);
    await writer.close();
    return { bytes, outcome: "complete" };
  } catch (err) {
    // The client went away, or took nothing for idleMs: nothing more to send.
    if (err instanceof ResponseWriteStall) {
      abort.abort(new RequestEnd("write_stalled", { cause: err }));
    }
    writer.abort().catch(() => {});
    // A body never piped (its head was not written) is not wanted either.
    if (body instanceof ReadableStream && !body.locked) body.cancel().catch(() => {});
    return { bytes, outcome: "aborted" };
  }
}
