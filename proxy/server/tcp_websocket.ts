/**
 * WebSockets on the TCP fallback: an HTTP/1.1 connection whose first request
 * asks for `Upgrade: websocket` (RFC 6455 §4.1) is taken over from the
 * runtime's HTTP server (which cannot keep an upgraded stream on a
 * connection it serves alone, see `shared/connection_takeover.ts`) and
 * served here, byte for byte:
 *
 * - the head is checked (HTTP/1.1, GET, `Host`, one valid
 *   `Sec-WebSocket-Key`, `Sec-WebSocket-Version`: else 400) and handed to the
 *   application as the extended CONNECT it stands for (`:protocol
 *   websocket`, RFC 8441 §5), its fields as sent: an HTTP/1.1 backend gets
 *   the client's own key (the handshake passes through), an HTTP/2 one an
 *   extended CONNECT without it;
 * - a 2xx from the application (the backend switched) is answered `101
 *   Switching Protocols` with the `Sec-WebSocket-Accept` of the client's
 *   key and the backend's fields (`Sec-WebSocket-Protocol`, `-Extensions`),
 *   then the connection carries the tunnel: what the client sends (the
 *   bytes after its head first) is the request body, the response body is
 *   written back as it comes; the backend's end closes the connection;
 * - any other answer (the backend's refusal, the proxy's own error) is
 *   written as an HTTP/1.1 response with `connection: close`.
 *
 * A connection that does not ask for a WebSocket is left to the runtime.
 * The request is logged and counted like any other of the fallback's
 * (`listener=tcp`, status 101 for an open tunnel).
 *
 * @example
 * ```ts
 * import type { RequestHandler, RequestRecord } from "./types.ts";
 * declare const handler: RequestHandler;
 * declare const finished: (record: RequestRecord) => void;
 *
 * const takeOver = tcpWebSocketTakeOver(handler, 9889, { done: finished });
 * // given to serveTlsConnections (startTcpFallback's `takeOver`)
 * ```
 *
 * @module
 */

import { STATUS_CODES } from "node:http";
import { getLogger } from "@logtape/logtape";
import type { TakenConnection, TakeOver } from "../../shared/connection_takeover.ts";
import { type H1RequestHead, parseRequestHead } from "../h1/mod.ts";
import {
  asksWebSocketUpgrade,
  h1UpgradeRequestError,
  HOP_BY_HOP,
  type RequestHead,
  WEBSOCKET_PROTOCOL,
  websocketAccept,
} from "../http/mod.ts";
import { writeAll } from "../../shared/bytes.ts";
import { errorResponse } from "./error_response.ts";
import { RequestEnd } from "./request_end.ts";
import type { OutgoingResponse, RequestHandler, RequestRecord } from "./types.ts";

const log = getLogger(["proxy", "tcp_fallback"]);

/** Size of each read of the client's side. */
const READ_BYTES = 16 * 1024;
/** Fields of a 101 the proxy writes itself, or never (framing). */
const OWN_FIELDS = new Set(["content-length", "sec-websocket-accept"]);

/** Options of {@link tcpWebSocketTakeOver}. */
export interface TcpWebSocketOptions {
  /** The finished-request sink (the access log and metrics), as the fallback's `done`. */
  done?: (record: RequestRecord) => void;
}

/**
 * The take-over hook of the TCP fallback: a connection whose first request
 * asks for a WebSocket is served here (see the module docs), any other is
 * left to the runtime (`null`).
 */
export function tcpWebSocketTakeOver(
  handler: RequestHandler,
  h3Port: number,
  opts: TcpWebSocketOptions = {},
): TakeOver {
  const altSvc = `h3=":${h3Port}"; ma=86400`;
  return (bytes, headEnd, conn, remote) => {
    const head = parseRequestHead(bytes.subarray(0, headEnd));
    if (typeof head === "string" || !asksWebSocketUpgrade(head.fields)) return null;
    const ws = new TcpWebSocket(conn, head, bytes.slice(headEnd), remote, altSvc, opts.done);
    ws.serve(handler).catch((err) => {
      log.error("WebSocket on the TCP fallback failed: {error}", { error: String(err) });
      ws.fail(err);
    });
    return ws;
  };
}

