/**
 * One HTTP/2 connection to a backend, on the project's sans-IO codec
 * (`proxy/h2/`): the socket's read and write loops, the connect deadline
 * (TCP connect, TLS handshake and the backend's first SETTINGS together), a
 * PING when the backend has been silent with streams open, GOAWAY, the
 * pacing of stream resets (`reset_budget.ts`) and the idle close.
 *
 * It knows nothing of what rides its streams: each stream carries an
 * attachment `X` (an exchange), and whatever happens to the connection or a
 * stream is told to the owner through the {@link SessionEvents} given at
 * creation. The owner calls down (open a stream through the codec, send,
 * reset, close); the session never calls up but through those events.
 *
 * @module
 */

import { writeAll } from "../../shared/bytes.ts";
import { type IdleWatch, idleWatch } from "../../shared/deadline.ts";
import {
  H2ClientConnection,
  H2Code,
  h2CodeName,
  type H2ConnectionOptions,
  type H2Event,
  MAX_WINDOW,
} from "../h2/mod.ts";
import type { BackendTls, Connector } from "./backend_connect.ts";
import {
  type AddressConnections,
  CLOSE_REASON_OF_FAILURE,
  type UpstreamCloseReason,
} from "./connection_stats.ts";
import { ResetBudget } from "./reset_budget.ts";
import { UpstreamError } from "./transport.ts";

/** A session without streams for this long is closed (ms). */
export const SESSION_IDLE_MS = 30_000;
/** Request body bytes queued for the socket before the next chunk is read from the client. */
const WRITE_HIGH_WATER = 256 * 1024;
/**
 * The largest frame a backend may send (SETTINGS_MAX_FRAME_SIZE): 64 KiB,
 * not the protocol's 16 KiB, so a download arrives in a quarter as many DATA
 * frames, each one read, handed on and written to the client as one piece
 * (`body_io.ts` writes DATA frames of up to 64 KiB): a quarter of the
 * per-chunk work and garbage.
 */
const MAX_FRAME_SIZE = 64 * 1024;
/** Size of each session's read buffer: several of the largest frames, so few straddle two reads. */
const READ_BUFFER = 4 * MAX_FRAME_SIZE;
/** Each stream's receive window (SETTINGS_INITIAL_WINDOW_SIZE), the codec's default. */
export const STREAM_WINDOW = 256 * 1024;
/** The least connection receive window of a session (see {@link sessionCodecOptions}). */
const MIN_CONNECTION_WINDOW = 4 * 1024 * 1024;
/** Stream windows a session's connection window holds (see {@link sessionCodecOptions}). */
const STREAM_WINDOWS_PER_CONNECTION = 16;

/**
 * The codec options of a session: `given`, with the connection window's
 * credit returned as readers take the bytes (`on-consume`: what makes the
 * connection window bound what a session holds unread; the exchanges
 * `consume` every octet of every `data` event once taken and `discard` what
 * a cancelled body held), frames of up to {@link MAX_FRAME_SIZE} and,
 * unless `given` sets one, a connection window of max(4 MiB, 16 stream
 * windows): 4 MiB against the default 256 KiB stream window.
 *
 * Why that size: a reader that stalls holds at most one stream window, so
 * it takes 16 stalled readers (of a backend's typical 100 to 128 streams)
 * to close a session's window and hold up its other streams, which the RFC
 * intends (RFC 9113 §5.2); a handful leaves the others most of it. And what
 * slow clients make one session hold is 4 MiB, not a stream window per
 * stream (25 MiB on 100 streams). Envoy's edge settings keep the same ratio
 * (64 KiB streams, 1 MiB connection); hyper's client keeps 2.5 (2 MiB
 * streams, 5 MiB connection), where two stalled streams nearly block a
 * connection; Go's transport (4 MiB streams, 1 GiB connection) leaves the
 * connection window unbounded in practice. The floor keeps the session's
 * throughput (at most a window per round trip: 400 MB/s at 10 ms) when a
 * caller picks small stream windows.
 */
