/**
 * The HTTP/2 sessions to one backend address, and the admission of the
 * requests waiting for a stream on them. A request opens its stream on the
 * least loaded session with room under the backend's
 * SETTINGS_MAX_CONCURRENT_STREAMS; when all are full another session is
 * opened (up to {@link PoolOptions.maxSessions}); past that it waits in a
 * bounded queue, and past the bound it fails `connect` (nothing reached the
 * backend).
 *
 * A session that does not connect within its deadline fails the request it
 * was opened for, and any that already moved once (`connect`: nothing was
 * sent); the others waiting on it move to a new session, so one stuck
 * connection does not fail them all, and none waits through more than two.
 *
 * The pool creates its sessions and wires their events: what concerns
 * placement (room, a session gone, a connect timeout) it handles, what
 * concerns one exchange goes to that exchange.
 *
 * @module
 */

import type { H2ConnectionOptions } from "../h2/mod.ts";
import type { BackendTls, Connector } from "./backend_connect.ts";
import type { AddressConnections } from "./connection_stats.ts";
import { type Exchange, failSessionExchanges } from "./h2_exchange.ts";
import { H2Session } from "./h2_session.ts";
import { UpstreamError } from "./transport.ts";

/** Times a request moves to a new session after the one it waited on timed out connecting. */
const MAX_MOVES = 1;

/** Options of {@link H2Pool}. */
export interface PoolOptions {
  /** Opens the byte stream to the backend. */
  readonly connect: Connector;
  /** Codec settings of its sessions. */
  readonly codec: H2ConnectionOptions | undefined;
  /** Sessions at most. */
  readonly maxSessions: number;
  /** Requests waiting for a stream at most. */
  readonly maxQueued: number;
  /** Connect deadline of a session opened for a request that gives none (ms). */
  readonly connectTimeoutMs: number;
  /** Streams open and nothing received this long: PING (ms). */
  readonly pingAfterMs: number;
  /** A PING unanswered this long ends a session (ms). */
  readonly pingTimeoutMs: number;
  /** The pool has no session and nothing queued: it may be dropped. */
  readonly empty: (pool: H2Pool) => void;
}

/** The sessions and the queue of one backend address (and TLS setting). */
export class H2Pool {
  readonly sessions: H2Session<Exchange>[] = [];
  readonly queue: Exchange[] = [];
  #retired = false;
  readonly #opts: PoolOptions;

  constructor(
    readonly key: string,
    readonly address: string,
    readonly tls: BackendTls | undefined,
    opts: PoolOptions,
    readonly counts?: AddressConnections,
  ) {
    this.#opts = opts;
  }

  /**
   * Places `x` on a session with room, or queues it; past the queue's bound,
   * the error to fail it with (`connect`: nothing reached the backend).
   */
  admit(x: Exchange): UpstreamError | null {
    x.state = "queued";
    x.session = null;
    if (this.queue.length === 0) {
      const s = this.#place(x);
      if (s !== null) {
        this.#assign(x, s);
        return null;
      }
    }
    if (this.queue.length >= this.#opts.maxQueued) {
      return new UpstreamError(
        "connect",
        `backend ${x.req.address}: all streams busy and ${this.#opts.maxQueued} requests waiting`,
      );
    }
    this.queue.push(x);
    return null;
  }

  /** Takes `x` out of the queue, if it waits there. */
  unqueue(x: Exchange): void {
    const i = this.queue.indexOf(x);
    if (i >= 0) this.queue.splice(i, 1);
  }

  /**
   * The address left the configuration: no new session; each session closes
   * once its exchanges are over (at once when it has none).
   */
  retire(): void {
    this.#retired = true;
    for (const s of [...this.sessions]) {
      s.closeWhenIdle = true;
      if (s.streams.size === 0 && s.waiting.length === 0) s.close("retired");
    }
  }

  /** Closes every session. */
  close(): void {
    for (const s of [...this.sessions]) s.close("shutdown");
  }

  /** Places queued exchanges on sessions with room, opening sessions up to the bound. */
  #pump(): void {
    while (this.queue.length > 0) {
      const x = this.queue[0];
      if (x.state !== "queued") {
        this.queue.shift();
        continue;
      }
      const s = this.#place(x);
      if (s === null) return;
      this.queue.shift();
      this.#assign(x, s);
    }
  }

  /** A session with room for `x`, a new one (opened for `x`) if allowed, or null. */
  #place(x: Exchange): H2Session<Exchange> | null {
    let best: H2Session<Exchange> | null = null;
    for (const s of this.sessions) {
      if (s.hasRoom && (best === null || s.load < best.load)) best = s;
    }
    if (best !== null) return best;
    // A session still waiting for its SETTINGS takes one request (it may allow 1).
    if (this.sessions.length < this.#opts.maxSessions && !this.#retired) {
      return this.#newSession(x.req.connectTimeoutMs ?? this.#opts.connectTimeoutMs);
    }
    return null;
  }

  /** Puts a queued exchange on a session: opened now, or once its SETTINGS arrive. */
  #assign(x: Exchange, s: H2Session<Exchange>): void {
    s.keep();
    if (s.carried++ > 0 && this.counts) this.counts.reused++;
    x.session = s;
    if (s.ready) x.open(s);
    else s.waiting.push(x);
  }

  /** Opens a session with a connect deadline of `connectTimeoutMs`. */
  #newSession(connectTimeoutMs: number): H2Session<Exchange> {
    const s: H2Session<Exchange> = new H2Session<Exchange>({
      address: this.address,
      tls: this.tls,
      codec: this.#opts.codec,
      connectTimeoutMs,
      pingAfterMs: this.#opts.pingAfterMs,
      pingTimeoutMs: this.#opts.pingTimeoutMs,
      counts: this.counts,
      events: {
        start: (x) => {
          if (x.state === "queued" && x.session === s) x.open(s);
        },
        stream: (x, ev) => x.onStreamEvent(ev),
        streamError: (x, ev) => x.onStreamError(ev),
        writable: (x) => x.writable(),
        room: () => this.#pump(),
        connectTimedOut: (waiting, err) => this.#connectTimedOut(s, waiting, err),
        failed: failSessionExchanges,
        gone: () => this.#remove(s),
      },
    });
    this.sessions.push(s);
    s.start(this.#opts.connect);
    return s;
  }

  /**
   * `s` did not connect in time: of the requests that waited on it, the
   * first (the one it was opened for) and any that already moved once fail
   * with `err`; the others go to the front of the queue, for the new
   * session the pool opens once `s` is gone.
   */
  #connectTimedOut(s: H2Session<Exchange>, waiting: Exchange[], err: UpstreamError): void {
    const mine = waiting.filter((x) => x.state === "queued" && x.session === s);
    for (const x of mine) x.session = null;
    const failing = mine.filter((x, i) => i === 0 || x.moves >= MAX_MOVES);
    const moving = mine.filter((x) => !failing.includes(x));
    for (const x of moving) x.moves++;
    this.queue.unshift(...moving);
    for (const x of failing) x.fail(err);
  }

  #remove(s: H2Session<Exchange>): void {
    const i = this.sessions.indexOf(s);
    if (i >= 0) this.sessions.splice(i, 1);
    if (this.sessions.length === 0 && this.queue.length === 0) this.#opts.empty(this);
    else this.#pump();
  }
}
