/**
 * One HTTP/3 connection (RFC 9114) on a {@link QuicConnection}: our control
 * and QPACK streams, the peer's unidirectional streams, request streams,
 * GOAWAY, and connection/stream errors (§8).
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import {
  BLOCKED,
  BodyLengthTracker,
  classifyUniStream,
  concatBytes,
  ControlStreamParser,
  decodeStreamType,
  encodeFrameHeader,
  encodeGoaway,
  encodeSettingsFrame,
  FrameType,
  H3Code,
  H3Error,
  MalformedMessageError,
  NEED_MORE,
  QpackDecoder,
  QpackEncoder,
  type RequestEvent,
  RequestStreamParser,
  SettingId,
  StreamType,
  validateRequestFields,
  validateTrailerFields,
} from "../h3/mod.ts";
import { deadline, settledWithin } from "../../shared/deadline.ts";
import type { BidiStream, QuicConnection, ReceiveStream } from "../quic/transport.ts";
import type { IncomingRequest, OutgoingResponse, RequestHandler } from "./types.ts";

const log = getLogger(["proxy", "server"]);

/** Limits and settings of a connection. */
export interface ConnectionOptions {
  /** The application. */
  handler: RequestHandler;
  /** SETTINGS_MAX_FIELD_SECTION_SIZE we advertise and enforce (bytes). */
  maxFieldSectionSize: number;
  /** SETTINGS_QPACK_MAX_TABLE_CAPACITY we advertise (bytes, > 0 enables the dynamic table). */
  qpackMaxTableCapacity: number;
  /** SETTINGS_QPACK_BLOCKED_STREAMS we advertise. */
  qpackBlockedStreams: number;
  /** Largest request body accepted; larger gets 413. */
  maxRequestBodyBytes: number;
  /**
   * Longest wait for the next part of a request (its HEADERS, or the next
   * DATA of its body) before answering 408; default 30 s. A client keeping
   * its connection alive could otherwise hold a stream, and the backend
   * request behind it, for ever.
   */
  requestIdleTimeoutMs?: number;
  /** Observers for metrics. */
  hooks?: ConnectionHooks;
}

/** Callbacks for metrics; all optional. */
export interface ConnectionHooks {
  streamOpened?(): void;
  streamClosed?(): void;
}

/** Fields that must not appear in HTTP/3 (RFC 9114 §4.2). */
const CONNECTION_SPECIFIC = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "upgrade",
  "te",
  "host",
]);

/** Methods whose body is never forwarded (fetch rejects one). */
const BODILESS_METHODS = new Set(["GET", "HEAD"]);

const ENCODER = new TextEncoder();

/** How long a drained connection waits for the peer to close before closing it (ms). */
const CLOSE_LINGER_MS = 1000;

function jsonBody(error: string, message: string): Uint8Array {
  return ENCODER.encode(JSON.stringify({ error, message }));
}

/** A small JSON error response. */
export function errorResponse(status: number, error: string, message: string): OutgoingResponse {
  const body = jsonBody(error, message);
  return {
    status,
    headers: [["content-type", "application/json"], ["content-length", String(body.length)]],
    body,
  };
}

/** Size of the first read of a request stream: room for a typical HEADERS frame. */
const FIRST_READ_BYTES = 2048;
/** Size of later reads (request bodies). */
const BODY_READ_BYTES = 64 * 1024;

/** The reads {@link H3Connection} makes on a request stream. */
interface ChunkReader {
  read(): Promise<ReadableStreamReadResult<Uint8Array>>;
  cancel(reason?: unknown): Promise<void>;
}

/**
 * Reads a request stream into buffers of our size. The runtime's default
 * reader of a QUIC stream allocates 64 KiB for every read, so each GET (a few
 * dozen bytes) cost 64 KiB of short-lived external memory, which drives V8's
 * garbage collector. Streams that are not byte streams (the in-memory test
 * transport) get the default reader.
 */
