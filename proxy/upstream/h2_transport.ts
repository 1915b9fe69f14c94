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
 *   control: the backend's window is credited as the reader takes bytes,
 *   and a request body is read from the client only as the backend's window
 *   and the socket take it.
 * - Fidelity: the method, path, authority and fields go out exactly as
 *   given (nothing added or dropped); bodies are untouched.
 *
 * @module
 */

import { type IdleWatch, idleWatch } from "../../shared/deadline.ts";
import { ResetBudget } from "./reset_budget.ts";
import { H2ClientConnection, type H2ConnectionOptions, type H2Event } from "../h2/connection.ts";
import { H2Code, h2CodeName } from "../h2/errors.ts";
import { responseHasNoBody } from "../h3/fields.ts";
import { mayReplay, outcomeOfError } from "./outcome.ts";
import { type BackendTls, type Connector, createConnector } from "./backend_connect.ts";
import {
  abortedError,
  type Trailers,
  UpstreamError,
  type UpstreamFailureKind,
  type UpstreamRequest,
  type UpstreamResponse,
  type UpstreamTransport,
} from "./transport.ts";

/** Bodies with a declared length up to this are collected and returned whole. */
export const WHOLE_BODY_LIMIT = 64 * 1024;

/** A session without streams for this long is closed (ms), as the node:http2 transport does. */
export const SESSION_IDLE_MS = 30_000;

/** A session with streams that has received nothing for this long is PINGed (ms). */
const PING_AFTER_MS = 15_000;
/** A PING unanswered for this long ends the session (ms). */
const PING_TIMEOUT_MS = 10_000;
/**
 * Default deadline of a new session (ms): TCP connect, TLS handshake and the
 * backend's first SETTINGS (`connect_timeout_ms`'s default).
 */
export const CONNECT_TIMEOUT_MS = 10_000;
/** Times a request moves to a new session after the one it waited on timed out connecting. */
const MAX_MOVES = 1;
/** Response body bytes buffered ahead of the reader (the stream's own queue). */
const RESPONSE_HIGH_WATER = 256 * 1024;
/** Request body bytes queued for the socket before the next chunk is read from the client. */
const WRITE_HIGH_WATER = 256 * 1024;
/** Size of each session's read buffer. */
const READ_BUFFER = 64 * 1024;
/** Times a request refused unprocessed (REFUSED_STREAM, GOAWAY) is tried again. */
const MAX_REPLAYS = 2;

export type { BackendTls } from "./backend_connect.ts";

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
  /** Codec settings (windows, frame size, limits). */
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

/** One exchange as the transport tracks it. */
class Exchange {
  readonly req: UpstreamRequest;
  readonly resolve: (res: UpstreamResponse) => void;
  readonly reject: (err: UpstreamError) => void;
  /** Queued, open on a session, or done. */
  state: "queued" | "open" | "done" = "queued";
  session: Session | null = null;
  stream = 0;
  /** When its stream opened (`performance.now()` ms). */
  openedAt = 0;
  settled = false;
  replays = 0;
  /** Times it moved to a new session after the one it waited on timed out connecting. */
  moves = 0;
  /** When waiting for a stream runs out (`performance.now()` ms): never opened past it. */
  readonly deadline: number;
  /** request_timeout_ms: waiting on the backend for body credit or the head. */
  watch: IdleWatch | null = null;
  onAbort: (() => void) | null = null;
  // Response side.
  status = 0;
  headers: Array<[string, string]> = [];
  collected: Uint8Array[] | null = null;
  controller: ReadableStreamDefaultController<Uint8Array> | null = null;
  /** Body bytes delivered and not yet credited back to the backend. */
  owed = 0;
  /** The backend's trailers, when they came before the response was handed over. */
  trailers: Array<[string, string]> | undefined = undefined;
  /** The response handed over (a streamed body's trailers are set on it). */
  response: UpstreamResponse | null = null;
  // Request side.
  /** The whole body still to send (Uint8Array bodies), or a chunk of a streamed one. */
  pending: Uint8Array | null = null;
  pendingEnd = false;
  /** The client's trailers, sent after the last body byte (asked once the body ended). */
  trailersOut: Trailers | null = null;
  reader: ReadableStreamDefaultReader<Uint8Array> | null = null;
  /** A streamed body has been read from: it cannot be replayed. */
  bodyTouched = false;
  /** The backend's response is complete (END_STREAM seen). */
  responseEnded = false;
  /** Waiting for flow-control credit: resolved by `send-window`. */
  wake: (() => void) | null = null;

  constructor(
    req: UpstreamRequest,
    resolve: (res: UpstreamResponse) => void,
    reject: (err: UpstreamError) => void,
  ) {
    this.req = req;
    this.resolve = resolve;
    this.reject = reject;
    this.deadline = performance.now() + req.timeoutMs;
  }

