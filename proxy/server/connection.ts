/**
 * One HTTP/3 connection (RFC 9114) on a {@link QuicConnection}: our control
 * and QPACK streams, the peer's unidirectional streams, the request streams
 * (each served by `request_stream.ts`), GOAWAY, and connection errors (§8).
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import {
  BLOCKED,
  concatBytes,
  ControlStreamParser,
  decodeStreamType,
  encodeGoaway,
  encodeSettingsFrame,
  H3Code,
  H3Error,
  NEED_MORE,
  QpackDecoder,
  QpackEncoder,
  SettingId,
  StreamType,
  type UniStreamKind,
  UniStreamRegistry,
} from "../h3/mod.ts";
import { settledWithin } from "../../shared/deadline.ts";
import type { BidiStream, PeerAddr, QuicConnection, ReceiveStream } from "../quic/transport.ts";
import { chunkReader } from "./body_io.ts";
import { RequestEnd, type RequestEndKind } from "./request_end.ts";
import { serveRequest, type StreamContext } from "./request_stream.ts";
import { StreamShare } from "./stream_share.ts";
import type { ConnectionOptions } from "./types.ts";

export type { ConnectionHooks, ConnectionOptions } from "./types.ts";
export { errorResponse } from "./error_response.ts";
export { RequestBodyTooLarge, RequestIdleTimeout } from "./body_io.ts";

const log = getLogger(["proxy", "server"]);

/** How long a drained connection waits for the peer to close before closing it (ms). */
const CLOSE_LINGER_MS = 1000;

interface BlockedWaiter {
  resolve(fields: Array<[string, string]>): void;
  reject(err: unknown): void;
}

/**
 * Serves HTTP/3 on one QUIC connection until it closes.
 *
 * @example
 * ```ts
 * import type { QuicConnection } from "../quic/mod.ts";
 * import type { RequestHandler } from "./types.ts";
 * declare const conn: QuicConnection;
 * declare const handler: RequestHandler;
 *
 * const h3 = new H3Connection(conn, { handler, maxFieldSectionSize: 65536,
 *   qpackMaxTableCapacity: 4096, qpackBlockedStreams: 16, maxRequestBodyBytes: 2 ** 31 });
 * await h3.serve();
 * ```
 */
export class H3Connection implements StreamContext {
  readonly #conn: QuicConnection;
  /** Limits and the application. */
  readonly opts: ConnectionOptions;
  /** The peer's address. */
  readonly remote: PeerAddr;
  readonly #qdec: QpackDecoder;
  readonly #qenc = new QpackEncoder();
  readonly #blocked = new Map<number, BlockedWaiter>();
  /** Requests being served, with the abort that ends each when the connection closes. */
  readonly #inflight = new Map<Promise<void>, AbortController>();
  readonly #peerStreams = new UniStreamRegistry("client");
  /** This connection's share of each pool's backend streams. */
  readonly #share: StreamShare;
  // Our critical streams: keep the writers for the connection's whole life
  // (a collected QuicSendStream is closed, docs/architecture.md §4).
  #control?: WritableStreamDefaultWriter<Uint8Array>;
  #decoderStream?: WritableStreamDefaultWriter<Uint8Array>;
  #decoderWrite: Promise<void> = Promise.resolve();
  #maxStreamId = -1;
  #goawayId: number | null = null;
  #closed = false;