function chunkReader(readable: ReadableStream<Uint8Array>): ChunkReader {
  let byob: ReadableStreamBYOBReader;
  try {
    byob = readable.getReader({ mode: "byob" });
  } catch {
    return readable.getReader();
  }
  let size = FIRST_READ_BYTES;
  return {
    async read() {
      const r = await byob.read(new Uint8Array(size));
      size = BODY_READ_BYTES;
      return r.done || r.value === undefined
        ? { done: true, value: undefined }
        : { done: false, value: r.value };
    },
    cancel: (reason) => byob.cancel(reason),
  };
}

interface BlockedWaiter {
  resolve(fields: Array<[string, string]>): void;
  reject(err: unknown): void;
}

/**
 * Serves HTTP/3 on one QUIC connection until it closes.
 *
 * @example
 * ```ts
 * const h3 = new H3Connection(conn, { handler, maxFieldSectionSize: 65536,
 *   qpackMaxTableCapacity: 4096, qpackBlockedStreams: 16, maxRequestBodyBytes: 2 ** 31 });
 * await h3.serve();
 * ```
 */
export class H3Connection {
  readonly #conn: QuicConnection;
  readonly #opts: ConnectionOptions;
  readonly #qdec: QpackDecoder;
  readonly #qenc = new QpackEncoder();
  readonly #abort = new AbortController();
  readonly #blocked = new Map<number, BlockedWaiter>();
  readonly #inflight = new Set<Promise<void>>();
  readonly #peerStreams = new Set<string>();
  // Our critical streams: keep the writers for the connection's whole life
  // (a collected QuicSendStream is closed, DESIGN.md §2).
  #control?: WritableStreamDefaultWriter<Uint8Array>;
  #decoderStream?: WritableStreamDefaultWriter<Uint8Array>;
  #encoderStream?: WritableStreamDefaultWriter<Uint8Array>;
  #decoderWrite: Promise<void> = Promise.resolve();
  #maxStreamId = -1;
  #goawayId: number | null = null;
  #closed = false;

  /** Whether whisper (trace) logging is on: byte counts and hex dumps of what arrives. */
  readonly #whisper = log.isEnabledFor("trace");

