/**
 * A WebSocket to an HTTP/1.1 backend (RFC 6455 §4.1), on a connection of
 * its own (never taken from nor given back to the keep-alive pool: a
 * WebSocket would hold a pooled place for its whole life, and the socket
 * carries another protocol once switched):
 *
 * - the request is a GET with `Connection: upgrade`, `Upgrade: websocket`
 *   and the handshake's `Sec-WebSocket-Key`: the request's own (an
 *   HTTP/1.1 client's, passed through) or one made here; its other fields
 *   go out as given;
 * - a `101` whose `Upgrade`, `Connection` and `Sec-WebSocket-Accept`
 *   complete the handshake opens the tunnel: the answer reads as `200`
 *   (without `Sec-WebSocket-Accept`), its body is the backend's side (the
 *   bytes after the 101 first), and only then is the request body, the
 *   client's side, read and written; when the client's side ends the socket
 *   is half-closed, and it is closed once both sides ended, or at once when
 *   either fails or the reader cancels;
 * - a 101 that does not complete the handshake, or a 2xx instead of a 101,
 *   is `invalid_response` (the backend answered, wrongly: nothing of the
 *   client's is sent);
 * - any other final answer (403, 404, 426, …) is a refusal handed over as a
 *   response, its body streamed; the connection is closed after it.
 *
 * The bytes before the answer (an eager client's) are never written: a
 * backend that refused could read them as a second request.
 *
 * @module
 */

import { type IdleWatch, idleWatch } from "../../shared/deadline.ts";
import { H1ResponseParser, serializeRequestHead } from "../h1/mod.ts";
import type { H1Event, H1ResponseHead } from "../h1/mod.ts";
import {
  H1_HANDSHAKE_FIELDS,
  isWebSocketKey,
  newWebSocketKey,
  type RequestHead,
  switchError,
  WEBSOCKET_PROTOCOL,
} from "../http/mod.ts";
import type { BackendTls, Connector } from "./backend_connect.ts";
import {
  abortedError,
  UpstreamError,
  type UpstreamRequest,
  type UpstreamResponse,
} from "./transport.ts";

/** What opening a WebSocket to an HTTP/1.1 backend needs. */
export interface H1WebSocketDeps {
  /** Opens the byte stream (ALPN `http/1.1` over TLS). */
  readonly connect: Connector;
  /** The backend's TLS, if any. */
  readonly tls: BackendTls | undefined;
  /** Deadline of the connection (TCP connect and TLS handshake), ms. */
  readonly connectTimeoutMs: number;
  /** Called once the socket is closed (the transport forgets it). */
  readonly closed?: (ws: H1WebSocket) => void;
}

type ReadResult = ReadableStreamReadResult<Uint8Array>;

/**
 * The HTTP/1.1 head of a WebSocket upgrade (serialized with
 * `serializeRequestHead(head, {kind: "none"}, "websocket")`) and the
 * `Sec-WebSocket-Key` it carries: the request's own valid one, else a new one.
 */
export function h1WebSocketHead(req: UpstreamRequest): { head: RequestHead; key: string } {
  const given = req.headers.find(([n]) => n === "sec-websocket-key")?.[1];
  const key = given !== undefined && isWebSocketKey(given) ? given : newWebSocketKey();
  const fields: Array<[string, string]> = [];
  for (const [name, value] of req.headers) {
    if (!H1_HANDSHAKE_FIELDS.has(name)) fields.push([name, value]);
  }
  fields.push(["sec-websocket-key", key]);
  const authority = req.authority ?? req.headers.find(([n]) => n === "host")?.[1] ?? req.address;
  return { head: { method: "GET", authority, path: req.path, fields }, key };
}

/** One WebSocket to an HTTP/1.1 backend; see the module docs. */
export class H1WebSocket {
  readonly #req: UpstreamRequest;
  readonly #deps: H1WebSocketDeps;
  readonly #answer = Promise.withResolvers<UpstreamResponse>();
  readonly #parser = new H1ResponseParser("GET");
  #conn: Deno.Conn | null = null;
  #reader: ReadableStreamDefaultReader<Uint8Array> | null = null;
  #writer: WritableStreamDefaultWriter<Uint8Array> | null = null;
  #watch: IdleWatch | null = null;
  #settled = false;
  #closed = false;
  /** The sides still open once the tunnel is: the backend's and the client's. */
  #open = 0;
  #onAbort: (() => void) | null = null;
  /** The reader of the client's side, once the tunnel is open. */
  #clientReader: ReadableStreamDefaultReader<Uint8Array> | null = null;