export function sessionCodecOptions(given: H2ConnectionOptions | undefined): H2ConnectionOptions {
  const streamWindow = given?.streamWindow ?? STREAM_WINDOW;
  const connectionWindow = given?.connectionWindow ??
    Math.min(
      MAX_WINDOW,
      Math.max(MIN_CONNECTION_WINDOW, STREAM_WINDOWS_PER_CONNECTION * streamWindow),
    );
  const maxFrameSize = given?.maxFrameSize ?? MAX_FRAME_SIZE;
  return { ...given, streamWindow, connectionWindow, maxFrameSize, connectionCredit: "on-consume" };
}

/** A response head, body bytes or trailers of one stream. */
export type StreamEvent = Extract<H2Event, { type: "response" | "data" | "trailers" }>;
/** A stream that ended abnormally (reset by either side, refused). */
export type StreamErrorEvent = Extract<H2Event, { type: "stream-error" }>;

/** What a session tells its owner; `X` is what rides a stream. */
export interface SessionEvents<X> {
  /** The backend's first SETTINGS are in: `x`, given to the session before them, may open. */
  start(x: X): void;
  /** A response head, body bytes or trailers on `x`'s stream. */
  stream(x: X, ev: StreamEvent): void;
  /** `x`'s stream ended abnormally; it has left {@link H2Session.streams}. */
  streamError(x: X, ev: StreamErrorEvent): void;
  /** `x`'s stream may send again (flow-control credit arrived). */
  writable(x: X): void;
  /** A stream slot may have freed, or the session stopped taking streams: place waiting requests. */
  room(): void;
  /**
   * The connect deadline passed before the backend's SETTINGS: `waiting`
   * are the requests given to the session (nothing of them was sent). The
   * session closes right after.
   */
  connectTimedOut(waiting: X[], err: UpstreamError): void;
  /**
   * The session failed and is closed: `waiting` sent nothing, `open` had
   * streams; `err` says why (its kind: `connect`, `reset`, `protocol` or
   * `timeout`).
   */
  failed(waiting: X[], open: X[], err: UpstreamError): void;
  /** The session closed; nothing follows. */
  gone(): void;
}

/** Options of {@link H2Session}. */
export interface SessionOptions<X> {
  /** The backend's `host:port`. */
  readonly address: string;
  /** TLS towards it; absent: h2c with prior knowledge. */
  readonly tls: BackendTls | undefined;
  /** Codec settings (windows, frame size, limits). */
  readonly codec: H2ConnectionOptions | undefined;
  /** Deadline of TCP connect, TLS handshake and the backend's first SETTINGS (ms). */
  readonly connectTimeoutMs: number;
  /** Streams open and nothing received this long: PING (ms). */
  readonly pingAfterMs: number;
  /** A PING unanswered this long ends the session (ms). */
  readonly pingTimeoutMs: number;
  /** Where what happens goes. */
  readonly events: SessionEvents<X>;
  /** The address's connection counters (`/metrics`); absent: not counted. */
  readonly counts?: AddressConnections;
}

