/**
 * {@link UpstreamTransport} on the project's own sans-IO HTTP/2 client
 * (`proxy/h2/`) in this thread: h2c with prior knowledge over `Deno.connect`,
 * or TLS with ALPN `h2` over `Deno.startTls` for backends configured with
 * `tls`.
 *
 * - Sessions: a pool per backend address. A request opens its stream on a
 *   session with room under the backend's SETTINGS_MAX_CONCURRENT_STREAMS;
 *   when all are full another session is opened (up to
 *   {@link H2TransportOptions.maxSessionsPerAddress}), past that the request
 *   waits in a bounded queue (past the bound it fails `connect`: nothing
 *   reached the backend). Streams open only once the backend's SETTINGS are
 *   in, so the count of open streams is the backend's own.
 * - A new session has one deadline for TCP connect, TLS handshake and the
 *   backend's first SETTINGS (`connect_timeout_ms` of the request that
 *   opened it). Past it the session is closed: the first request waiting on
 *   it (the one it was opened for), and any that already moved once, fail
 *   `connect` (nothing was sent; the failure counts against the backend);
 *   the others waiting on it move to a new session.
 * - A request abandoned (client gone, timeout) before its stream opened
 *   never opens; one abandoned after is reset with RST_STREAM CANCEL.
 * - A session without streams for {@link SESSION_IDLE_MS} is closed; one the
 *   backend sends GOAWAY on takes no new streams and closes when drained;
 *   requests above GOAWAY's last stream id, or refused with REFUSED_STREAM,
 *   before any response head are sent again elsewhere when their body can be
 *   replayed, else fail `connect` (the backend provably did not process
 *   them: the retry rule of `outcome.ts`). Refused after a response head
 *   (1xx included), they fail `protocol` and are never replayed: the backend
 *   processed them. A PING checks a session that has streams but has been
 *   silent.
 * - The backend's protocol violations fail the requests of that session
 *   (kind `protocol`) and drop the session; nothing is thrown, nothing else
 *   is touched.
 * - Bytes: one read buffer per session, reused; response body bytes are
 *   copied once out of it. Bodies stream with backpressure tied to flow
 *   control: the backend's windows, the stream's and the connection's, are
 *   credited as the reader takes bytes (`h2_response_body.ts`), so what a
 *   session holds for readers that stall is bounded by its connection
 *   window (`sessionCodecOptions` in `h2_session.ts`: 4 MiB, 16 stream
 *   windows); a request body is read from the client only as the backend's
 *   window and the socket take it.
 * - Fidelity: the method, path, authority and fields go out exactly as
 *   given (nothing added or dropped); bodies are untouched.
 *
 * The parts, each in its file, events flowing up one way: a connection
 * (`h2_session.ts`: socket loops, ping, GOAWAY, reset pacing) tells its
 * pool (`h2_pool.ts`: the sessions of one address and the requests waiting
 * for a stream) and the exchange on each stream (`h2_exchange.ts`: one
 * request and its response) what happened, through callbacks given when it
 * is created, and an exchange asks this facade (to be queued again, or
 * forgotten once over) through the hooks it is created with; no part holds
 * a pointer up. This file is the facade: a pool per address and TLS
 * setting, the request timeout, the client's abort, and close.
 *
 * @module
 */

import { idleWatch } from "../../shared/deadline.ts";
import type { H2ConnectionOptions } from "../h2/mod.ts";
import {
  type BackendTls,
  backendTlsOf,
  type Connector,
  createConnector,
} from "./backend_connect.ts";
import { ConnectionStats } from "./connection_stats.ts";
import { Exchange, type ExchangeHooks } from "./h2_exchange.ts";
import { H2Pool, type PoolOptions } from "./h2_pool.ts";
import type { UpstreamConnectionsView } from "../metrics/views.ts";
import { PoolRegistry } from "./pool_registry.ts";
import {
  abortedError,
  UpstreamError,
  type UpstreamRequest,
  type UpstreamResponse,
  type UpstreamTransport,
} from "./transport.ts";

export { WHOLE_BODY_LIMIT } from "./h2_exchange.ts";
export { SESSION_IDLE_MS } from "./h2_session.ts";
export type { BackendTls } from "./backend_connect.ts";

/** A session with streams that has received nothing for this long is PINGed (ms). */
const PING_AFTER_MS = 15_000;
/** A PING unanswered for this long ends the session (ms). */
const PING_TIMEOUT_MS = 10_000;
/**
 * Default deadline of a new session (ms): TCP connect, TLS handshake and the
 * backend's first SETTINGS (`connect_timeout_ms`'s default).
 */
export const CONNECT_TIMEOUT_MS = 10_000;

