/**
 * The open connections of one `serve_connections.ts` server: their records,
 * the counters, the timeouts (one interval timer checks every connection),
 * shedding at the cap, and handing a connection to the runtime's HTTP
 * server. See `serve_connections.ts` for the rules it keeps.
 *
 * @module
 */
import type { Logger } from "@logtape/logtape";
import type { TakenConnection, TakeOver } from "./connection_takeover.ts";
import type { ConnectionLimits, ConnectionStats } from "./serve_connections.ts";
import {
  type CancelHook,
  closeQuietly,
  type ConnectionHttp,
  type ServeOnConnection,
  WarnOnce,
} from "./serve_on_connection.ts";

/** One accepted connection. */
export interface Connection {
  /** The runtime's HTTP server on it, once handed over. */
  http?: ConnectionHttp;
  /** Cancels it at once (given by the runtime). */
  cancel?: () => void;
  /** Requests whose response is not fully sent yet. */
  inFlight: number;
  /** Whether a request head has ever arrived. */
  served: boolean;
  /** Set by every request start and end; cleared by the sweep. */
  touched: boolean;
  /** `performance.now()` when the sweep last saw it busy or touched (or when accepted). */
  quietSince: number;
  /** Being closed: not shed, not timed out again. */
  closing: boolean;
  /** A TLS connection whose handshake is not done: it cannot be closed yet. */
  handshaking?: boolean;
  /** Relayed (`tls_relay.ts`): the client's connection and the loopback one. */
  relay?: RelayLink;
}

/** What the table needs of a relayed connection's sockets (`tls_relay.ts`). */
export interface RelayLink {
  /** Closes the client's socket and the loopback one. */
  close(): void;
  /** Resolved when the relay's record is gone. */
  readonly ended: Promise<void>;
}

/** What a {@link ConnectionTable} is built from. */
export interface ConnectionTableOptions {
  /** The limits in force, checked. */
  limits: Readonly<ConnectionLimits>;
  /** Serves every request. */
  handler: Deno.ServeHandler<Deno.NetAddr>;
  /** Answers a request whose handler threw. */
  onError: (error: unknown) => Response | Promise<Response>;
  /** The runtime's per-connection HTTP server. */
  serveOn: ServeOnConnection;
  /** Where warnings go. */
  log: Logger;
  /** What the listener is called in log lines. */
  name: string;
  /** The setting of `maxConnections`, named in warnings. */
  setting: string;
  /** Interval between warnings of one kind. */
  warnEveryMs: number;
  /** Relay mode: `stats` counts `notRelayed`. */
  relayed: boolean;
  /** Relay mode: offered the first request head of each HTTP/1.1 connection (`connection_takeover.ts`). */
  takeOver?: TakeOver;
}

/**
 * The open connections and their counters. Connections a newcomer at the
 * cap may shed are kept oldest first (a Set keeps insertion order): those
 * with no request head yet, by accept; those idle between requests, by when
 * their last response ended.
 */
export class ConnectionTable {
  /** Where warnings go. */
  readonly log: Logger;
  /** What the listener is called in log lines. */
  readonly name: string;
  /** The limits in force. */
  readonly limits: Readonly<ConnectionLimits>;
  /** The counters, updated in place by the server and its relay. */
  readonly stats: ConnectionStats;
  /** Offered the first request head of each HTTP/1.1 connection of the relay, if set. */
  readonly takeOver: TakeOver | undefined;
  readonly #opts: ConnectionTableOptions;
  readonly #open = new Set<Connection>();
  readonly #waiting = new Set<Connection>();
  readonly #idle = new Set<Connection>();
  readonly #shedWarning: WarnOnce;
  readonly #acceptWarning: WarnOnce<{ err: unknown; pauseMs: number }>;
  #sweeper: ReturnType<typeof setInterval> | undefined;
  #stopped = false;