  /** Prepares serving `conn`; nothing happens until {@link H3Connection.serve}. */
  constructor(conn: QuicConnection, opts: ConnectionOptions) {
    this.#conn = conn;
    this.opts = opts;
    this.remote = conn.remoteAddr;
    this.#share = new StreamShare(opts.maxBackendStreamsPerConnection ?? Infinity);
    this.#qdec = new QpackDecoder({
      maxTableCapacity: opts.qpackMaxTableCapacity,
      maxBlockedStreams: opts.qpackBlockedStreams,
      maxFieldSectionSize: opts.maxFieldSectionSize,
      onDynamicSection: opts.hooks?.qpackDynamicSection,
    });
  }

  /** Whether the connection has closed. */
  get closed(): boolean {
    return this.#closed;
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
    // Requests are accepted while the own streams open: a client's first
    // request need not wait for them. Decoder-stream instructions queue
    // behind the opening (`#flushDecoderStream`).
    const opening = this.#openOwnStreams().catch((err) =>
      this.close(H3Code.INTERNAL_ERROR, `cannot open control stream: ${err}`)
    );
    this.#decoderWrite = opening;
    await Promise.all([opening, this.#acceptUni(), this.#acceptBidi()]);
    while (this.#inflight.size > 0) await Promise.allSettled([...this.#inflight.keys()]);
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
    while (this.#inflight.size > 0) await Promise.allSettled([...this.#inflight.keys()]);
    // Closing at once would discard response bytes still in flight (QUIC drops
    // unsent stream data on CONNECTION_CLOSE): give the peer a moment to
    // receive them and close by itself.
    await settledWithin(this.#conn.closed, CLOSE_LINGER_MS);
    this.close(H3Code.NO_ERROR, "shutting down");
  }

  /**
   * Closes the connection at once with an HTTP/3 error code; every request
   * is aborted, ending as `end` says (`shutdown` when the proxy's drain is
   * over; see `request_end.ts`).
   */
  close(code: number, reason: string, end: RequestEndKind = "connection_closed"): void {
    if (this.#closed) return;
    this.#onClosed(code, reason, end);
    try {
      this.#conn.close({ closeCode: code, reason });
    } catch {
      // already closed
    }
  }

  #onClosed(code: number, reason: string, end: RequestEndKind = "connection_closed"): void {
    if (this.#closed) return;
    this.#closed = true;
    log.trace("connection closed: {code} {reason}", { code, reason });
    const gone = new RequestEnd(end, { cause: `connection closed: ${reason}` });
    this.#share.close();
    for (const abort of this.#inflight.values()) abort.abort(gone);
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
      [SettingId.QPACK_MAX_TABLE_CAPACITY, this.opts.qpackMaxTableCapacity],
      [SettingId.QPACK_BLOCKED_STREAMS, this.opts.qpackBlockedStreams],
      [SettingId.MAX_FIELD_SECTION_SIZE, this.opts.maxFieldSectionSize],
      // Extended CONNECT (RFC 9220 §3): WebSockets over HTTP/3.
      [SettingId.ENABLE_CONNECT_PROTOCOL, 1],
    ]);
    const control = (await this.#conn.createUnidirectionalStream()).getWriter();
    this.#control = control;
    const writes = [
      control.write(concatBytes(Uint8Array.of(StreamType.CONTROL), encodeSettingsFrame(settings))),
    ];
    // No QPACK encoder stream: this encoder never inserts into the dynamic
    // table; and no decoder stream without a table of our own to acknowledge
    // (an endpoint may skip either then, RFC 9204 §4.2).
    if (this.opts.qpackMaxTableCapacity > 0) {
      const decoder = (await this.#conn.createUnidirectionalStream()).getWriter();
      this.#decoderStream = decoder;
      writes.push(decoder.write(Uint8Array.of(StreamType.QPACK_DECODER)));
    }
    await Promise.all(writes);
  }

  /** Writes pending QPACK decoder-stream instructions (acks, increments, cancels). */
  #flushDecoderStream(): void {
    const bytes = this.#qdec.takeDecoderStreamBytes();
    if (bytes === null || bytes.length === 0) return;
    this.#decoderWrite = this.#decoderWrite
      .then(() => this.#decoderStream?.write(bytes))
      .catch(() => {});
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
    // Our own small buffers: the runtime's default reader allocates 64 KiB
    // per read, and a critical stream's last read waits for the connection's end.
    const reader = chunkReader(stream);
    let buf: Uint8Array = new Uint8Array(0);
    let kind: UniStreamKind | undefined;
    let rest: Uint8Array = buf;
    while (kind === undefined) {
      const r = await reader.read().catch(() => ({ done: true, value: undefined }));
      if (r.done || !r.value) return; // ended before its type: ignore
      buf = buf.length === 0 ? r.value : concatBytes(buf, r.value);
      const t = decodeStreamType(buf);
      if (t === NEED_MORE) continue;
      // Throws on a push stream or a second critical stream (RFC 9114 §6.2).
      kind = this.#peerStreams.open(t.type);
      rest = buf.subarray(t.length);
    }
    if (kind === "unknown" || kind === "push") {
      // Unknown stream types are ignored (RFC 9114 §6.2): drain, never cancel.
      while (!(await reader.read().catch(() => ({ done: true }))).done) { /* discard */ }
      return;
    }
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
          if (ev.type === "cancel_push") {
            // This server never sends PUSH_PROMISE: no push ID was ever
            // mentioned, so none can be cancelled (RFC 9114 §7.2.3).
            throw new H3Error(
              H3Code.ID_ERROR,
              "connection",
              `CANCEL_PUSH ${ev.id} for a push never promised`,
            );
          }
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
        this.#startRequest(value);
      }
    } catch {
      // connection closed
    }
  }

  #startRequest(stream: BidiStream): void {
    const id = Number(stream.readable.id);
    if (this.#goawayId !== null && id >= this.#goawayId) {
      // RFC 9114 §5.2: refused after GOAWAY; the client may retry it.
      stream.readable.cancel().catch(() => {});
      stream.writable.abort().catch(() => {});
      return;
    }
    if (id > this.#maxStreamId) this.#maxStreamId = id;
    const hooks = this.opts.hooks;
    hooks?.streamOpened?.();
    const abort = new AbortController();
    const p: Promise<void> = serveRequest(stream, id, this, abort)
      .catch((err) => this.#fail(err))
      .finally(() => {
        this.#inflight.delete(p);
        this.#share.release(id);
        hooks?.streamClosed?.();
      });
    this.#inflight.set(p, abort);
  }

  /** {@link StreamContext.decodeHeaders}: the fields, or a promise while QPACK blocks the section. */
  decodeHeaders(
    streamId: number,
    block: Uint8Array,
  ): Array<[string, string]> | Promise<Array<[string, string]>> {
    const fields = this.#qdec.decodeSection(streamId, block);
    if (fields !== BLOCKED) {
      this.#flushDecoderStream();
      return fields;
    }
    return new Promise<Array<[string, string]>>((resolve, reject) => {
      // A section that blocks after the connection closed would wait forever:
      // #onClosed has already rejected the waiters it knew of.
      if (this.#closed) {
        reject(new H3Error(H3Code.REQUEST_CANCELLED, "stream", "connection closed"));
        return;
      }
      this.#blocked.set(streamId, { resolve, reject });
    });
  }

  /** {@link StreamContext.cancelBlocked}: a stream that is done no longer waits for its section. */
  cancelBlocked(streamId: number): void {
    if (!this.#blocked.has(streamId)) return;
    this.#blocked.delete(streamId);
    this.#qdec.cancelStream(streamId);
    this.#flushDecoderStream();
  }

  /**
   * {@link StreamContext.sectionSkipped}: the peer's encoder may count the
   * skipped section's references (and the stream as blocked) until told the
   * stream is abandoned, so a Stream Cancellation is sent (RFC 9204 §2.2.2.2).
   */
  sectionSkipped(streamId: number): void {
    this.#qdec.cancelStream(streamId);
    this.#flushDecoderStream();
  }

  /**
   * {@link StreamContext.claimBackendStream}: at most
   * `maxBackendStreamsPerConnection` requests of this connection in flight
   * to one pool, so that one client cannot take all of a backend's streams.
   */
  claimBackendStream(
    streamId: number,
    key: string,
    waitMs: number,
    signal: AbortSignal,
  ): boolean | Promise<boolean> {
    return this.#share.claim(streamId, key, waitMs, signal);
  }

  /** {@link StreamContext.encodeSection}. */
  encodeSection(fields: Array<[string, string]>): Uint8Array {
    return this.#qenc.encodeSection(fields);
  }
}
