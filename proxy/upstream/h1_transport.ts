/**
 * {@link UpstreamTransport} over HTTP/1.1 (`proxy/h1/`'s sans-IO codec) in
 * this thread: plain TCP over `Deno.connect`, or TLS with ALPN `http/1.1`
 * over `Deno.startTls` for backends configured with `tls`.
 *
 * - Connections: a keep-alive pool per backend address and TLS setting, one
 *   request at a time per connection (no pipelining), at most
 *   {@link H1TransportOptions.maxConnectionsPerAddress} open; past that a
 *   request waits for the first to come free, in a bounded queue (past its
 *   bound it fails `connect`). A connection is reused only when its
 *   response ended cleanly, the backend let it persist (no `connection:
 *   close`, HTTP/1.1 or a 1.0 `keep-alive`), it sent no byte outside the
 *   response and the request was written whole. An idle connection keeps a
 *   read pending: bytes or a close from the backend while idle close it at
 *   once; idle for {@link H1_IDLE_MS} it is closed, below the common
 *   keep-alive timeouts of servers (Node 5 s, nginx 75 s, Caddy 2 min), so a
 *   backend's own idle close rarely races a request.
 * - Bodies: a request body of known length goes with Content-Length, one of
 *   unknown length (or followed by trailers) chunked, read from the client
 *   only as the socket takes it; a response body of up to
 *   {@link H1_WHOLE_BODY_LIMIT} bytes with a Content-Length comes whole, a
 *   larger or unsized one as a stream read from the socket only as its
 *   reader asks (TCP's window is the backpressure).
 * - Timeouts and cancel as the HTTP/2 transport: `timeoutMs` bounds each
 *   wait on the backend (a connection, taking the body, the head), a new
 *   connection has `connectTimeoutMs`; an exchange that fails or is
 *   abandoned closes its connection (HTTP/1.1 has no other cancel).
 *
 * How each end maps to a failure kind (`outcome.ts` turns kinds into a
 * status and the retry rule):
 *
 * | what happened | kind | processed |
 * |---|---|---|
 * | TCP/TLS connect failed or timed out, ALPN refused, queue full | `connect` | no, provably: nothing was written |
 * | closed before any response byte, new or reused connection | `reset` | maybe: sent again once, idempotent only |
 * | reset or closed mid-head or mid-body | `reset` / `protocol` | maybe |
 * | bytes that are no HTTP/1.x response, a bound exceeded, CL+TE, a 1xx flood, an unasked 101 | `protocol` | maybe |
 * | a head that breaks HTTP's rules (fields, status, trailers) | `invalid_response` | yes |
 * | nothing for `timeoutMs` | `timeout` | maybe |
 * | the client left, its body failed | `aborted` | maybe |
 * | the request cannot be written (a CR in a field, a body longer than its length) | `local` | no |
 *
 * A closed keep-alive connection is not replayed here: the one retry of an
 * idempotent request is `forward`'s, so a request is never sent more than
 * twice, and a non-idempotent one never again unless nothing was written.
 *
 * @module
 */

import { idleWatch } from "../../shared/deadline.ts";
import { backendTlsOf, type Connector, createConnector } from "./backend_connect.ts";
import { ConnectionStats } from "./connection_stats.ts";
import { H1Exchange } from "./h1_exchange.ts";
import { H1Pool, type H1PoolOptions } from "./h1_pool.ts";
import { H1WebSocket } from "./h1_websocket.ts";
import { PoolRegistry } from "./pool_registry.ts";
import type { UpstreamConnectionsView } from "../metrics/views.ts";
import {
  abortedError,
  UpstreamError,
  type UpstreamRequest,
  type UpstreamResponse,
  type UpstreamTransport,
} from "./transport.ts";

export { H1_WHOLE_BODY_LIMIT } from "./h1_exchange.ts";

/** An idle keep-alive connection is closed after this long (ms): below Node's 5 s default. */
export const H1_IDLE_MS = 4_000;
/** Default deadline of a new connection: TCP connect and TLS handshake (ms). */
const CONNECT_TIMEOUT_MS = 10_000;

/** Options of {@link createH1Transport}. */
export interface H1TransportOptions {
  /** Opens the byte stream to a backend (tests inject one); default `backend_connect.ts` with ALPN `http/1.1`. */
  connect?: Connector;
  /** Connections per backend address at most (default 64). */
  maxConnectionsPerAddress?: number;
  /** Requests waiting for a connection per backend address at most (default 4096). */
  maxQueuedPerAddress?: number;
  /** An idle connection is closed after this long (ms, default {@link H1_IDLE_MS}). */
  idleMs?: number;
  /** Deadline of a new connection when the request gives none (ms, default 10,000). */
  connectTimeoutMs?: number;
}