  #dump(streamId: number, bytes: Uint8Array): void {
    const head = [...bytes.subarray(0, 32)].map((b) => b.toString(16).padStart(2, "0")).join(" ");
    log.trace("stream {id}: received {n} bytes: {hex}{more}", {
      id: streamId,
      n: bytes.length,
      hex: head,
      more: bytes.length > 32 ? " ..." : "",
    });
  }

  constructor(conn: QuicConnection, opts: ConnectionOptions) {
    this.#conn = conn;
    this.#opts = opts;
    this.#qdec = new QpackDecoder({
      maxTableCapacity: opts.qpackMaxTableCapacity,
      maxBlockedStreams: opts.qpackBlockedStreams,
      maxFieldSectionSize: opts.maxFieldSectionSize,
    });
  }

  /** The peer's address. */
  get remote(): { hostname: string; port: number } {
    return this.#conn.remoteAddr;
  }

  /** Number of requests being served. */
  get activeStreams(): number {
    return this.#inflight.size;
  }

  /** Serves until the connection closes. Never rejects. */
  async serve(): Promise<void> {
    this.#conn.closed.then(
      (info) => this.#onClosed(info.closeCode, info.reason),
      (err) => this.#onClosed(-1, String(err)),
    );
    try {
      await this.#openOwnStreams();
    } catch (err) {
      this.#onClosed(-1, `cannot open control stream: ${err}`);
      return;
    }
    await Promise.all([this.#acceptUni(), this.#acceptBidi()]);
    while (this.#inflight.size > 0) await Promise.allSettled([...this.#inflight]);
  }

  /**
   * Starts a graceful shutdown (RFC 9114 §5.2): sends GOAWAY, refuses new
   * requests, and closes the connection once in-flight requests finish.
   */
  async goaway(): Promise<void> {
    if (this.#closed) return;
    if (this.#goawayId === null) {
      this.#goawayId = this.#maxStreamId + 4;
      log.trace("sending GOAWAY {id} with {n} requests in flight", {
        id: this.#goawayId,
        n: this.#inflight.size,
      });
      try {
        await this.#control?.write(encodeGoaway(this.#goawayId));
      } catch {
        // the peer is gone: nothing to drain
      }
    }
    while (this.#inflight.size > 0) await Promise.allSettled([...this.#inflight]);
    // Closing at once would discard response bytes still in flight (QUIC drops
    // unsent stream data on CONNECTION_CLOSE): give the peer a moment to
    // receive them and close by itself.
    await settledWithin(this.#conn.closed, CLOSE_LINGER_MS);
    this.close(H3Code.NO_ERROR, "shutting down");
  }

  /** Closes the connection at once with an HTTP/3 error code. */
  close(code: number, reason: string): void {
    if (this.#closed) return;
    this.#onClosed(code, reason);
    try {
      this.#conn.close({ closeCode: code, reason });
    } catch {
      // already closed
    }
  }

  #onClosed(code: number, reason: string): void {
    if (this.#closed) return;
    this.#closed = true;
    log.trace("connection closed: {code} {reason}", { code, reason });
    this.#abort.abort(new Error(`connection closed: ${reason}`));
    for (const waiter of this.#blocked.values()) {
      waiter.reject(new H3Error(H3Code.REQUEST_CANCELLED, "stream", "connection closed"));
    }
    this.#blocked.clear();
  }

  /** Reacts to a protocol error: a connection error closes everything. */
  #fail(err: unknown): void {
    if (this.#closed) return;
    if (err instanceof H3Error && err.scope === "connection") {
      log.debug("connection error {error}", { error: err.message });
      this.close(err.code, err.message.slice(0, 100));
    } else if (!(err instanceof H3Error)) {
      log.debug("connection failed: {error}", { error: String(err) });
      this.close(H3Code.INTERNAL_ERROR, "internal error");
    }
  }

  async #openOwnStreams(): Promise<void> {
    const settings = new Map<number, number>([
      [SettingId.QPACK_MAX_TABLE_CAPACITY, this.#opts.qpackMaxTableCapacity],
      [SettingId.QPACK_BLOCKED_STREAMS, this.#opts.qpackBlockedStreams],
      [SettingId.MAX_FIELD_SECTION_SIZE, this.#opts.maxFieldSectionSize],
    ]);
    const control = (await this.#conn.createUnidirectionalStream()).getWriter();
    this.#control = control;
    await control.write(
      concatBytes(Uint8Array.of(StreamType.CONTROL), encodeSettingsFrame(settings)),
    );
    const encoder = (await this.#conn.createUnidirectionalStream()).getWriter();
    this.#encoderStream = encoder;
    await encoder.write(Uint8Array.of(StreamType.QPACK_ENCODER));
    const decoder = (await this.#conn.createUnidirectionalStream()).getWriter();
    this.#decoderStream = decoder;
    await decoder.write(Uint8Array.of(StreamType.QPACK_DECODER));
  }

  /** Writes pending QPACK decoder-stream instructions (acks, increments, cancels). */
  #flushDecoderStream(): void {
    const bytes = this.#qdec.takeDecoderStreamBytes();
    if (bytes === null || bytes.length === 0 || !this.#decoderStream) return;
    const writer = this.#decoderStream;
    this.#decoderWrite = this.#decoderWrite.then(() => writer.write(bytes)).catch(() => {});
  }

  async #acceptUni(): Promise<void> {
    const reader = this.#conn.incomingUnidirectionalStreams.getReader();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        this.#handleUni(value).catch((err) => this.#fail(err));
      }
    } catch {
      // connection closed
    }
  }

  async #handleUni(stream: ReceiveStream): Promise<void> {
    const reader = stream.getReader();
    let buf: Uint8Array = new Uint8Array(0);
    let kind: ReturnType<typeof classifyUniStream> | undefined;
    let rest: Uint8Array = buf;
    while (kind === undefined) {
      const r = await reader.read().catch(() => ({ done: true, value: undefined }));
      if (r.done || !r.value) return; // ended before its type: ignore
      buf = buf.length === 0 ? r.value : concatBytes(buf, r.value);
      const t = decodeStreamType(buf);
      if (t === NEED_MORE) continue;
      kind = classifyUniStream(t.type);
      rest = buf.subarray(t.length);
    }
    if (kind === "push") {
      throw new H3Error(H3Code.STREAM_CREATION_ERROR, "connection", "client opened a push stream");
    }
    if (kind === "unknown") {
      // Unknown stream types are ignored (RFC 9114 §6.2): drain, never cancel.
      while (!(await reader.read().catch(() => ({ done: true }))).done) { /* discard */ }
      return;
    }
    if (this.#peerStreams.has(kind)) {
      throw new H3Error(H3Code.STREAM_CREATION_ERROR, "connection", `second ${kind} stream`);
    }
    this.#peerStreams.add(kind);
    const onChunk = this.#criticalHandler(kind);
    if (rest.length > 0) onChunk(rest);
    for (;;) {
      let r: ReadableStreamReadResult<Uint8Array>;
      try {
        r = await reader.read();
      } catch {
        if (this.#closed) return;
        throw new H3Error(H3Code.CLOSED_CRITICAL_STREAM, "connection", `${kind} stream reset`);
      }
      if (r.done) break;
      onChunk(r.value);
    }
    if (!this.#closed) {
      throw new H3Error(H3Code.CLOSED_CRITICAL_STREAM, "connection", `${kind} stream closed`);
    }
  }

  #criticalHandler(kind: "control" | "qpack_encoder" | "qpack_decoder"): (c: Uint8Array) => void {
    if (kind === "control") {
      const parser = new ControlStreamParser();
      return (chunk) => {
        for (const ev of parser.push(chunk)) {
          if (ev.type === "goaway") log.trace("peer sent GOAWAY {id}", { id: ev.id });
        }
      };
    }
    if (kind === "qpack_encoder") {
      return (chunk) => {
        const unblocked = this.#qdec.pushEncoderStream(chunk);
        for (const { streamId, fields, error } of unblocked) {
          const waiter = this.#blocked.get(streamId);
          this.#blocked.delete(streamId);
          if (error) waiter?.reject(error);
          else waiter?.resolve(fields);
        }
        this.#flushDecoderStream();
      };
    }
    return (chunk) => this.#qenc.pushDecoderStream(chunk);
  }

  async #acceptBidi(): Promise<void> {
    const reader = this.#conn.incomingBidirectionalStreams.getReader();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        const id = Number(value.readable.id);
        if (this.#goawayId !== null && id >= this.#goawayId) {
          // RFC 9114 §5.2: refused after GOAWAY; the client may retry it.
          value.readable.cancel().catch(() => {});
          value.writable.abort().catch(() => {});
          continue;
        }
        if (id > this.#maxStreamId) this.#maxStreamId = id;
        this.#opts.hooks?.streamOpened?.();
        const p: Promise<void> = this.#handleRequest(value, id)
          .catch((err) => this.#fail(err))
          .finally(() => {
            this.#inflight.delete(p);
            this.#opts.hooks?.streamClosed?.();
          });
        this.#inflight.add(p);
      }
    } catch {
      // connection closed
    }
  }

  async #decodeHeaders(streamId: number, block: Uint8Array): Promise<Array<[string, string]>> {
    const fields = this.#qdec.decodeSection(streamId, block);
    if (fields !== BLOCKED) {
      this.#flushDecoderStream();
      return fields;
    }
    const decoded = await new Promise<Array<[string, string]>>((resolve, reject) => {
      // A section that blocks after the connection closed would wait forever:
      // #onClosed has already rejected the waiters it knew of.
      if (this.#closed) {
        reject(new H3Error(H3Code.REQUEST_CANCELLED, "stream", "connection closed"));
        return;
      }
      this.#blocked.set(streamId, { resolve, reject });
    });
    return decoded;
  }

  async #handleRequest(stream: BidiStream, streamId: number): Promise<void> {
    const reader = chunkReader(stream.readable);
    const writer = stream.writable.getWriter();
    const parser = new RequestStreamParser({
      maxFrameSize: Math.max(this.#opts.maxFieldSectionSize + 1024, 16384),
    });
    const queue: RequestEvent[] = [];
    let readDone = false;
    const abort = new AbortController();
    const onConnAbort = () => abort.abort(this.#abort.signal.reason);
    this.#abort.signal.addEventListener("abort", onConnAbort, { once: true });
    writer.closed.catch((err) => {
      log.trace("stream {id}: send side closed: {error}", { id: streamId, error: String(err) });
      abort.abort(new Error("client stopped reading"));
    });

    const idleMs = this.#opts.requestIdleTimeoutMs ?? 30_000;
    const nextEvent = async (): Promise<RequestEvent> => {
      while (queue.length === 0) {
        if (readDone) return { type: "end" };
        const r = await deadline(reader.read(), idleMs, () => new RequestIdleTimeout(idleMs));
        if (r.done) {
          readDone = true;
          queue.push(...parser.end());
        } else {
          if (this.#whisper) this.#dump(streamId, r.value);
          queue.push(...parser.push(r.value));
        }
      }
      return queue.shift()!;
    };

    let response: OutgoingResponse;
    let method = "";
    let bodyStream: ReadableStream<Uint8Array> | null = null;
    const bodyFailure: { error?: unknown } = {};
    try {
      const first = await nextEvent();
      if (first.type !== "headers") {
        throw new H3Error(H3Code.REQUEST_INCOMPLETE, "stream", "request without HEADERS");
      }
      const fields = await this.#decodeHeaders(streamId, first.block);
      const head = validateRequestFields(fields);
      method = head.method;
      const declared = head.contentLength;
      if (declared !== undefined && declared > this.#opts.maxRequestBodyBytes) {
        response = errorResponse(413, "payload_too_large", "request body exceeds the limit");
      } else {
        // Peek at what is already buffered: a request whose stream ended with its
        // HEADERS has no body.
        const ended = readDone && queue.every((e) => e.type === "end");
        const hasBody = !BODILESS_METHODS.has(head.method) && !ended && declared !== 0;
        if (hasBody) {
          bodyStream = this.#requestBody(nextEvent, streamId, declared, bodyFailure, abort);
        }
        const req: IncomingRequest = {
          head,
          body: bodyStream,
          remote: this.#conn.remoteAddr,
          signal: abort.signal,
        };
        try {
          response = await this.#opts.handler(req);
        } catch (err) {
          // A failure of the client's own body is reported below, not as a bug.
          if (bodyFailure.error === undefined) {
            log.error("handler failed: {error}", { error: String(err) });
          }
          response = errorResponse(500, "internal_error", "internal proxy error");
        }
        // A failure of the client's own body outranks what the backend said.
        if (bodyFailure.error !== undefined) throw bodyFailure.error;
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
        } else if (err.code === H3Code.REQUEST_CANCELLED || this.#closed) {
          this.#abandon(reader, writer);
          return;
        } else {
          response = errorResponse(400, "bad_request", err.message);
        }
      } else if (err instanceof H3Error) {
        this.#abandon(reader, writer);
        throw err; // connection error
      } else {
        // the client reset the stream or the connection went away
        log.trace("stream {id}: abandoned: {error}", { id: streamId, error: String(err) });
        this.#abandon(reader, writer);
        return;
      }
    } finally {
      this.#abort.signal.removeEventListener("abort", onConnAbort);
    }

    log.trace("stream {id}: response {status}", { id: streamId, status: response.status });
    await this.#writeResponse(writer, response, method, abort.signal);
    // Whatever of the request the application did not read (a body it did not
    // want, a GET's late FIN or stray DATA) is not wanted: stop receiving it.
    if (!readDone) reader.cancel().catch(() => {});
    if (this.#blocked.has(streamId)) {
      this.#blocked.delete(streamId);
      this.#qdec.cancelStream(streamId);
      this.#flushDecoderStream();
    }
  }

  #abandon(
    reader: ChunkReader,
    writer: WritableStreamDefaultWriter<Uint8Array>,
  ): void {
    reader.cancel().catch(() => {});
    writer.close().catch(() => {});
  }

  /** The request body as a pull-driven stream: each pull reads the QUIC stream once more. */
  #requestBody(
    nextEvent: () => Promise<RequestEvent>,
    streamId: number,
    declared: number | undefined,
    failure: { error?: unknown },
    abort: AbortController,
  ): ReadableStream<Uint8Array> {
    const tracker = new BodyLengthTracker(declared);
    const limit = this.#opts.maxRequestBodyBytes;
    let received = 0;
    const pullOnce = async (controller: ReadableStreamDefaultController<Uint8Array>) => {
      for (;;) {
        const ev = await nextEvent();
        if (ev.type === "data") {
          if (ev.chunk.length === 0) continue;
          received += ev.chunk.length;
          if (received > limit) {
            throw new RequestBodyTooLarge();
          }
          tracker.add(ev.chunk.length);
          controller.enqueue(ev.chunk);
          return;
        }
        if (ev.type === "headers") {
          // Trailers: decoded to keep QPACK state right, validated, not forwarded
          // (fetch cannot send trailers).
          validateTrailerFields(await this.#decodeHeaders(streamId, ev.block));
          continue;
        }
        tracker.finish();
        controller.close();
        return;
      }
    };
    return new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        try {
          await pullOnce(controller);
        } catch (err) {
          failure.error ??= err;
          // The client broke its own body: abort the request first, so the
          // application sees a client failure and does not blame the backend.
          abort.abort(err);
          throw err;
        }
      },
    }, { highWaterMark: 0 });
  }

  async #writeResponse(
    writer: WritableStreamDefaultWriter<Uint8Array>,
    res: OutgoingResponse,
    method: string,
    signal: AbortSignal,
  ): Promise<void> {
    const fields: Array<[string, string]> = [[":status", String(res.status)]];
    for (const [name, value] of res.headers) {
      const lower = name.toLowerCase();
      if (CONNECTION_SPECIFIC.has(lower)) continue;
      fields.push([lower, value]);
    }
    const block = this.#qenc.encodeSection(fields);
    const headers = concatBytes(encodeFrameHeader(FrameType.HEADERS, block.length), block);
    const noBody = method === "HEAD" || res.status === 204 || res.status === 304 ||
      (res.status >= 100 && res.status < 200);
    let body = res.body;
    if (noBody && body instanceof ReadableStream) {
      body.cancel().catch(() => {});
      body = null;
    }
    try {
      if (body === null || noBody) {
        await writer.write(headers);
      } else if (body instanceof Uint8Array) {
        const dataHeader = encodeFrameHeader(FrameType.DATA, body.length);
        const out = new Uint8Array(headers.length + dataHeader.length + body.length);
        out.set(headers, 0);
        out.set(dataHeader, headers.length);
        out.set(body, headers.length + dataHeader.length);
        await writer.write(out);
      } else {
        await writer.write(headers);
        await this.#pipeBody(writer, body, signal);
      }
      await writer.close();
    } catch {
      // The client went away (or the body broke and was reported): nothing to send.
      writer.abort().catch(() => {});
    }
  }

  async #pipeBody(
    writer: WritableStreamDefaultWriter<Uint8Array>,
    body: ReadableStream<Uint8Array>,
    signal: AbortSignal,
  ): Promise<void> {
    const reader = bodyReader(body);
    try {
      for (;;) {
        let frame: Uint8Array | null;
        try {
          frame = await reader.next();
        } catch (err) {
          // The upstream body broke mid-way. A clean FIN would make the response
          // look complete, so end it with a trailer section holding a
          // pseudo-header: a malformed response the client must reject
          // (RFC 9114 §4.1.2, §4.3).
          log.debug("upstream body failed: {error}", { error: String(err) });
          const block = this.#qenc.encodeSection([[":status", "502"]]);
          await writer.write(
            concatBytes(encodeFrameHeader(FrameType.HEADERS, block.length), block),
          );
          return;
        }
        if (frame === null) return;
        if (signal.aborted) throw signal.reason;
        await writer.write(frame);
        reader.written();
      }
    } catch (err) {
      reader.cancel(err);
      throw err;
    }
  }
}

