/**
 * One request and its response on an HTTP/1.1 connection to a backend
 * (`proxy/h1/`'s codec on a pooled socket): the head written with the body's
 * framing (Content-Length when the length is known and no trailers follow,
 * else chunked with the client's trailers after the last chunk), the body
 * pumped as the socket takes it while the response is read (read into one
 * buffer reused for every chunk, chunk framing written around it in place),
 * and the
 * parser's events turned into the {@link UpstreamResponse}: a small complete
 * body whole, a larger or unsized one as a stream read from the socket only
 * as its reader asks (backpressure is TCP's), trailers on the response. The
 * socket's bytes are views into the connection's reused read buffer: body
 * bytes are copied once, into the reader's buffer or the body's queue
 * (`byte_body.ts`), before the next read.
 *
 * The connection goes back to its pool reusable only when the response
 * ended cleanly, the backend let the connection persist, sent no byte after
 * the response, and the request was written whole; in every other case it
 * is closed (an HTTP/1.1 exchange cannot be cancelled otherwise).
 *
 * @module
 */

import { concatBytes } from "../../shared/bytes.ts";
import type { IdleWatch } from "../../shared/deadline.ts";
import { encodeChunk, encodeLastChunk, H1ResponseParser, serializeRequestHead } from "../h1/mod.ts";
import type { H1Event, H1ResponseHead, RequestBody } from "../h1/mod.ts";
import { ByteBody } from "./byte_body.ts";
import { CLOSE_REASON_OF_FAILURE, type UpstreamCloseReason } from "./connection_stats.ts";
import type { H1Connection, ReadResult } from "./h1_connection.ts";
import type { H1Pool, Lease } from "./h1_pool.ts";
import { type FramingRoom, REQUEST_READ_BYTES, RequestBodyReader } from "./request_body_reader.ts";
import {
  abortedError,
  type Trailers,
  UpstreamError,
  type UpstreamRequest,
  type UpstreamResponse,
} from "./transport.ts";

/** Bodies with a declared length up to this are collected and returned whole. */
export const H1_WHOLE_BODY_LIMIT = 64 * 1024;
/** Methods whose request, without a body, still says so with `content-length: 0`. */
const EMPTY_BODY_SAYS_LENGTH = new Set(["POST", "PUT", "PATCH"]);
/** Hex digits of the largest chunk a streamed body is sent in. */
const CHUNK_SIZE_DIGITS = REQUEST_READ_BYTES.toString(16).length;
/** Room around a chunk for its size line (hex digits, CRLF) and its closing CRLF. */
const CHUNK_ROOM: FramingRoom = { head: CHUNK_SIZE_DIGITS + 2, tail: 2 };
const HEX_DIGITS = new TextEncoder().encode("0123456789abcdef");

/** How the request body goes out, with the trailers of a whole body (asked before it is sent). */
interface Plan {
  readonly framing: RequestBody;
  readonly trailers: Trailers | null;
}

/** One exchange on the HTTP/1.1 transport; see the module docs. */
export class H1Exchange {
  readonly req: UpstreamRequest;
  /** request_timeout_ms: waiting on the backend for the body to be taken or for the head. */
  watch: IdleWatch | null = null;
  /** Listens for the request's signal. */
  onAbort: (() => void) | null = null;
  readonly #pool: H1Pool;
  readonly #resolve: (res: UpstreamResponse) => void;
  readonly #reject: (err: UpstreamError) => void;
  readonly #done: (x: H1Exchange) => void;
  /** Aborted when the exchange fails: stops waiting for a connection. */
  readonly #stop = new AbortController();
  #state: "waiting" | "open" | "done" = "waiting";
  #lease: Lease | null = null;
  #parser: H1ResponseParser;
  #settled = false;
  #response: UpstreamResponse | null = null;
  #head: H1ResponseHead | null = null;
  #collected: Uint8Array | null = null;
  #collectedLength = 0;
  #body: ByteBody | null = null;
  #trailers: Array<[string, string]> | undefined = undefined;
  #responseEnded = false;
  #requestWritten = false;
  #writeFailed = false;
  #reader: RequestBodyReader | null = null;

  constructor(
    req: UpstreamRequest,
    pool: H1Pool,
    resolve: (res: UpstreamResponse) => void,
    reject: (err: UpstreamError) => void,
    done: (x: H1Exchange) => void,
  ) {
    this.req = req;
    this.#pool = pool;
    this.#resolve = resolve;
    this.#reject = reject;
    this.#done = done;
    this.#parser = new H1ResponseParser(req.method);
  }