/** The transport; see {@link createH1Transport}. */
class H1Transport implements UpstreamTransport {
  readonly #pools: PoolRegistry<H1Pool>;
  readonly #poolOptions: H1PoolOptions;
  readonly #connectTimeoutMs: number;
  readonly #live = new Set<H1Exchange>();
  readonly #stats = new ConnectionStats("http1");
  /** WebSockets open (or opening), each on a connection of its own (`h1_websocket.ts`). */
  readonly #websockets = new Set<H1WebSocket>();
  #closed = false;

  constructor(opts: H1TransportOptions) {
    const maxConnections = opts.maxConnectionsPerAddress ?? 64;
    this.#connectTimeoutMs = opts.connectTimeoutMs ?? CONNECT_TIMEOUT_MS;
    this.#poolOptions = {
      connect: opts.connect ??
        createConnector({ maxStalledHandshakes: maxConnections, alpn: ["http/1.1"] }),
      maxConnections,
      maxQueued: opts.maxQueuedPerAddress ?? 4096,
      idleMs: opts.idleMs ?? H1_IDLE_MS,
      empty: (pool) => this.#pools.forget(pool),
    };
    this.#pools = new PoolRegistry((key, req) => {
      const counts = this.#stats.of(req.address);
      return new H1Pool(key, req.address, backendTlsOf(req.tls), this.#poolOptions, counts);
    });
  }

  exchange(req: UpstreamRequest): Promise<UpstreamResponse> {
    if (this.#closed) {
      return Promise.reject(new UpstreamError("aborted", "upstream transport closed"));
    }
    if (req.signal?.aborted) {
      return Promise.reject(abortedError(req.signal));
    }
    const { promise, resolve, reject } = Promise.withResolvers<UpstreamResponse>();
    const x = new H1Exchange(req, this.#pools.of(req), resolve, reject, (done) => {
      this.#live.delete(done);
    });
    this.#live.add(x);
    x.watch = idleWatch(
      req.timeoutMs,
      () =>
        x.fail(new UpstreamError("timeout", `backend did not answer within ${req.timeoutMs} ms`)),
    );
    x.onAbort = () => x.abort();
    req.signal?.addEventListener("abort", x.onAbort, { once: true });
    x.start(req.connectTimeoutMs ?? this.#connectTimeoutMs).catch((err) =>
      x.fail(new UpstreamError("aborted", `HTTP/1.1 exchange failed: ${err}`, { cause: err }))
    );
    return promise;
  }

  /** A GET with `Upgrade: websocket` on a connection of its own (`h1_websocket.ts`). */
  websocket(req: UpstreamRequest): Promise<UpstreamResponse> {
    if (this.#closed) {
      return Promise.reject(new UpstreamError("aborted", "upstream transport closed"));
    }
    const t = req.tls;
    const ws = new H1WebSocket(req, {
      connect: this.#poolOptions.connect,
      tls: t === undefined ? undefined : { caFile: t.ca, serverName: t.server_name },
      connectTimeoutMs: req.connectTimeoutMs ?? this.#connectTimeoutMs,
      closed: (done) => void this.#websockets.delete(done),
    });
    this.#websockets.add(ws);
    return ws.open();
  }

  release(address: string): void {
    this.#pools.release(address);
  }

  connections(): UpstreamConnectionsView[] {
    return this.#stats.snapshot();
  }

  close(): Promise<void> {
    this.#closed = true;
    for (const ws of [...this.#websockets]) ws.close();
    for (const x of [...this.#live]) {
      x.fail(new UpstreamError("aborted", "upstream transport closed"));
    }
    this.#pools.closeAll();
    return Promise.resolve();
  }
}

/**
 * Creates the HTTP/1.1 transport.
 *
 * @example
 * ```ts
 * const upstream = createH1Transport();
 * const res = await upstream.exchange({
 *   address: "127.0.0.1:8080", method: "GET", path: "/", authority: "example.com",
 *   headers: [], body: null, timeoutMs: 30_000,
 * });
 * ```
 */
export function createH1Transport(opts: H1TransportOptions = {}): UpstreamTransport {
  return new H1Transport(opts);
}