/** One taken-over connection; see the module docs. */
class TcpWebSocket implements TakenConnection {
  readonly #conn: Deno.Conn;
  readonly #head: H1RequestHead;
  readonly #rest: Uint8Array;
  readonly #remote: Deno.NetAddr;
  readonly #altSvc: string;
  readonly #done: ((record: RequestRecord) => void) | undefined;
  readonly #abort = new AbortController();
  readonly #finished = Promise.withResolvers<void>();
  readonly #started = performance.now();
  #closed = false;
  /** Response bytes written (the tunnel's, or the refusal's body). */
  #bytes = 0;

  constructor(
    conn: Deno.Conn,
    head: H1RequestHead,
    rest: Uint8Array,
    remote: Deno.NetAddr,
    altSvc: string,
    done: ((record: RequestRecord) => void) | undefined,
  ) {
    this.#conn = conn;
    this.#head = head;
    this.#rest = rest;
    this.#remote = remote;
    this.#altSvc = altSvc;
    this.#done = done;
  }

  get finished(): Promise<void> {
    return this.#finished.promise;
  }

  /** A drain lets the tunnel run; the drain's deadline closes it ({@link close}). */
  shutdown(): Promise<void> {
    return Promise.resolve();
  }

  /** Closes the connection at once: the proxy's drain is over (the request ends as `shutdown`). */
  close(): void {
    if (!this.#closed && !this.#abort.signal.aborted) {
      this.#abort.abort(new RequestEnd("shutdown"));
    }
    this.#end();
  }

  /** A failure inside the proxy: the request ends, the connection closes. */
  fail(err: unknown): void {
    this.#gone(err);
    this.#end();
  }

  /** Closes the connection (idempotent). */
  #end(): void {
    if (this.#closed) return;
    this.#closed = true;
    try {
      this.#conn.close();
    } catch { /* closed */ }
    this.#finished.resolve();
  }

  /** Checks the handshake, asks the application, and answers (then relays the tunnel). */
  async serve(handler: RequestHandler): Promise<void> {
    const head = this.#head;
    const key = head.fields.find(([n]) => n === "sec-websocket-key")?.[1];
    const authority = head.fields.find(([n]) => n === "host")?.[1];
    const why = head.version !== "1.1"
      ? "a WebSocket upgrade needs HTTP/1.1 (RFC 6455 §4.1)"
      : authority === undefined
      ? "no Host (RFC 9112 §3.2)"
      : h1UpgradeRequestError(head.method, head.fields);
    if (why !== null || key === undefined || authority === undefined) {
      const res = errorResponse(400, "bad_request", why ?? "malformed WebSocket upgrade");
      await this.#refuse(res);
      return this.#report(res, res.status, "complete");
    }
    const request: RequestHead = {
      method: "CONNECT",
      protocol: WEBSOCKET_PROTOCOL,
      scheme: "https",
      authority,
      path: head.target,
      fields: head.fields,
    };
    let res: OutgoingResponse;
    try {
      res = await handler({
        head: request,
        body: this.#clientSide(),
        remote: { hostname: this.#remote.hostname, port: this.#remote.port },
        listener: "tcp",
        signal: this.#abort.signal,
      });
    } catch (err) {
      log.error("handler failed: {error}", { error: String(err) });
      res = errorResponse(500, "internal_error", "internal proxy error");
    }
    const body = res.body;
    if (res.status >= 200 && res.status < 300 && body instanceof ReadableStream) {
      const ended = await this.#tunnel(res, body, await websocketAccept(key));
      return this.#report(res, 101, ended);
    }
    await this.#refuse(res);
    this.#report(res, res.status, "complete");
  }

  /** The client's side: the bytes after its head, then each read of the connection. */
  #clientSide(): ReadableStream<Uint8Array> {
    let first: Uint8Array | null = this.#rest.length > 0 ? this.#rest : null;
    return new ReadableStream<Uint8Array>({
      pull: async (c) => {
        if (first !== null) {
          c.enqueue(first);
          first = null;
          return;
        }
        const buf = new Uint8Array(READ_BYTES);
        let n: number | null;
        try {
          n = await this.#conn.read(buf);
        } catch (err) {
          this.#gone(err);
          throw err;
        }
        if (n === null) c.close();
        else c.enqueue(buf.subarray(0, n));
      },
    }, { highWaterMark: 0 });
  }