  /** An empty table; nothing is timed out until {@link startSweeping}. */
  constructor(opts: ConnectionTableOptions) {
    this.#opts = opts;
    this.log = opts.log;
    this.name = opts.name;
    this.limits = opts.limits;
    this.takeOver = opts.takeOver;
    const { name, setting } = opts;
    const max = opts.limits.maxConnections;
    this.#shedWarning = new WarnOnce(opts.warnEveryMs, (count) =>
      this.log.warn(
        "{name}: {max} connections open ({setting}): closed {count} connection(s) with no " +
          "request in flight to admit newcomers since the last warning",
        { name, max, setting, count },
      ));
    this.#acceptWarning = new WarnOnce(opts.warnEveryMs, (count, { err, pauseMs }) =>
      this.log.warn(
        "{name}: accept failed {count} time(s) since the last warning: {error}; " +
          "{open} connections open; accepting again in {ms} ms",
        {
          name,
          count,
          error: err instanceof Error ? err.message : String(err),
          open: this.#open.size,
          ms: pauseMs,
        },
      ));
    this.stats = {
      open: 0,
      accepted: 0,
      refused: 0,
      shed: 0,
      headerTimeouts: 0,
      idleTimeouts: 0,
      acceptErrors: 0,
      ...(opts.relayed ? { notRelayed: 0 } : {}),
    };
  }

  /**
   * Starts the timeouts: one timer checks every connection, at a quarter of
   * the shorter timeout (50 ms to 1 s).
   */
  startSweeping(): void {
    const { headerTimeoutMs, idleTimeoutMs } = this.limits;
    const sweepMs = Math.min(
      1000,
      Math.max(50, Math.floor(Math.min(headerTimeoutMs, idleTimeoutMs) / 4)),
    );
    this.#sweeper = setInterval(() => this.#sweep(performance.now()), sweepMs);
  }

  /** Whether the server is stopping (no new connection is served). */
  get stopped(): boolean {
    return this.#stopped;
  }

  /** Marks the server stopping and ends the timeouts. */
  stop(): void {
    this.#stopped = true;
    clearInterval(this.#sweeper);
  }

  /** How many connections are open. */
  get size(): number {
    return this.#open.size;
  }

  /** Whether `c` is still open. */
  has(c: Connection): boolean {
    return this.#open.has(c);
  }

  /** A copy of the open connections. */
  openConnections(): Connection[] {
    return [...this.#open];
  }

  /** A new record, quiet since `since`. */
  create(since: number = performance.now()): Connection {
    return { inFlight: 0, served: false, touched: false, quietSince: since, closing: false };
  }

  /** Counts `c` as open (sheddable unless it is in a TLS handshake). */
  track(c: Connection): void {
    this.#open.add(c);
    this.stats.open = this.#open.size;
    if (!c.handshaking) this.#waiting.add(c);
  }

  /** Forgets `c`. */
  untrack(c: Connection): void {
    this.#open.delete(c);
    this.#waiting.delete(c);
    this.#idle.delete(c);
    this.stats.open = this.#open.size;
  }

  #sweep(now: number): void {
    for (const c of this.#open) {
      if (c.closing) continue;
      if (c.inFlight > 0 || c.touched) {
        c.touched = false;
        c.quietSince = now;
        continue;
      }
      const limit = c.served ? this.limits.idleTimeoutMs : this.limits.headerTimeoutMs;
      if (now - c.quietSince < limit) continue;
      if (c.served) this.stats.idleTimeouts++;
      else this.stats.headerTimeouts++;
      if (c.handshaking) {
        c.closing = true; // counted once; it leaves when its handshake ends
        this.log.debug(
          "{name}: a TLS handshake has taken longer than the header timeout ({ms} ms)",
          { name: this.name, ms: this.limits.headerTimeoutMs },
        );
        continue;
      }
      this.log.debug("{name}: closing a connection: {what} timeout ({ms} ms)", {
        name: this.name,
        what: c.served ? "idle" : "header",
        ms: limit,
      });
      this.cancel(c);
    }
  }

  /**
   * Closes a connection at once (nothing is in flight on it). Not
   * gracefully: the runtime's graceful close cannot be cut short later (the
   * connection can no longer be cancelled), and on HTTP/2 it waits for the
   * client to answer a PING, which a hostile client never does. An HTTP/2
   * client whose next request races this close sees its connection reset;
   * a client pool idle timeout below the idle timeout avoids that.
   */
  cancel(c: Connection): void {
    c.closing = true;
    this.#waiting.delete(c);
    this.#idle.delete(c);
    try {
      c.cancel?.();
    } catch {
      // already closed
    }
    c.relay?.close();
  }

  /**
   * Hands `conn` to the runtime's HTTP server; `c` is its record (new, or a
   * relayed connection's, already counted), `remote` the address the handler
   * is told (a relay's client). False, `conn` closed, when the runtime
   * refuses it.
   */
  serve(conn: Deno.Conn, c: Connection, remote?: Deno.NetAddr): boolean {
    const done = () => {
      c.touched = true;
      if (--c.inFlight === 0 && !c.closing && this.#open.has(c)) this.#idle.add(c);
    };
    const handler = this.#opts.handler;
    const perConnection: Deno.ServeHandler<Deno.NetAddr> = (req, info) => {
      if (!c.served) this.#waiting.delete(c);
      else if (c.inFlight === 0) this.#idle.delete(c);
      c.inFlight++;
      c.served = true;
      c.touched = true;
      info.completed.then(done, done);
      return handler(
        req,
        remote === undefined ? info : { remoteAddr: remote, completed: info.completed },
      );
    };
    const hook: CancelHook = {
      addEventListener(type, listener) {
        if (type === "abort") c.cancel = listener;
      },
    };
    try {
      c.http = this.#opts.serveOn(conn, hook, perConnection, this.#opts.onError, () => {});
    } catch (err) {
      this.log.warn("{name}: cannot serve an accepted connection: {error}", {
        name: this.name,
        error: err,
      });
      closeQuietly(conn);
      return false;
    }
    return true;
  }

  /**
   * `c` was taken over after its first request head (`connection_takeover.ts`):
   * it counts as serving a request until it ends (never shed, never timed
   * out: what runs on it bounds itself), and closing it closes `taken`.
   */
  adopt(c: Connection, taken: TakenConnection): void {
    this.#waiting.delete(c);
    this.#idle.delete(c);
    c.served = true;
    c.touched = true;
    c.inFlight = 1;
    c.http = taken;
    c.cancel = () => taken.close();
  }

  /**
   * Makes room for a newcomer at the cap: closes the oldest connection with
   * no request head yet, else the one idle longest between requests.
   * Returns false, closing nothing, when every open connection is serving a
   * request (or cannot be closed yet).
   */
  shedOne(): boolean {
    const victim: Connection | undefined = this.#waiting.values().next().value ??
      this.#idle.values().next().value;
    if (victim === undefined) return false;
    this.stats.shed++;
    const { name, setting } = this.#opts;
    const max = this.limits.maxConnections;
    this.log.debug("{name}: at {max} connections ({setting}), closing one {what} for a newcomer", {
      name,
      max,
      setting,
      what: victim.served ? "idle between requests" : "without a request head",
    });
    this.cancel(victim);
    this.#shedWarning.note();
    return true;
  }

  /** Counts a failed accept (or relay connect), warning at most once per interval. */
  acceptFailed(err: unknown, pauseMs: number): void {
    this.stats.acceptErrors++;
    this.#acceptWarning.note({ err, pauseMs });
  }
}