  get replayable(): boolean {
    return !(this.req.body instanceof ReadableStream) || !this.bodyTouched;
  }
}

/** One HTTP/2 connection to a backend and its exchanges. */
class Session {
  readonly codec: H2ClientConnection;
  readonly exchanges = new Map<number, Exchange>();
  /** Exchanges given to this session before its SETTINGS arrived. */
  readonly waiting: Exchange[] = [];
  conn: Deno.Conn | null = null;
  /** The backend's SETTINGS are in: streams may open. */
  ready = false;
  closed = false;
  #writing = false;
  #drainWaiters: Array<() => void> = [];
  idle: IdleWatch | null = null;
  #live: IdleWatch | null = null;
  #pingOut = false;
  /** The connect deadline: TCP connect, TLS handshake and the backend's first SETTINGS. */
  #connectWatch: IdleWatch | null = null;
  /** Aborted at the connect deadline: the connector gives up. */
  readonly #connecting = new AbortController();
  /** Paces resets of streams the backend may not have accepted yet (`reset_budget.ts`). */
  readonly resets = new ResetBudget();
  /** The backend's GOAWAY, as a suffix (" after GOAWAY …") for the failure of the streams it left open, or "". */
  #goaway = "";
  #resetTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    readonly pool: Pool,
    codecOpts: H2ConnectionOptions | undefined,
    readonly connectTimeoutMs: number,
  ) {
    this.codec = new H2ClientConnection(codecOpts);
  }

  /** Streams open plus those promised to this session. */
  get load(): number {
    return this.codec.activeStreams + this.waiting.length;
  }

  get hasRoom(): boolean {
    if (this.closed || this.codec.closedForNewStreams) return false;
    return this.load < this.codec.peerMaxConcurrentStreams;
  }

  async start(connect: Connector, tls: BackendTls | undefined) {
    const wait = this.connectTimeoutMs;
    this.#connectWatch = idleWatch(wait, () => {
      this.#connectWatch = null;
      if (!this.ready) this.#connectTimedOut(wait);
    });
    let conn: Deno.Conn;
    try {
      conn = await connect(this.pool.address, tls, this.#connecting.signal);
    } catch (err) {
      if (this.closed) return;
      const e = err instanceof UpstreamError ? err : new UpstreamError(
        "connect",
        `cannot connect to ${this.pool.address}: ${(err as Error).message}`,
        {
          cause: err,
        },
      );
      return this.fail(e, "connect");
    }
    if (this.closed) {
      try {
        conn.close();
      } catch { /* closed */ }
      return;
    }
    this.conn = conn;
    this.flush();
    this.#readLoop();
  }

  /**
   * The connect deadline passed before the backend's SETTINGS: the session
   * is closed. The first request waiting on it (the one it was opened for)
   * and any that already moved once fail `connect` (nothing was sent); the
   * others move to a new session, so one stuck connection does not fail
   * them all, and none waits through more than two.
   */
  #connectTimedOut(wait: number): void {
    if (this.closed) return;
    const err = new UpstreamError(
      "connect",
      this.conn === null
        ? `backend ${this.pool.address}: connection (TCP connect, TLS handshake) not established within connect_timeout_ms (${wait} ms)`
        : `backend ${this.pool.address}: no HTTP/2 SETTINGS received within connect_timeout_ms (${wait} ms); not an HTTP/2 server?`,
    );
    this.#connecting.abort(err);
    const waiting = this.waiting.splice(0).filter((x) =>
      x.state === "queued" && x.session === this
    );
    for (const x of waiting) x.session = null;
    const failing = waiting.filter((x, i) => i === 0 || x.moves >= MAX_MOVES);
    const moving = waiting.filter((x) => !failing.includes(x));
    for (const x of moving) x.moves++;
    this.pool.queue.unshift(...moving);
    // Leaves the pool, whose pump opens a new session for the queue.
    this.#shut();
    for (const x of failing) this.pool.transport.fail(x, err);
  }

  /** Writes what the codec queued, in order; one writer at a time. */
  flush(): void {
    if (this.#writing || this.conn === null || this.closed) return;
    this.#writing = true;
    this.#writeLoop().catch((err) => {
      this.#writing = false;
      this.#wakeDrain();
      this.fail(
        new UpstreamError(
          "reset",
          `write to backend failed: ${(err as Error).message}${this.#goaway}`,
        ),
        "reset",
      );
    });
  }

  async #writeLoop(): Promise<void> {
    const conn = this.conn!;
    for (;;) {
      const out = this.codec.takeOutput();
      if (out === null || this.closed) {
        // Cleared in the same turn as the check: a flush() after it starts a new loop.
        this.#writing = false;
        this.#wakeDrain();
        return;
      }
      let at = 0;
      while (at < out.length) at += await conn.write(out.subarray(at));
      if (this.codec.pendingOutput < WRITE_HIGH_WATER) this.#wakeDrain();
    }
  }

  #wakeDrain(): void {
    if (this.#drainWaiters.length === 0) return;
    for (const w of this.#drainWaiters.splice(0)) w();
  }

  /** Resolves once the queued output is down to {@link WRITE_HIGH_WATER} (or the session ends). */
  drained(): Promise<void> {
    if (this.codec.pendingOutput < WRITE_HIGH_WATER || this.closed || !this.#writing) {
      return Promise.resolve();
    }
    return new Promise((r) => this.#drainWaiters.push(r));
  }

  async #readLoop(): Promise<void> {
    const conn = this.conn!;
    const buf = new Uint8Array(READ_BUFFER);
    this.#live = idleWatch(this.pool.transport.pingAfterMs, () => this.#silent());
    try {
      for (;;) {
        const n = await conn.read(buf);
        if (n === null) break;
        this.#live?.touch();
        this.#pingOut = false;
        const events = this.codec.receive(buf.subarray(0, n));
        for (const ev of events) this.#event(ev);
        this.flush();
        if (this.closed) return;
      }
      this.fail(
        new UpstreamError("reset", `backend closed the connection${this.#goaway}`),
        "reset",
      );
    } catch (err) {
      if (this.closed) return;
      this.fail(
        new UpstreamError(
          "reset",
          `backend connection failed: ${(err as Error).message}${this.#goaway}`,
          { cause: err },
        ),
        "reset",
      );
    }
  }

  /** Nothing received for a while: with streams open, PING; unanswered, give up. */
  #silent(): void {
    if (this.closed) return;
    if (this.#pingOut) {
      return this.fail(new UpstreamError("timeout", "backend did not answer a PING"), "timeout");
    }
    if (this.exchanges.size > 0) {
      this.#pingOut = true;
      this.codec.ping(new Uint8Array(8));
      this.flush();
      this.#live = idleWatch(this.pool.transport.pingTimeoutMs, () => this.#silent());
    } else {
      this.#live = idleWatch(this.pool.transport.pingAfterMs, () => this.#silent());
    }
  }

  #event(ev: H2Event): void {
    switch (ev.type) {
      case "settings":
        if (!this.ready) {
          this.ready = true;
          this.#connectWatch?.cancel();
          this.#connectWatch = null;
          // Opened up to the backend's limit; the rest go back to the pool's queue.
          for (const x of this.waiting.splice(0)) {
            if (x.state === "queued" && x.session === this) this.pool.transport.open(x, this);
          }
        }
        this.pool.pump();
        return;
      case "response": {
        // The backend took this stream, so every earlier one too: resets wait less.
        if (!this.resets.empty) {
          const due = this.resets.answered(ev.stream, performance.now());
          if (due.length > 0) this.sendResets(due);
        }
      }
      /* falls through */
      case "data":
      case "trailers": {
        const x = this.exchanges.get(ev.stream);
        if (x !== undefined) this.pool.transport.onStreamEvent(x, ev);
        return;
      }
      case "stream-error": {
        const x = this.exchanges.get(ev.stream);
        if (x === undefined) return;
        this.exchanges.delete(ev.stream);
        this.pool.transport.onStreamError(x, ev);
        this.streamDone();
        return;
      }
      case "send-window":
        if (ev.stream === 0) {
          for (const x of this.exchanges.values()) x.wake?.();
        } else {
          this.exchanges.get(ev.stream)?.wake?.();
        }
        return;
      case "goaway":
        this.#goaway = ` after GOAWAY ${h2CodeName(ev.code)} (last stream ${ev.lastStreamId}${
          ev.debug === "" ? "" : `, "${ev.debug}"`
        })`;
        this.pool.pump();
        if (this.exchanges.size === 0) this.close();
        return;
      case "ping-ack":
        return;
      case "connection-error":
        return this.fail(
          new UpstreamError(
            ev.local ? "protocol" : "reset",
            `backend ${ev.local ? "broke HTTP/2" : "ended the connection"}: ${
              h2CodeName(ev.code)
            }: ${ev.message}`,
          ),
          ev.local ? "protocol" : "reset",
        );
    }
  }

  /**
   * Resets (CANCEL) the streams the client left whose reset waited for the
   * budget, and re-arms the timer for the ones still waiting.
   */
  sendResets(streams: number[]): void {
    if (this.closed) return;
    for (const stream of streams) {
      if (this.codec.hasStream(stream)) this.codec.resetStream(stream, H2Code.CANCEL);
    }
    this.flush();
    this.armResets();
    this.streamDone();
  }

  /** Sets the timer for when the next waiting reset may go out (none while none waits). */
  armResets(): void {
    clearTimeout(this.#resetTimer);
    this.#resetTimer = undefined;
    const next = this.resets.nextDue();
    if (next === null || this.closed) return;
    this.#resetTimer = setTimeout(() => {
      this.#resetTimer = undefined;
      const due = this.resets.due(performance.now());
      if (due.length > 0) this.sendResets(due);
      else this.armResets();
    }, Math.max(1, Math.ceil(next - performance.now())));
  }

  /** A stream finished (either way): idle bookkeeping and the queue. */
  streamDone(): void {
    if (this.closed) return;
    if (
      this.codec.closedForNewStreams && this.exchanges.size === 0 && this.codec.activeStreams === 0
    ) {
      this.close();
      return;
    }
    if (this.exchanges.size === 0 && this.codec.activeStreams === 0 && this.waiting.length === 0) {
      if (this.pool.released) return this.close();
      this.idle?.cancel();
      this.idle = idleWatch(SESSION_IDLE_MS, () => {
        this.idle = null;
        if (this.exchanges.size === 0 && this.waiting.length === 0) this.close();
      });
    }
    this.pool.pump();
  }

  /** Fails every exchange on the session with `err` and drops it. */
  fail(err: UpstreamError, kind: UpstreamFailureKind): void {
    if (this.closed) return;
    this.#shut();
    const waiting = this.waiting.splice(0);
    const open = [...this.exchanges.values()];
    this.exchanges.clear();
    // Requests still waiting for the session sent nothing to the backend:
    // `connect`, so the forwarder may try another candidate.
    const unsent = err.kind === "connect" || err.kind === "aborted"
      ? err
      : new UpstreamError("connect", err.message, { cause: err });
    for (const x of waiting) {
      if (x.state !== "queued") continue;
      x.session = null;
      this.pool.transport.fail(x, unsent);
    }
    for (const x of open) {
      this.pool.transport.fail(x, new UpstreamError(kind, err.message, { cause: err }), false);
    }
  }

  /**
   * Closes the session by closing the socket, without a GOAWAY NO_ERROR
   * (RFC 9113 §6.8 says SHOULD): Deno 2.9.6's `node:http2` server aborts its
   * whole process (an nghttp2 assertion in `find_stream_on_goaway_func`) on a
   * GOAWAY that arrives soon after its streams closed, measured in about half
   * of the runs of the backpressure conformance case. The frame would tell a
   * backend nothing it needs: we accept no pushed streams (last stream 0) and
   * the session is closed only when none of ours is open, or on shutdown.
   * A session closed for the backend's fault still gets its GOAWAY with the
   * error code (the codec queues it).
   */
  close(): void {
    if (this.closed) return;
    const conn = this.conn;
    this.#shut(false);
    if (conn !== null) {
      const out = this.codec.takeOutput();
      const finish = () => {
        try {
          conn.close();
        } catch { /* closed */ }
      };
      if (out === null || this.#writing) finish();
      else conn.write(out).then(finish, finish);
    }
  }

  #shut(closeConn = true): void {
    this.closed = true;
    clearTimeout(this.#resetTimer);
    this.#resetTimer = undefined;
    this.idle?.cancel();
    this.idle = null;
    this.#live?.cancel();
    this.#live = null;
    this.#connectWatch?.cancel();
    this.#connectWatch = null;
    this.pool.remove(this);
    if (closeConn && this.conn !== null) {
      // Let a GOAWAY the codec queued go out first, briefly.
      const conn = this.conn;
      const out = this.codec.takeOutput();
      const finish = () => {
        try {
          conn.close();
        } catch { /* closed */ }
      };
      if (out === null || this.#writing) finish();
      else conn.write(out).then(finish, finish);
    }
    this.#wakeDrain();
  }
}

/** The sessions and the queue of one backend address. */
class Pool {
  readonly sessions: Session[] = [];
  readonly queue: Exchange[] = [];
  released = false;

  constructor(
    readonly key: string,
    readonly address: string,
    readonly tls: BackendTls | undefined,
    readonly transport: H2Transport,
  ) {}

  remove(s: Session): void {
    const i = this.sessions.indexOf(s);
    if (i >= 0) this.sessions.splice(i, 1);
    if (this.sessions.length === 0 && this.queue.length === 0) this.transport.forget(this);
    else this.pump();
  }

  /** Places queued exchanges on sessions with room, opening sessions up to the bound. */
  pump(): void {
    while (this.queue.length > 0) {
      const x = this.queue[0];
      if (x.state !== "queued") {
        this.queue.shift();
        continue;
      }
      const s = this.place(x);
      if (s === null) return;
      this.queue.shift();
      this.transport.assign(x, s);
    }
  }

  /** A session with room for `x`, a new one (opened for `x`) if allowed, or null. */
  place(x: Exchange): Session | null {
    let best: Session | null = null;
    for (const s of this.sessions) {
      if (s.hasRoom && (best === null || s.load < best.load)) best = s;
    }
    if (best !== null) return best;
    // A session still waiting for its SETTINGS takes one request (it may allow 1).
    if (this.sessions.length < this.transport.maxSessions && !this.released) {
      return this.transport.newSession(this, x.req.connectTimeoutMs);
    }
    return null;
  }
}

/** The transport; see {@link createH2Transport}. */
class H2Transport implements UpstreamTransport {
  readonly #pools = new Map<string, Pool>();
  readonly #connect: Connector;
  readonly #tlsFor: (address: string) => BackendTls | undefined;
  readonly maxSessions: number;
  readonly pingAfterMs: number;
  readonly pingTimeoutMs: number;
  readonly connectTimeoutMs: number;
  readonly #maxQueued: number;
  readonly #codec: H2ConnectionOptions | undefined;
  readonly #live = new Set<Exchange>();
  #closed = false;

  constructor(opts: H2TransportOptions) {
    this.maxSessions = opts.maxSessionsPerAddress ?? 8;
    this.#connect = opts.connect ?? createConnector({ maxStalledHandshakes: this.maxSessions });
    this.#tlsFor = opts.tlsFor ?? (() => undefined);
    this.pingAfterMs = opts.pingAfterMs ?? PING_AFTER_MS;
    this.pingTimeoutMs = opts.pingTimeoutMs ?? PING_TIMEOUT_MS;
    this.connectTimeoutMs = opts.connectTimeoutMs ?? CONNECT_TIMEOUT_MS;
    this.#maxQueued = opts.maxQueuedPerAddress ?? 4096;
    this.#codec = opts.codec;
  }

  forget(pool: Pool): void {
    if (this.#pools.get(pool.key) === pool) this.#pools.delete(pool.key);
  }

  /** Opens a session of `pool` with a connect deadline of `connectTimeoutMs` (default the transport's). */
  newSession(pool: Pool, connectTimeoutMs = this.connectTimeoutMs): Session {
    const s = new Session(pool, this.#codec, connectTimeoutMs);
    pool.sessions.push(s);
    s.start(this.#connect, pool.tls);
    return s;
  }

  exchange(req: UpstreamRequest): Promise<UpstreamResponse> {
    if (this.#closed) {
      return Promise.reject(new UpstreamError("aborted", "upstream transport closed"));
    }
    if (req.signal?.aborted) {
      return Promise.reject(
        abortedError(req.signal),
      );
    }
    const { promise, resolve, reject } = Promise.withResolvers<UpstreamResponse>();
    const x = new Exchange(req, resolve, reject);
    this.#live.add(x);
    x.watch = idleWatch(
      req.timeoutMs,
      () =>
        this.fail(
          x,
          new UpstreamError("timeout", `backend did not answer within ${req.timeoutMs} ms`),
        ),
    );
    x.onAbort = () => this.fail(x, abortedError(req.signal!));
    req.signal?.addEventListener("abort", x.onAbort, { once: true });
    this.#enqueue(x);
    return promise;
  }

  /** The pool of a request: one per address and TLS setting. */
  #poolOf(req: UpstreamRequest): Pool {
    const t = req.tls;
    const key = t === undefined
      ? req.address
      : `${req.address} tls ${t.ca ?? ""} ${t.server_name ?? ""}`;
    let pool = this.#pools.get(key);
    if (pool === undefined) {
      const tls = this.#tlsFor(req.address) ??
        (t === undefined ? undefined : { caFile: t.ca, serverName: t.server_name });
      pool = new Pool(key, req.address, tls, this);
      this.#pools.set(key, pool);
    }
    return pool;
  }

  #enqueue(x: Exchange): void {
    const pool = this.#poolOf(x.req);
    x.state = "queued";
    x.session = null;
    if (pool.queue.length === 0) {
      const s = pool.place(x);
      if (s !== null) return this.assign(x, s);
    }
    if (pool.queue.length >= this.#maxQueued) {
      return this.fail(
        x,
        new UpstreamError(
          "connect",
          `backend ${x.req.address}: all streams busy and ${this.#maxQueued} requests waiting`,
        ),
      );
    }
    pool.queue.push(x);
  }

  /** Puts a queued exchange on a session: opened now, or once its SETTINGS arrive. */
  assign(x: Exchange, s: Session): void {
    s.idle?.cancel();
    s.idle = null;
    x.session = s;
    if (s.ready) this.open(x, s);
    else s.waiting.push(x);
  }

  /** Opens the exchange's stream on `s` and starts its body. */
  open(x: Exchange, s: Session): void {
    if (x.state !== "queued") return;
    if (performance.now() >= x.deadline - Math.min(100, x.req.timeoutMs * 0.05)) {
      // Its timeout is due or all but (the sweeper runs it a little late): a
      // slot freed meanwhile must not open a stream nobody will wait for.
      return this.fail(
        x,
        new UpstreamError("timeout", `backend did not answer within ${x.req.timeoutMs} ms`),
      );
    }
    const req = x.req;
    const fields: Array<[string, string]> = [[":method", req.method], [":scheme", "http"]];
    if (s.pool.tls !== undefined) fields[1] = [":scheme", "https"];
    // No authority at all (neither `:authority` nor `host`): the backend's
    // address, as node:http2 sends (servers reject a request with neither).
    if (req.authority !== undefined) fields.push([":authority", req.authority]);
    else if (!req.headers.some((f) => f[0] === "host")) fields.push([":authority", req.address]);
    fields.push([":path", req.path]);
    for (const f of req.headers) fields.push([f[0], f[1]]);
    const r = s.codec.openStream(fields, {
      endStream: req.body === null,
      head: req.method === "HEAD",
    });
    if ("refused" in r) {
      if (r.refused === "too-large") {
        return this.fail(
          x,
          new UpstreamError("local", "request header list above the backend's limit"),
        );
      }
      // Lost the race for a slot: queue again.
      x.session = null;
      return this.#enqueue(x);
    }
    x.state = "open";
    x.openedAt = performance.now();
    x.stream = r.id;
    s.exchanges.set(r.id, x);
    if (req.body !== null) {
      this.#sendBody(x).catch((err) => {
        if (err instanceof UpstreamError) this.fail(x, err);
        else {this.fail(
            x,
            new UpstreamError("aborted", "client request body failed", { cause: err }),
          );}
      });
    }
    s.flush();
  }

  /**
   * Sends the request body: a whole body as the windows allow, a streamed
   * one chunk by chunk, reading the next chunk from the client only once the
   * previous one is taken and the socket has caught up.
   */
  async #sendBody(x: Exchange): Promise<void> {
    const body = x.req.body;
    if (body instanceof Uint8Array) {
      x.pending = body;
      x.pendingEnd = true;
      x.trailersOut = x.req.trailers?.() ?? null;
      await this.#sendPendingAll(x);
      return this.#maybeDone(x);
    }
    const reader = (body as ReadableStream<Uint8Array>).getReader();
    x.reader = reader;
    try {
      for (;;) {
        // Waiting on the client, not the backend: the client's own idle
        // timeout bounds this wait (a stalled upload is 408, not 503).
        if (!x.responseEnded) x.watch?.pause();
        const r = await reader.read();
        x.bodyTouched = true;
        if (x.state !== "open") return;
        if (!x.responseEnded) x.watch?.touch();
        const s = x.session!;
        if (!s.codec.hasStream(x.stream)) return;
        x.pending = r.done ? new Uint8Array(0) : r.value;
        x.pendingEnd = r.done;
        if (r.done) x.trailersOut = x.req.trailers?.() ?? null;
        await this.#sendPendingAll(x);
        if (r.done || x.state !== "open") return this.#maybeDone(x);
        await s.drained();
        if (!x.responseEnded) x.watch?.touch();
      }
    } finally {
      x.reader = null;
      try {
        reader.releaseLock();
      } catch { /* pending read */ }
    }
  }

  async #sendPendingAll(x: Exchange): Promise<void> {
    while (x.state === "open" && !this.#sendPendingOnce(x)) {
      await new Promise<void>((resolve) => x.wake = resolve);
      x.wake = null;
    }
  }

  /** Both directions are over once the stream left the codec and the response ended. */
  #maybeDone(x: Exchange): void {
    const s = x.session;
    if (s === null || x.state !== "open" || !x.responseEnded) return;
    if (s.codec.hasStream(x.stream)) return;
    s.exchanges.delete(x.stream);
    this.#finish(x);
    s.streamDone();
  }

  #sendPendingOnce(x: Exchange): boolean {
    const s = x.session!;
    if (!s.codec.hasStream(x.stream)) {
      x.pending = null;
      return true;
    }
    const data = x.pending!;
    const trailers = x.pendingEnd ? x.trailersOut : null;
    const n = s.codec.sendData(x.stream, data, x.pendingEnd && trailers === null);
    if (n > 0) x.watch?.touch();
    if (n === data.length) {
      // The trailers end the stream (RFC 9113 §8.1).
      if (trailers !== null) s.codec.sendTrailers(x.stream, trailers);
      s.flush();
      x.pending = null;
      return true;
    }
    s.flush();
    x.pending = data.subarray(n);
    return false;
  }

  onStreamEvent(
    x: Exchange,
    ev: Extract<H2Event, { type: "response" | "data" | "trailers" }>,
  ): void {
    const s = x.session!;
    if (ev.type === "response") {
      x.status = ev.status;
      x.headers = ev.headers;
      x.watch?.touch();
      if (
        ev.endStream || responseHasNoBody(x.req.method, ev.status) ||
        ev.contentLength === 0
      ) {
        if (ev.endStream) this.#responseEnded(x);
        this.#settle(x, null);
        return;
      }
      if (ev.contentLength > 0 && ev.contentLength <= WHOLE_BODY_LIMIT) {
        x.collected = [];
        return;
      }
      x.watch?.cancel();
      x.watch = null;
      const stream = x.stream;
      const body = new ReadableStream<Uint8Array>({
        start: (c) => {
          x.controller = c;
        },
        pull: () => {
          if (x.owed > 0 && x.session !== null) {
            x.session.codec.consume(stream, x.owed);
            x.owed = 0;
            x.session.flush();
          }
        },
        cancel: () => {
          x.controller = null;
          this.#cancelStream(x, H2Code.CANCEL);
          this.#finish(x);
        },
      }, { highWaterMark: RESPONSE_HIGH_WATER, size: (c) => c.byteLength });
      this.#settle(x, body);
      return;
    }
    if (ev.type === "data") {
      const n = ev.data.length;
      if (x.collected !== null) {
        if (n > 0) x.collected.push(ev.data.slice());
        s.codec.consume(x.stream, n);
        x.watch?.touch();
        if (ev.endStream) {
          const parts = x.collected;
          x.collected = null;
          let body: Uint8Array;
          if (parts.length === 1) body = parts[0];
          else {
            body = new Uint8Array(parts.reduce((a, p) => a + p.length, 0));
            let at = 0;
            for (const p of parts) {
              body.set(p, at);
              at += p.length;
            }
          }
          this.#responseEnded(x);
          this.#settle(x, body);
        }
        return;
      }
      const c = x.controller;
      if (c === null) {
        // No reader (HEAD, 204, 304, or a settled null body): keep the window open.
        s.codec.consume(x.stream, n);
        if (ev.endStream) this.#responseEnded(x);
        return;
      }
      if (n > 0) {
        c.enqueue(ev.data.slice());
        x.owed += n;
        if ((c.desiredSize ?? 0) > 0) {
          s.codec.consume(x.stream, x.owed);
          x.owed = 0;
        }
      }
      if (ev.endStream) {
        c.close();
        x.controller = null;
        this.#responseEnded(x);
      }
      return;
    }
    // Trailers end the response: with the head when it is not handed over
    // yet, else on the handed response before its body closes.
    if (x.response !== null) x.response.trailers = ev.headers;
    else x.trailers = ev.headers;
    if (x.collected !== null) {
      const parts = x.collected;
      x.collected = null;
      const body = new Uint8Array(parts.reduce((a, p) => a + p.length, 0));
      let at = 0;
      for (const p of parts) {
        body.set(p, at);
        at += p.length;
      }
      this.#responseEnded(x);
      this.#settle(x, body);
      return;
    }
    x.controller?.close();
    x.controller = null;
    this.#responseEnded(x);
  }

  /** The backend's response is complete: the stream may still take request body. */
  #responseEnded(x: Exchange): void {
    x.responseEnded = true;
    const s = x.session;
    if (s === null) return;
    if (!s.codec.hasStream(x.stream)) {
      // Both directions are done.
      s.exchanges.delete(x.stream);
      this.#finish(x);
      s.streamDone();
      return;
    }
    // RFC 9113 §8.1: the answer is complete while we still send: the backend
    // may want the rest or reset with NO_ERROR; either way the answer stands.
  }

  onStreamError(x: Exchange, ev: Extract<H2Event, { type: "stream-error" }>): void {
    const { code, message } = ev;
    if (x.state === "done") return;
    const responseDone = x.settled && x.controller === null && x.collected === null;
    if (responseDone) {
      // The answer was complete: a reset after it takes nothing away.
      this.#finish(x);
      return;
    }
    if (ev.local) {
      return this.fail(
        x,
        new UpstreamError(
          "protocol",
          `backend sent a malformed response: ${h2CodeName(code)}: ${message}`,
        ),
        false,
      );
    }
    if (code === H2Code.REFUSED_STREAM) return this.#refused(x, ev.answered, message);
    this.fail(
      x,
      new UpstreamError("reset", `backend reset the stream (code ${code}, ${h2CodeName(code)})`),
      false,
    );
  }

  /**
   * The backend refused `x`'s stream (REFUSED_STREAM, or above a GOAWAY's
   * last stream id). Before any response head that proves it did not
   * process the request (RFC 9113 §8.7): `connect`, replayed at once when
   * the retry rule allows ({@link mayReplay}) and the body can be sent
   * again. After one (`answered`, a 1xx included) it did process it, and
   * the refusal is a lie: `protocol`, never replayed.
   */
  #refused(x: Exchange, answered: boolean, message: string): void {
    const err = answered || x.status !== 0
      ? new UpstreamError(
        "protocol",
        `backend refused the stream after a response head (${message}): it processed the request (RFC 9113 §8.7)`,
      )
      : new UpstreamError("connect", `backend refused the stream, unprocessed (${message})`);
    if (mayReplay(outcomeOfError(err, undefined)) && x.replayable && x.replays < MAX_REPLAYS) {
      x.replays++;
      x.session = null;
      x.stream = 0;
      x.state = "queued";
      x.pending = null;
      x.wake = null;
      return this.#enqueue(x);
    }
    this.fail(x, err, false);
  }

  /** Resets `x`'s stream if it is still open on its session. */
  #cancelStream(x: Exchange, code: number): void {
    const s = x.session;
    if (s === null || x.stream === 0) return;
    if (s.exchanges.get(x.stream) === x) s.exchanges.delete(x.stream);
    if (s.codec.hasStream(x.stream)) {
      if (
        code !== H2Code.CANCEL ||
        s.resets.admit(x.stream, x.status !== 0, x.openedAt, performance.now())
      ) {
        s.codec.resetStream(x.stream, code);
        s.flush();
      } else {
        // Past the budget: the stream stays open at the backend a little longer.
        s.armResets();
      }
    }
    s.streamDone();
  }

  #settle(x: Exchange, body: Uint8Array | ReadableStream<Uint8Array> | null): void {
    if (x.settled) return;
    x.settled = true;
    if (!(body instanceof ReadableStream)) {
      x.watch?.cancel();
      x.watch = null;
    }
    const res: UpstreamResponse = { status: x.status, headers: x.headers, body };
    if (x.trailers !== undefined) res.trailers = x.trailers;
    if (body instanceof ReadableStream) x.response = res;
    x.resolve(res);
  }

  /** The exchange is over: drop its listeners. */
  #finish(x: Exchange): void {
    if (x.state === "done") return;
    x.state = "done";
    x.watch?.cancel();
    x.watch = null;
    if (x.onAbort) x.req.signal?.removeEventListener("abort", x.onAbort);
    x.onAbort = null;
    x.reader?.cancel().catch(() => {});
    x.wake?.();
    this.#live.delete(x);
  }

  /**
   * Fails an exchange: before its head the promise rejects, after it the body
   * stream errors; a stream still open is reset (CANCEL), a queued one never opens.
   */
  fail(x: Exchange, err: UpstreamError, reset = true): void {
    if (x.state === "done") return;
    if (x.state === "queued") {
      const s = x.session;
      if (s !== null) {
        const i = s.waiting.indexOf(x);
        if (i >= 0) s.waiting.splice(i, 1);
      } else {
        for (const pool of this.#pools.values()) {
          const i = pool.queue.indexOf(x);
          if (i >= 0) pool.queue.splice(i, 1);
        }
      }
    } else if (reset) {
      this.#cancelStream(x, H2Code.CANCEL);
    } else if (x.session !== null) {
      x.session.exchanges.delete(x.stream);
      x.session.streamDone();
    }
    if (!x.settled) {
      x.settled = true;
      x.reject(err);
    } else if (x.controller !== null) {
      try {
        x.controller.error(err);
      } catch { /* closed */ }
      x.controller = null;
    }
    x.collected = null;
    this.#finish(x);
  }

  release(address: string): void {
    for (const [key, pool] of [...this.#pools]) {
      if (pool.address !== address) continue;
      this.#pools.delete(key);
      pool.released = true;
      for (const s of [...pool.sessions]) {
        if (s.exchanges.size === 0 && s.waiting.length === 0) s.close();
      }
    }
  }

  close(): Promise<void> {
    this.#closed = true;
    for (const x of [...this.#live]) {
      this.fail(x, new UpstreamError("aborted", "upstream transport closed"));
    }
    for (const pool of [...this.#pools.values()]) {
      for (const s of [...pool.sessions]) s.close();
    }
    this.#pools.clear();
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