/** Room kept in front of each read for the DATA frame header (type + length varints). */
const FRAME_HEADER_ROOM = 8;
/** Size of the buffer a response body is read into. */
const BODY_BUFFER_BYTES = 64 * 1024;

/** Reads a response body as ready-to-send DATA frames. */
interface DataFrameReader {
  /** The next DATA frame (header + payload), or `null` at the end. */
  next(): Promise<Uint8Array | null>;
  /** Tells the reader the last frame has been written (its buffer may be reused). */
  written(): void;
  cancel(reason: unknown): void;
}

/**
 * Turns a body into DATA frames. A byte stream (fetch's bodies) is read with
 * a BYOB reader into one buffer per response, reused after each write, with
 * room in front for the frame header: no allocation and no copy per chunk,
 * which keeps a long download's memory flat. Other streams get the default
 * reader and a copy behind the header.
 */
function bodyReader(body: ReadableStream<Uint8Array>): DataFrameReader {
  let byob: ReadableStreamBYOBReader | undefined;
  try {
    byob = body.getReader({ mode: "byob" });
  } catch {
    // not a byte stream
  }
  if (byob === undefined) {
    const reader = body.getReader();
    return {
      async next() {
        for (;;) {
          const r = await reader.read();
          if (r.done) return null;
          if (r.value.length === 0) continue;
          return concatBytes(encodeFrameHeader(FrameType.DATA, r.value.length), r.value);
        }
      },
      written() {},
      cancel: (reason) => void reader.cancel(reason).catch(() => {}),
    };
  }
  const reader = byob;
  let buffer: ArrayBuffer | null = new ArrayBuffer(BODY_BUFFER_BYTES);
  let pending: ArrayBuffer | null = null;
  return {
    async next() {
      for (;;) {
        // A buffer still held by an unfinished write is never reused.
        const buf = buffer ?? new ArrayBuffer(BODY_BUFFER_BYTES);
        buffer = null;
        const r = await reader.read(
          new Uint8Array(buf, FRAME_HEADER_ROOM, BODY_BUFFER_BYTES - FRAME_HEADER_ROOM),
        );
        if (r.done || r.value === undefined) return null;
        const payload = r.value;
        if (payload.length === 0) {
          buffer = payload.buffer as ArrayBuffer;
          continue;
        }
        const header = encodeFrameHeader(FrameType.DATA, payload.length);
        const start = FRAME_HEADER_ROOM - header.length;
        const frame = new Uint8Array(payload.buffer, start, header.length + payload.length);
        frame.set(header, 0);
        pending = payload.buffer as ArrayBuffer;
        return frame;
      }
    },
    written() {
      buffer = pending;
      pending = null;
    },
    cancel: (reason) => void reader.cancel(reason).catch(() => {}),
  };
}

/** Thrown inside a request body stream when the body exceeds the configured limit. */
export class RequestBodyTooLarge extends Error {
  constructor() {
    super("request body exceeds the limit");
    this.name = "RequestBodyTooLarge";
  }
}

/** No next part of a request (its HEADERS, or more of its body) arrived in time: 408. */
export class RequestIdleTimeout extends Error {
  constructor(ms: number) {
    super(`no part of the request arrived within ${ms} ms`);
    this.name = "RequestIdleTimeout";
  }
}