  /** Takes a connection, writes the request and reads the response. */
  async start(connectTimeoutMs: number): Promise<void> {
    let lease: Lease;
    try {
      lease = await this.#pool.acquire(connectTimeoutMs, this.#stop.signal);
    } catch (err) {
      if (this.#state === "done") return;
      return this.fail(
        err instanceof UpstreamError ? err : new UpstreamError("connect", String(err), {
          cause: err,
        }),
      );
    }
    if (this.#state === "done") return this.#pool.release(lease.conn, true);
    this.#state = "open";
    this.#lease = lease;
    const plan = planOf(this.req);
    const head = serializeRequestHead(headOf(this.req), plan.framing);
    if (typeof head === "string") {
      return this.fail(new UpstreamError("local", `request cannot be sent over HTTP/1.1: ${head}`));
    }
    this.#send(lease.conn, head, plan).catch((err) => this.#sendFailed(err));
    await this.#receive(lease.conn);
  }

  // ---- request side ----

  async #send(conn: H1Connection, head: Uint8Array, plan: Plan): Promise<void> {
    const body = this.req.body;
    const chunked = plan.framing.kind === "chunked";
    if (!(body instanceof ReadableStream)) {
      const parts = [head];
      if (body !== null && body.length > 0) parts.push(chunked ? encodeChunk(body) : body);
      if (chunked) parts.push(this.#lastChunk(plan.trailers));
      await this.#write(conn, parts.length === 1 ? head : concatBytes(...parts));
    } else {
      await this.#write(conn, head);
      await this.#sendStream(conn, body, plan.framing);
    }
    this.#requestWritten = true;
    this.#maybeRelease();
  }

  /**
   * Sends a streamed body, read into one buffer reused for every chunk
   * (`request_body_reader.ts`), chunked framing written around each chunk
   * in place: nothing is allocated per chunk. The next chunk is read only
   * once the socket took the previous one (`#write` resolved), since it is
   * read into the same buffer.
   */
  async #sendStream(
    conn: H1Connection,
    body: ReadableStream<Uint8Array>,
    framing: RequestBody,
  ): Promise<void> {
    const chunked = framing.kind === "chunked";
    const reader = new RequestBodyReader(body, chunked ? CHUNK_ROOM : undefined);
    this.#reader = reader;
    let sent = 0;
    for (;;) {
      // Waiting on the client, not the backend: its own idle timeout bounds this.
      if (!this.#responseEnded) this.watch?.pause();
      let data: Uint8Array | null;
      try {
        data = await reader.next();
      } catch (err) {
        throw new UpstreamError("aborted", "client request body failed", { cause: err });
      }
      if (this.#state !== "open" || this.#responseEnded) return;
      this.watch?.touch();
      if (data === null) break;
      sent += data.length;
      if (framing.kind === "length" && sent > framing.length) {
        throw new UpstreamError("local", `request body longer than its content-length`);
      }
      await this.#write(conn, chunked ? chunkInPlace(data) : data);
    }
    if (framing.kind === "length" && sent !== framing.length) {
      throw new UpstreamError("local", `request body of ${sent} bytes, content-length said more`);
    }
    if (framing.kind === "chunked") {
      await this.#write(conn, this.#lastChunk(this.req.trailers?.() ?? null));
    }
  }

  #lastChunk(trailers: Trailers | null): Uint8Array {
    const last = encodeLastChunk((trailers ?? []) as Array<[string, string]>);
    if (typeof last === "string") throw new UpstreamError("local", last);
    return last;
  }

  async #write(conn: H1Connection, bytes: Uint8Array): Promise<void> {
    if (this.#state !== "open" || this.#writeFailed) return;
    try {
      await conn.write(bytes);
    } catch (err) {
      // The backend stopped reading (closed, reset): what it answers, if
      // anything, is still read; the connection is not reused.
      this.#writeFailed = true;
      throw err;
    }
    this.watch?.touch();
  }

  #sendFailed(err: unknown): void {
    if (this.#state !== "open") return;
    if (err instanceof UpstreamError) return this.fail(err);
    // A write failed: the read side tells what the backend did.
  }

  // ---- response side ----

  /** Reads until the response is handed over (or, for a streamed body, until its reader asks). */
  async #receive(conn: H1Connection): Promise<void> {
    while (this.#state === "open" && !(this.#settled && this.#body !== null)) {
      if (this.#responseEnded) return;
      await this.#readOnce(conn);
    }
  }

  /** One read of the socket, through the parser. */
  async #readOnce(conn: H1Connection): Promise<void> {
    let r: ReadResult;
    try {
      r = await conn.read();
    } catch (err) {
      if (this.#state !== "open") return;
      return this.#broken(`connection failed: ${(err as Error).message}`, err);
    }
    if (this.#state !== "open") return;
    if (r.done) return this.#onEvents(this.#parser.eof(), true);
    this.watch?.touch();
    this.#onEvents(this.#parser.push(r.value), false);
  }

  #onEvents(events: H1Event[], eof: boolean): void {
    for (const ev of events) {
      if (this.#state !== "open") return;
      this.#onEvent(ev, eof);
    }
    if (this.#responseEnded) this.#responseComplete();
  }

  #onEvent(ev: H1Event, eof: boolean): void {
    switch (ev.type) {
      case "informational":
        return;
      case "upgrade":
        return this.fail(
          new UpstreamError("protocol", `backend switched protocols (${ev.status}) unasked`),
        );
      case "head":
        return this.#onHead(ev.head);
      case "data":
        return this.#onData(ev.data);
      case "trailers":
        this.#trailers = ev.fields as Array<[string, string]>;
        return;
      case "end":
        this.#responseEnded = true;
        return;
      case "excess":
        return;
      case "error":
        if (eof && this.#parser.received === 0) return this.#closedUnanswered();
        return this.fail(
          new UpstreamError(ev.kind, `backend sent a malformed response: ${ev.reason}`),
        );
    }
  }

  /**
   * The backend closed before any byte of a response: it may have read the
   * request (or part of it), it may not; nothing proves either (`reset`:
   * sent again at most once, idempotent methods only).
   */
  #closedUnanswered(): void {
    const how = this.#lease!.reused
      ? "a reused connection (its keep-alive may have ended)"
      : "a new connection";
    this.fail(
      new UpstreamError("reset", `backend closed ${how} before any response byte`),
    );
  }

  #broken(what: string, cause: unknown): void {
    if (this.#parser.received === 0) return this.#closedUnanswered();
    this.fail(new UpstreamError("reset", `backend ${what}`, { cause }));
  }

  #onHead(head: H1ResponseHead): void {
    this.#head = head;
    if (head.framing === "none" || (head.framing === "length" && head.contentLength === 0)) {
      return this.#settle(null);
    }
    if (head.framing === "length" && head.contentLength <= H1_WHOLE_BODY_LIMIT) {
      this.#collected = new Uint8Array(head.contentLength);
      return;
    }
    // Streamed: no request timeout once the body flows (the client's idle timeout bounds it).
    this.watch?.cancel();
    this.watch = null;
    const conn = this.#lease!.conn;
    const body: ByteBody = new ByteBody({
      pull: () => this.#pullBody(conn, body),
      cancel: () =>
        this.fail(new UpstreamError("aborted", "response body cancelled by its reader")),
    });
    this.#body = body;
    this.#settle(body.stream);
  }

  /** The body's reader waits and nothing is queued: read until it got bytes or the body ended. */
  async #pullBody(conn: H1Connection, body: ByteBody): Promise<void> {
    while (this.#state === "open" && this.#body === body && body.waiting) {
      await this.#readOnce(conn);
    }
  }

  /** Body bytes: a view into the connection's read buffer, copied before the next read. */
  #onData(data: Uint8Array): void {
    if (this.#collected !== null) {
      this.#collected.set(data, this.#collectedLength);
      this.#collectedLength += data.length;
      return;
    }
    this.#body?.push(data);
  }