/** One HTTP/2 connection to a backend; `X` is what rides each stream. */
export class H2Session<X> {
  readonly codec: H2ClientConnection;
  /** What rides each open stream, by stream id. */
  readonly streams = new Map<number, X>();
  /** Requests given to this session before its SETTINGS arrived. */
  readonly waiting: X[] = [];
  /** Streams it has been given so far (a stream after the first one reuses it). */
  carried = 0;
  /** The backend's SETTINGS are in: streams may open. */
  ready = false;
  closed = false;
  /** Closed as soon as it has no stream (its address left the configuration). */
  closeWhenIdle = false;
  readonly #opts: SessionOptions<X>;
  readonly #events: SessionEvents<X>;
  #conn: Deno.Conn | null = null;
  #writing = false;
  #drainWaiters: Array<() => void> = [];
  #idle: IdleWatch | null = null;
  #live: IdleWatch | null = null;
  #pingOut = false;
  /** The connect deadline: TCP connect, TLS handshake and the backend's first SETTINGS. */
  #connectWatch: IdleWatch | null = null;
  /** Aborted at the connect deadline: the connector gives up. */
  readonly #connecting = new AbortController();
  /** Paces resets of streams the backend may not have accepted yet (`reset_budget.ts`). */
  readonly #resets = new ResetBudget();
  /** The backend's GOAWAY, as a suffix (" after GOAWAY …") for the failure of the streams it left open, or "". */
  #goaway = "";
  #resetTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(opts: SessionOptions<X>) {
    this.#opts = opts;
    this.#events = opts.events;
    this.codec = new H2ClientConnection(sessionCodecOptions(opts.codec));
  }

  /** The backend's `host:port`. */
  get address(): string {
    return this.#opts.address;
  }

  /** `:scheme` of the requests on this session. */
  get scheme(): "http" | "https" {
    return this.#opts.tls === undefined ? "http" : "https";
  }

  /** Streams open plus those promised to this session. */
  get load(): number {
    return this.codec.activeStreams + this.waiting.length;
  }

  /** Whether another stream may be given to it. */
  get hasRoom(): boolean {
    if (this.closed || this.codec.closedForNewStreams) return false;
    return this.load < this.codec.peerMaxConcurrentStreams;
  }

  /** Connects (`connect`), then reads and writes until the session ends. */
  async start(connect: Connector): Promise<void> {
    const wait = this.#opts.connectTimeoutMs;
    this.#connectWatch = idleWatch(wait, () => {
      this.#connectWatch = null;
      if (!this.ready) this.#connectTimedOut(wait);
    });
    let conn: Deno.Conn;
    try {
      conn = await connect(this.address, this.#opts.tls, this.#connecting.signal);
    } catch (err) {
      if (this.closed) return;
      if (this.#opts.counts) this.#opts.counts.connectFailures++;
      return this.fail(
        err instanceof UpstreamError ? err : new UpstreamError(
          "connect",
          `cannot connect to ${this.address}: ${(err as Error).message}`,
          { cause: err },
        ),
      );
    }
    if (this.closed) return closeQuietly(conn);
    this.#conn = conn;
    this.#opts.counts?.established();
    this.flush();
    this.#readLoop();
  }

  /** A request is coming: the idle close is off. */
  keep(): void {
    this.#idle?.cancel();
    this.#idle = null;
  }

  /**
   * The connect deadline passed before the backend's SETTINGS: the owner
   * decides what becomes of the requests that waited, then the session closes.
   */
  #connectTimedOut(wait: number): void {
    if (this.closed) return;
    const err = new UpstreamError(
      "connect",
      this.#conn === null
        ? `backend ${this.address}: connection (TCP connect, TLS handshake) not established within connect_timeout_ms (${wait} ms)`
        : `backend ${this.address}: no HTTP/2 SETTINGS received within connect_timeout_ms (${wait} ms); not an HTTP/2 server?`,
    );
    this.#connecting.abort(err);
    if (this.#conn === null && this.#opts.counts) this.#opts.counts.connectFailures++;
    this.#events.connectTimedOut(this.waiting.splice(0), err);
    this.#shut("timeout");
  }

  /** Writes what the codec queued, in order; one writer at a time. */
  flush(): void {
    if (this.#writing || this.#conn === null || this.closed) return;
    if (this.codec.pendingOutput === 0) return; // nothing queued (most reads of a download)
    this.#writing = true;
    this.#writeLoop().catch((err) => {
      this.#writing = false;
      this.#wakeDrain();
      this.fail(
        new UpstreamError(
          "reset",
          `write to backend failed: ${(err as Error).message}${this.#goaway}`,
        ),
        "error",
      );
    });
  }

  async #writeLoop(): Promise<void> {
    const conn = this.#conn!;
    for (;;) {
      const out = this.codec.takeOutput();
      if (out === null || this.closed) {
        // Cleared in the same turn as the check: a flush() after it starts a new loop.
        this.#writing = false;
        this.#wakeDrain();
        return;
      }
      await writeAll(conn, out);
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
    const conn = this.#conn!;
    const buf = new Uint8Array(READ_BUFFER);
    this.#live = idleWatch(this.#opts.pingAfterMs, () => this.#silent());
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
      this.fail(new UpstreamError("reset", `backend closed the connection${this.#goaway}`));
    } catch (err) {
      if (this.closed) return;
      this.fail(
        new UpstreamError(
          "reset",
          `backend connection failed: ${(err as Error).message}${this.#goaway}`,
          { cause: err },
        ),
        "error",
      );
    }
  }

  /** Nothing received for a while: with streams open, PING; unanswered, give up. */
  #silent(): void {
    if (this.closed) return;
    if (this.#pingOut) {
      return this.fail(new UpstreamError("timeout", "backend did not answer a PING"));
    }
    if (this.streams.size > 0) {
      this.#pingOut = true;
      this.codec.ping(new Uint8Array(8));
      this.flush();
      this.#live = idleWatch(this.#opts.pingTimeoutMs, () => this.#silent());
    } else {
      this.#live = idleWatch(this.#opts.pingAfterMs, () => this.#silent());
    }
  }

  #event(ev: H2Event): void {
    switch (ev.type) {
      case "settings":
        return this.#settings();
      case "response":
        // The backend took this stream, so every earlier one too: resets wait less.
        if (!this.#resets.empty) this.#sendResets(this.#resets.answered(ev.stream, now()));
        return this.#toStream(ev);
      case "data":
      case "trailers":
        return this.#toStream(ev);
      case "stream-error":
        return this.#streamError(ev);
      case "send-window":
        return this.#sendWindow(ev.stream);
      case "goaway":
        return this.#goingAway(ev);
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
        );
    }
  }

  #settings(): void {
    if (!this.ready) {
      this.ready = true;
      this.#connectWatch?.cancel();
      this.#connectWatch = null;
      // Opened up to the backend's limit; the rest go back to the owner's queue.
      for (const x of this.waiting.splice(0)) this.#events.start(x);
    }
    this.#events.room();
  }

  #toStream(ev: StreamEvent): void {
    const x = this.streams.get(ev.stream);
    if (x !== undefined) this.#events.stream(x, ev);
    // Nobody reads it (its exchange left, its reset waits for the budget): its credit returns.
    else if (ev.type === "data") this.codec.consume(ev.stream, ev.data.length);
  }

  #streamError(ev: StreamErrorEvent): void {
    const x = this.streams.get(ev.stream);
    if (x === undefined) return;
    this.streams.delete(ev.stream);
    this.#events.streamError(x, ev);
    this.streamDone();
  }

  #sendWindow(stream: number): void {
    if (stream !== 0) {
      const x = this.streams.get(stream);
      if (x !== undefined) this.#events.writable(x);
      return;
    }
    for (const x of this.streams.values()) this.#events.writable(x);
  }

  #goingAway(ev: Extract<H2Event, { type: "goaway" }>): void {
    this.#goaway = ` after GOAWAY ${h2CodeName(ev.code)} (last stream ${ev.lastStreamId}${
      ev.debug === "" ? "" : `, "${ev.debug}"`
    })`;
    this.#events.room();
    if (this.streams.size === 0) this.close("peer_closed");
  }

  /**
   * Resets `stream` with `code` if the codec still has it. A CANCEL of a
   * stream the backend may not have accepted yet (no response head, young:
   * `answered`, `openedAt`) goes out within the reset budget; past it, it
   * waits for the budget's timer (the stream stays open at the backend a
   * little longer).
   */
  resetStream(stream: number, code: number, answered: boolean, openedAt: number): void {
    if (!this.codec.hasStream(stream)) return;
    if (code !== H2Code.CANCEL || this.#resets.admit(stream, answered, openedAt, now())) {
      this.codec.resetStream(stream, code);
      this.flush();
    } else {
      this.#armResets();
    }
  }

  /**
   * Resets (CANCEL) the streams the client left whose reset waited for the
   * budget, and re-arms the timer for the ones still waiting.
   */
  #sendResets(streams: number[]): void {
    if (streams.length === 0 || this.closed) return;
    for (const stream of streams) {
      if (this.codec.hasStream(stream)) this.codec.resetStream(stream, H2Code.CANCEL);
    }
    this.flush();
    this.#armResets();
    this.streamDone();
  }

  /** Sets the timer for when the next waiting reset may go out (none while none waits). */
  #armResets(): void {
    clearTimeout(this.#resetTimer);
    this.#resetTimer = undefined;
    const next = this.#resets.nextDue();
    if (next === null || this.closed) return;
    this.#resetTimer = setTimeout(() => {
      this.#resetTimer = undefined;
      const due = this.#resets.due(now());
      if (due.length > 0) this.#sendResets(due);
      else this.#armResets();
    }, Math.max(1, Math.ceil(next - now())));
  }

  /** `stream`'s exchange is over: it leaves the session (see {@link streamDone}). */
  detach(stream: number): void {
    this.streams.delete(stream);
    this.streamDone();
  }

  /** A stream finished (either way): idle bookkeeping and the queue. */
  streamDone(): void {
    if (this.closed) return;
    const unused = this.streams.size === 0 && this.codec.activeStreams === 0;
    // Closed for new streams: the backend's GOAWAY (a failure of ours fails the session).
    if (unused && this.codec.closedForNewStreams) return this.close("peer_closed");
    if (unused && this.waiting.length === 0) {
      if (this.closeWhenIdle) return this.close("retired");
      this.#idle?.cancel();
      this.#idle = idleWatch(SESSION_IDLE_MS, () => {
        this.#idle = null;
        if (this.streams.size === 0 && this.waiting.length === 0) this.close("idle");
      });
    }
    this.#events.room();
  }

  /**
   * Fails everything on the session with `err` and drops it; `why` it
   * closed (for the counters) follows from `err`'s kind unless given.
   */
  fail(err: UpstreamError, why: UpstreamCloseReason = CLOSE_REASON_OF_FAILURE[err.kind]): void {
    if (this.closed) return;
    this.#shut(why);
    const waiting = this.waiting.splice(0);
    const open = [...this.streams.values()];
    this.streams.clear();
    this.#events.failed(waiting, open, err);
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
  close(why: UpstreamCloseReason): void {
    if (this.closed) return;
    const conn = this.#conn;
    this.#shut(why, false);
    if (conn !== null) this.#closeAfterOutput(conn);
  }

  #shut(why: UpstreamCloseReason, closeConn = true): void {
    this.closed = true;
    if (this.#conn !== null) this.#opts.counts?.closed(why);
    clearTimeout(this.#resetTimer);
    this.#resetTimer = undefined;
    this.keep();
    this.#live?.cancel();
    this.#live = null;
    this.#connectWatch?.cancel();
    this.#connectWatch = null;
    this.#events.gone();
    // Let a GOAWAY the codec queued go out first, briefly.
    if (closeConn && this.#conn !== null) this.#closeAfterOutput(this.#conn);
    this.#wakeDrain();
  }

  /** Writes what the codec still holds (unless a write is under way), then closes `conn`. */
  #closeAfterOutput(conn: Deno.Conn): void {
    const out = this.codec.takeOutput();
    const finish = () => closeQuietly(conn);
    if (out === null || this.#writing) finish();
    else conn.write(out).then(finish, finish);
  }
}

function closeQuietly(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch { /* closed */ }
}

const now = () => performance.now();