/** Options of {@link createH2Transport}. */
export interface H2TransportOptions {
  /**
   * Opens the byte stream to a backend (tests inject one); default
   * `backend_connect.ts` (`Deno.connect`, `Deno.startTls`), with at most
   * {@link maxSessionsPerAddress} TLS handshakes given up and still
   * unanswered per address. `signal` aborts at the session's connect
   * deadline.
   */
  connect?: Connector;
  /** TLS settings of a backend address (tests); default the request's own `tls`. */
  tlsFor?: (address: string) => BackendTls | undefined;
  /** Sessions per backend address at most (default 8). */
  maxSessionsPerAddress?: number;
  /** Requests waiting for a stream per backend address at most (default 4096). */
  maxQueuedPerAddress?: number;
  /**
   * Codec settings (windows, frame size, limits); a session returns the
   * connection window's credit as readers take the bytes whatever this says
   * (`sessionCodecOptions`).
   */
  codec?: H2ConnectionOptions;
  /** A session with streams that received nothing this long is PINGed (ms, default 15,000). */
  pingAfterMs?: number;
  /** A PING unanswered this long ends the session, failing its streams `timeout` (ms, default 10,000). */
  pingTimeoutMs?: number;
  /**
   * Deadline of a new session when the request gives none
   * (`connectTimeoutMs`): TCP connect, TLS handshake and the backend's
   * SETTINGS (its connection preface, RFC 9113 §3.4) together (ms, default
   * {@link CONNECT_TIMEOUT_MS}).
   */
  connectTimeoutMs?: number;
}

/** The transport; see {@link createH2Transport}. */
class H2Transport implements UpstreamTransport {
  readonly #pools: PoolRegistry<H2Pool>;
  readonly #tlsFor: (address: string) => BackendTls | undefined;
  readonly #poolOptions: PoolOptions;
  readonly #hooks: ExchangeHooks;
  readonly #live = new Set<Exchange>();
  readonly #stats = new ConnectionStats("h2");
  #closed = false;

  constructor(opts: H2TransportOptions) {
    const maxSessions = opts.maxSessionsPerAddress ?? 8;
    this.#tlsFor = opts.tlsFor ?? (() => undefined);
    this.#poolOptions = {
      connect: opts.connect ?? createConnector({ maxStalledHandshakes: maxSessions }),
      codec: opts.codec,
      maxSessions,
      maxQueued: opts.maxQueuedPerAddress ?? 4096,
      connectTimeoutMs: opts.connectTimeoutMs ?? CONNECT_TIMEOUT_MS,
      pingAfterMs: opts.pingAfterMs ?? PING_AFTER_MS,
      pingTimeoutMs: opts.pingTimeoutMs ?? PING_TIMEOUT_MS,
      empty: (pool) => this.#pools.forget(pool),
    };
    this.#pools = new PoolRegistry((key, req) => {
      const tls = this.#tlsFor(req.address) ?? backendTlsOf(req.tls);
      return new H2Pool(key, req.address, tls, this.#poolOptions, this.#stats.of(req.address));
    });
    this.#hooks = {
      requeue: (x) => this.#enqueue(x),
      unqueue: (x) => {
        for (const pool of this.#pools.values()) pool.unqueue(x);
      },
      done: (x) => void this.#live.delete(x),
    };
  }

  exchange(req: UpstreamRequest): Promise<UpstreamResponse> {
    return this.#start(req, false);
  }

  /** An extended CONNECT (RFC 8441) on a session whose backend enabled it. */
  websocket(req: UpstreamRequest): Promise<UpstreamResponse> {
    return this.#start(req, true);
  }

  #start(req: UpstreamRequest, tunnel: boolean): Promise<UpstreamResponse> {
    if (this.#closed) {
      return Promise.reject(new UpstreamError("aborted", "upstream transport closed"));
    }
    if (req.signal?.aborted) return Promise.reject(abortedError(req.signal));
    const { promise, resolve, reject } = Promise.withResolvers<UpstreamResponse>();
    const x = new Exchange(req, resolve, reject, this.#hooks, tunnel);
    this.#live.add(x);
    x.watch = idleWatch(
      req.timeoutMs,
      () =>
        x.fail(new UpstreamError("timeout", `backend did not answer within ${req.timeoutMs} ms`)),
    );
    x.onAbort = () => x.fail(abortedError(req.signal!));
    req.signal?.addEventListener("abort", x.onAbort, { once: true });
    this.#enqueue(x);
    return promise;
  }

  #enqueue(x: Exchange): void {
    const refused = this.#pools.of(x.req).admit(x);
    if (refused !== null) x.fail(refused);
  }

  release(address: string): void {
    this.#pools.release(address);
  }

  connections(): UpstreamConnectionsView[] {
    return this.#stats.snapshot();
  }

  close(): Promise<void> {
    this.#closed = true;
    for (const x of [...this.#live]) {
      x.fail(new UpstreamError("aborted", "upstream transport closed"));
    }
    this.#pools.closeAll();
    return Promise.resolve();
  }
}

/**
 * Creates the transport.
 *
 * @example
 * ```ts
 * const upstream = createH2Transport();
 * const res = await upstream.exchange({
 *   address: "127.0.0.1:8080", method: "GET", path: "/", authority: "example.com",
 *   headers: [], body: null, timeoutMs: 30_000,
 * });
 * ```
 */
export function createH2Transport(opts: H2TransportOptions = {}): UpstreamTransport {
  return new H2Transport(opts);
}