  /** The response ended: hand over what waits for the end, and give the connection back. */
  #responseComplete(): void {
    if (this.#state !== "open") return;
    if (this.#collected !== null) {
      const body = this.#collected.subarray(0, this.#collectedLength);
      this.#collected = null;
      this.#settle(body);
    } else if (this.#body !== null) {
      if (this.#trailers !== undefined) this.#response!.trailers = this.#trailers;
      const body = this.#body;
      this.#body = null;
      body.end();
    } else if (this.#response !== null && this.#trailers !== undefined) {
      this.#response.trailers = this.#trailers;
    }
    if (!this.#requestWritten) {
      // Answered before the request was all sent: the answer stands, the
      // connection (with a request half written) is not reused.
      this.#reader?.cancel().catch(() => {});
      return this.#finish(false, "cancelled");
    }
    this.#maybeRelease();
  }

  #maybeRelease(): void {
    if (this.#state !== "open" || !this.#responseEnded || !this.#requestWritten) return;
    const p = this.#parser;
    if (p.reusable && !this.#writeFailed) return this.#finish(true);
    // Bytes past the response break the protocol; else the backend would not keep it.
    this.#finish(
      false,
      this.#writeFailed ? "error" : p.excess > 0 ? "protocol_error" : "peer_closed",
    );
  }

  #settle(body: Uint8Array | ReadableStream<Uint8Array> | null): void {
    if (this.#settled) return;
    this.#settled = true;
    if (!(body instanceof ReadableStream)) {
      this.watch?.cancel();
      this.watch = null;
    }
    const head = this.#head!;
    const res: UpstreamResponse = {
      status: head.status,
      headers: head.fields as Array<[string, string]>,
      body,
    };
    if (this.#trailers !== undefined) res.trailers = this.#trailers;
    this.#response = res;
    this.#resolve(res);
  }

  // ---- ending ----

  /** The exchange is over: the connection goes back to the pool, kept only when `reusable`. */
  #finish(reusable: boolean, why: UpstreamCloseReason = "cancelled"): void {
    if (this.#state === "done") return;
    this.#state = "done";
    this.watch?.cancel();
    this.watch = null;
    if (this.onAbort) this.req.signal?.removeEventListener("abort", this.onAbort);
    this.onAbort = null;
    const lease = this.#lease;
    this.#lease = null;
    // Still waiting for a connection: stop waiting.
    if (lease === null) this.#stop.abort(new UpstreamError("aborted", "exchange over"));
    if (lease !== null) this.#pool.release(lease.conn, reusable, why);
    this.#done(this);
  }

  /**
   * Fails the exchange: before its head the promise rejects, after it the
   * body stream errors; the connection is closed (an HTTP/1.1 request
   * cannot be cancelled otherwise).
   */
  fail(err: UpstreamError): void {
    if (this.#state === "done") return;
    const body = this.#body;
    this.#body = null;
    this.#collected = null;
    this.#reader?.cancel().catch(() => {});
    this.#finish(false, CLOSE_REASON_OF_FAILURE[err.kind]);
    if (!this.#settled) {
      this.#settled = true;
      this.#reject(err);
    } else if (body !== null) {
      body.error(err);
    }
  }

  /** Fails the exchange because the request's signal aborted. */
  abort(): void {
    this.fail(abortedError(this.req.signal!));
  }
}

/**
 * `data` as one chunk of the chunked coding (RFC 9112 §7.1: size in hex,
 * CRLF, the bytes, CRLF), its framing written in place in the
 * {@link CHUNK_ROOM} around it: a view of its buffer, nothing copied.
 */
function chunkInPlace(data: Uint8Array): Uint8Array {
  const n = data.length;
  let digits = 1;
  while (digits < 8 && n >>> (4 * digits) > 0) digits++;
  const out = new Uint8Array(data.buffer, data.byteOffset - digits - 2, digits + n + 4);
  for (let i = digits - 1, v = n; i >= 0; i--, v >>>= 4) out[i] = HEX_DIGITS[v & 0xf];
  out[digits] = 0x0d;
  out[digits + 1] = 0x0a;
  out[digits + 2 + n] = 0x0d;
  out[digits + 3 + n] = 0x0a;
  return out;
}

/** The request's framing and, for a whole body, its trailers (asked now: they decide the framing). */
function planOf(req: UpstreamRequest): Plan {
  const body = req.body;
  if (body === null) {
    const framing: RequestBody = EMPTY_BODY_SAYS_LENGTH.has(req.method.toUpperCase())
      ? { kind: "length", length: 0 }
      : { kind: "none" };
    return { framing, trailers: null };
  }
  if (body instanceof Uint8Array) {
    const trailers = req.trailers?.() ?? null;
    if (trailers !== null && trailers.length > 0) return { framing: { kind: "chunked" }, trailers };
    return { framing: { kind: "length", length: body.length }, trailers: null };
  }
  const declared = req.trailers === undefined ? declaredLength(req.headers) : -1;
  return {
    framing: declared >= 0 ? { kind: "length", length: declared } : { kind: "chunked" },
    trailers: null,
  };
}

/** The request's single, valid Content-Length, or -1. */
function declaredLength(headers: UpstreamRequest["headers"]): number {
  let found = -1;
  for (const [name, value] of headers) {
    if (name !== "content-length") continue;
    if (found >= 0 || !/^[0-9]{1,15}$/.test(value)) return -1;
    found = Number(value);
  }
  return found;
}

/** The request head to serialize: the backend's address as Host when the request names none. */
function headOf(req: UpstreamRequest) {
  const named = req.authority !== undefined || req.headers.some(([n]) => n === "host");
  return {
    method: req.method,
    authority: named ? req.authority : req.address,
    path: req.path,
    fields: req.headers as Array<[string, string]>,
  };
}