  /** Writes the 101 and relays the backend's side; resolves with how the tunnel ended. */
  async #tunnel(
    res: OutgoingResponse,
    body: ReadableStream<Uint8Array>,
    accept: string,
  ): Promise<RequestRecord["outcome"]> {
    let head = "HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: upgrade\r\n" +
      `sec-websocket-accept: ${accept}\r\n`;
    for (const [name, value] of res.headers) {
      const lower = name.toLowerCase();
      if (!HOP_BY_HOP.has(lower) && !OWN_FIELDS.has(lower)) head += `${lower}: ${value}\r\n`;
    }
    const reader = body.getReader();
    try {
      await this.#write(octets(`${head}\r\n`));
      for (;;) {
        const r = await reader.read();
        if (r.done) return "complete";
        await this.#write(r.value);
        this.#bytes += r.value.length;
      }
    } catch (err) {
      reader.cancel(err).catch(() => {});
      return this.#abort.signal.aborted ? "aborted" : "broken";
    } finally {
      this.#end();
    }
  }

  /** Writes a response that is no switch, then closes the connection. */
  async #refuse(res: OutgoingResponse): Promise<void> {
    const reason = STATUS_CODES[res.status] ?? "";
    let head =
      `HTTP/1.1 ${res.status} ${reason}\r\nconnection: close\r\nalt-svc: ${this.#altSvc}\r\n`;
    for (const [name, value] of res.headers) {
      const lower = name.toLowerCase();
      if (!HOP_BY_HOP.has(lower) && lower !== "alt-svc") head += `${lower}: ${value}\r\n`;
    }
    const body = res.body;
    if (body instanceof Uint8Array && !head.includes("\r\ncontent-length:")) {
      head += `content-length: ${body.length}\r\n`;
    }
    try {
      await this.#write(octets(`${head}\r\n`));
      if (body instanceof Uint8Array) {
        await this.#write(body);
        this.#bytes += body.length;
      } else if (body !== null) {
        // Its end is the connection's close (no content-length: close-delimited).
        for await (const chunk of body) {
          await this.#write(chunk);
          this.#bytes += chunk.length;
        }
      }
    } catch (err) {
      this.#gone(err);
    } finally {
      this.#end();
    }
  }

  async #write(bytes: Uint8Array): Promise<void> {
    try {
      await writeAll(this.#conn, bytes);
    } catch (err) {
      this.#gone(err);
      throw err;
    }
  }

  /** The client went away (a read or write failed). */
  #gone(err: unknown): void {
    if (!this.#abort.signal.aborted) {
      this.#abort.abort(new RequestEnd("client_gone", { cause: err }));
    }
  }

  /** The finished request, to the sink and to the application's own listener. */
  #report(res: OutgoingResponse, status: number, outcome: RequestRecord["outcome"]): void {
    const record: RequestRecord = {
      listener: "tcp",
      streamId: 0,
      remote: { hostname: this.#remote.hostname, port: this.#remote.port },
      method: this.#head.method,
      authority: this.#head.fields.find(([n]) => n === "host")?.[1],
      path: this.#head.target,
      status,
      bytes: this.#bytes,
      durationMs: performance.now() - this.#started,
      backend: res.backend,
      upstreamMs: res.upstreamMs,
      failure: res.failure,
      rateLimit: res.rateLimit,
      outcome,
    };
    this.#done?.(record);
    res.finished?.(record);
  }
}

/** Octets of a head whose characters are all below 0x100. */
function octets(s: string): Uint8Array {
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}