  constructor(req: UpstreamRequest, deps: H1WebSocketDeps) {
    this.#req = req;
    this.#deps = deps;
  }

  /** Opens the connection and sends the handshake; resolves with the answer (see the module docs). */
  open(): Promise<UpstreamResponse> {
    const signal = this.#req.signal;
    if (signal?.aborted) return Promise.reject(abortedError(signal));
    this.#onAbort = () => this.#fail(abortedError(signal!));
    signal?.addEventListener("abort", this.#onAbort, { once: true });
    this.#watch = idleWatch(this.#req.timeoutMs, () =>
      this.#fail(
        new UpstreamError("timeout", `backend did not answer within ${this.#req.timeoutMs} ms`),
      ));
    this.#handshake().catch((err) =>
      this.#fail(new UpstreamError("reset", `backend ${this.#req.address}: ${err}`, { cause: err }))
    );
    return this.#answer.promise;
  }

  /** Closes the socket (idempotent): a tunnel's streams end, a pending answer fails. */
  close(err: UpstreamError = new UpstreamError("aborted", "upstream transport closed")): void {
    this.#fail(err);
  }

  async #handshake(): Promise<void> {
    const { connect, tls, connectTimeoutMs } = this.#deps;
    const req = this.#req;
    const deadline = AbortSignal.timeout(connectTimeoutMs);
    let conn: Deno.Conn;
    try {
      conn = await connect(req.address, tls, deadline);
    } catch (err) {
      const why = deadline.aborted ? `no connection within ${connectTimeoutMs} ms` : String(err);
      return this.#fail(
        err instanceof UpstreamError
          ? err
          : new UpstreamError("connect", `backend ${req.address}: ${why}`, { cause: err }),
      );
    }
    if (this.#closed) return closeConn(conn);
    this.#conn = conn;
    this.#reader = conn.readable.getReader();
    this.#writer = conn.writable.getWriter();
    const { head, key } = h1WebSocketHead(req);
    const bytes = serializeRequestHead(head, { kind: "none" }, WEBSOCKET_PROTOCOL);
    if (typeof bytes === "string") {
      return this.#fail(
        new UpstreamError("local", `request cannot be sent over HTTP/1.1: ${bytes}`),
      );
    }
    await this.#writer.write(bytes);
    while (!this.#settled && !this.#closed) await this.#readAnswer(key);
  }

  /** One read of the answer, through the parser. */
  async #readAnswer(key: string): Promise<void> {
    const r = await this.#read();
    if (r === null) return;
    this.#watch?.touch();
    const events = r.done ? this.#parser.eof() : this.#parser.push(r.value);
    for (let i = 0; i < events.length; i++) {
      if (this.#settled || this.#closed) return;
      const ev = events[i];
      if (ev.type === "head" && (ev.head.status < 200 || ev.head.status > 299)) {
        return this.#refusal(ev.head, events.slice(i + 1));
      }
      await this.#onAnswer(ev, key, r.done);
    }
  }

  async #onAnswer(ev: H1Event, key: string, eof: boolean): Promise<void> {
    switch (ev.type) {
      case "upgrade": {
        const accept = ev.fields.find(([n]) => n === "sec-websocket-accept")?.[1];
        const why = ev.status === 101
          ? await switchError(key, ev.upgrade, ev.connection, accept)
          : `${ev.status} to a GET`;
        if (why !== null) return this.#invalid(`sent an invalid WebSocket handshake: ${why}`);
        return this.#tunnel(ev.fields, ev.rest);
      }
      case "head":
        return this.#invalid(`answered a WebSocket upgrade with ${ev.head.status}, not 101`);
      case "error":
        if (eof && this.#parser.received === 0) {
          return this.#fail(
            new UpstreamError("reset", "backend closed a new connection before any response byte"),
          );
        }
        return this.#fail(
          new UpstreamError(ev.kind, `backend sent a malformed response: ${ev.reason}`),
        );
      default:
        return; // 1xx: the final answer follows
    }
  }

  #invalid(why: string): void {
    this.#fail(new UpstreamError("invalid_response", `backend ${why}`));
  }

  /** The switch is complete: the backend's side streams, the client's is pumped. */
  #tunnel(fields: ReadonlyArray<readonly [string, string]>, rest: Uint8Array): void {
    this.#stopWaiting();
    this.#open = 2;
    const first = rest.length > 0 ? rest.slice() : null;
    const body = new ReadableStream<Uint8Array>({
      start: (c) => {
        if (first !== null) c.enqueue(first);
      },
      pull: (c) => this.#pullTunnel(c),
      cancel: () => this.#fail(new UpstreamError("aborted", "tunnel closed by its reader")),
    }, { highWaterMark: 0 });
    this.#settle({
      status: 200,
      headers: fields.filter(([n]) => n !== "sec-websocket-accept") as Array<[string, string]>,
      body,
    });
    this.#pumpClient().catch(() => this.#fail(new UpstreamError("aborted", "client side failed")));
  }

  async #pullTunnel(c: ReadableStreamDefaultController<Uint8Array>): Promise<void> {
    const r = await this.#read();
    if (r === null) return c.error(new UpstreamError("reset", "backend connection failed"));
    if (!r.done) return c.enqueue(r.value);
    c.close();
    this.#sideEnded();
  }

  /** Writes the client's side as it comes; its end half-closes the socket. */
  async #pumpClient(): Promise<void> {
    const body = this.#req.body;
    if (body instanceof ReadableStream) {
      const reader = body.getReader();
      this.#clientReader = reader;
      for (;;) {
        const r = await reader.read();
        if (this.#closed) return void reader.cancel().catch(() => {});
        if (r.done) break;
        await this.#writer!.write(r.value);
      }
    } else if (body !== null && body.length > 0) {
      await this.#writer!.write(body);
    }
    if (this.#closed) return;
    await (this.#conn as Deno.TcpConn).closeWrite();
    this.#sideEnded();
  }

  /** One side of the tunnel ended cleanly; the socket closes once both have. */
  #sideEnded(): void {
    if (--this.#open === 0) this.#close();
  }

  /**
   * A refusal: its head and body are the answer (`after`: the events that
   * came with the head); the connection closes after it.
   */
  #refusal(head: H1ResponseHead, after: H1Event[]): void {
    this.#stopWaiting();
    if (head.framing === "none" || (head.framing === "length" && head.contentLength === 0)) {
      this.#settle({ status: head.status, headers: head.fields, body: null });
      return this.#close();
    }
    const body = new ReadableStream<Uint8Array>({
      start: (c) => void this.#refusalEvents(c, after),
      pull: (c) => this.#pullRefusal(c),
      cancel: () => this.#close(),
    }, { highWaterMark: 0 });
    this.#settle({ status: head.status, headers: head.fields, body });
  }

  async #pullRefusal(c: ReadableStreamDefaultController<Uint8Array>): Promise<void> {
    while (!this.#closed) {
      const r = await this.#read();
      if (r === null) return c.error(new UpstreamError("reset", "backend connection failed"));
      if (this.#refusalEvents(c, r.done ? this.#parser.eof() : this.#parser.push(r.value))) return;
    }
  }

  /** Hands a refusal's body events to its reader; true once something was queued or it ended. */
  #refusalEvents(c: ReadableStreamDefaultController<Uint8Array>, events: H1Event[]): boolean {
    let queued = false;
    for (const ev of events) {
      if (ev.type === "data" && ev.data.length > 0) {
        c.enqueue(ev.data.slice());
        queued = true;
      } else if (ev.type === "end" || ev.type === "error") {
        if (ev.type === "end") c.close();
        else c.error(new UpstreamError(ev.kind, `backend sent a malformed response: ${ev.reason}`));
        this.#close();
        return true;
      }
    }
    return queued;
  }

  /** The next read of the socket, or null once it failed or was closed. */
  async #read(): Promise<ReadResult | null> {
    try {
      return await this.#reader!.read();
    } catch {
      return null;
    }
  }

  #settle(res: UpstreamResponse): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#answer.resolve(res);
  }

  /** No more waiting on the backend's answer: the request timeout stops here. */
  #stopWaiting(): void {
    this.#watch?.cancel();
    this.#watch = null;
  }

  /** Fails a pending answer with `err`, and closes the socket (a tunnel's streams end with it). */
  #fail(err: UpstreamError): void {
    if (!this.#settled) {
      this.#settled = true;
      this.#answer.reject(err);
    }
    this.#close();
  }

  #close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#stopWaiting();
    if (this.#onAbort !== null) this.#req.signal?.removeEventListener("abort", this.#onAbort);
    this.#onAbort = null;
    this.#clientReader?.cancel().catch(() => {});
    this.#reader?.cancel().catch(() => {});
    this.#writer?.abort().catch(() => {});
    if (this.#conn !== null) closeConn(this.#conn);
    this.#deps.closed?.(this);
  }
}

function closeConn(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch { /* closed already */ }
}
