/**
 * An HTTP server with limits on its connections: a cap on how many are open
 * (a newcomer at the cap sheds the oldest connection without a request in
 * flight), a header timeout (TLS handshake included), an idle timeout, and an
 * accept loop that survives running out of file descriptors. Used by every
 * TCP listener: the payments API, and the proxy's TCP fallback and admin
 * listener.
 *
 * `Deno.serve` has none of these (measured on Deno 2.9.6: a connection that
 * sends half a request head, or nothing, stays open for good; at the
 * descriptor limit its accept loop rejects with `Too many open files` and the
 * process exits). So the listener is ours (`Deno.listen` / `Deno.listenTls`)
 * and each accepted connection is handed to the runtime's own HTTP server for
 * one connection: the function `Deno.serve` itself is built on, which Deno
 * 2.9 exposes only among its internals (`serveHttpOnConnection`). It speaks
 * HTTP/1.1 and h2c with prior knowledge on plain TCP and negotiates h2 or
 * HTTP/1.1 by ALPN on TLS, exactly like `Deno.serve`, at the same speed.
 * {@link perConnectionServeAvailable} says whether the running Deno has it.
 *
 * The runtime only tells us about complete requests (the handler is called
 * once a request head has been read), so the timeouts are kept per
 * connection from what the handler sees:
 *
 * - header timeout: a connection on which no request head has arrived this
 *   long after it was accepted (TLS handshake included) is closed;
 * - idle timeout: a connection with no request in flight for this long is
 *   closed. A request head that trickles in on a kept-alive connection is
 *   bounded by it too (it looks idle until it is complete).
 *
 * One interval timer checks every connection (at a quarter of the shorter
 * timeout, 50 ms to 1 s), so a timeout fires at most that late and a request
 * costs no timer and no clock reading.
 *
 * At the cap a newcomer is not simply turned away: that would let a few
 * slow sockets (a slowloris trickling request heads) lock every client out
 * for the whole header timeout. It sheds one connection that is not serving
 * a request, as QUIC admission sheds its oldest unfinished handshake:
 *
 * 1. the oldest connection on which no complete request head has arrived yet
 *    (nothing sent, a head trickling in, a TLS handshake under way through
 *    the relay, or HTTP/2 with its preface done but no stream opened: the
 *    runtime tells us nothing before a request, so these look alike);
 * 2. else the connection idle the longest between requests (kept alive with
 *    no request in flight; a second head trickling in looks like this too).
 *
 * A connection with a request in flight (on HTTP/2: any stream whose
 * response is not fully sent) is never shed; when every connection is
 * serving one the newcomer is closed at once. Neither is a TLS connection in
 * the middle of its handshake on a `Deno.listenTls` listener (Deno cannot
 * close it, see below): it would leave no room. Shedding is counted in
 * {@link ConnectionStats.shed}. As with the idle timeout, an HTTP/2 client
 * whose next request races the close of its idle connection sees it reset.
 *
 * TLS, two ways:
 *
 * - {@link serveConnections} on a `Deno.listenTls` listener: Deno 2.9.6
 *   starts the handshake of every accepted TLS connection on its own and
 *   cannot close it before the handshake ends (`close()` only detaches it), so
 *   a client that connects and never sends a ClientHello holds its socket
 *   (and a place under the cap) until it leaves;
 * - {@link serveTlsConnections}: the public listener is plain TCP; each
 *   connection is relayed, byte for byte, to a TLS listener on the loopback
 *   interface meant for this server alone. Closing our side of the relay ends
 *   a stalled handshake at once, so every timeout holds for TLS too, and the
 *   certificate can change while serving ({@link TlsConnectionServer.setCertificate}):
 *   new connections go to a new loopback listener, those already open finish
 *   on the old one. It costs three descriptors per connection (the client's,
 *   and both ends of the loopback connection) and a copy of every byte.
 *
 * The loopback listener is a TCP port, so another process on the machine
 * can connect to it too. Deno 2.9.6 leaves no way to keep it out: TLS is
 * served only by `Deno.listenTls`, on TCP only (not on a Unix socket),
 * which starts the handshake on the first byte (so the relay cannot send a
 * secret first), and `Deno.startTls` is for clients only. Such a stranger is
 * known at once (its port is not one of a relay's, once every relay connect
 * begun before it was accepted has completed; {@link ConnectionStats.notRelayed})
 * and never served. It is closed as soon as Deno can close it: at once when
 * its handshake is over, or when it fails; one that stalls its handshake
 * keeps its socket until it leaves (measured: still open after 150 s), so it is
 * counted as open and against `maxConnections` until then, and cannot be
 * shed: the cap keeps telling the truth about descriptors.
 *
 * @example
 * ```ts
 * const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
 * const server = serveConnections(listener, () => new Response("ok"), {
 *   limits: { maxConnections: 100, headerTimeoutMs: 10_000, idleTimeoutMs: 60_000 },
 * });
 * await server.shutdown();
 * ```
 *
 * @module
 */
import { getLogger, type Logger } from "@logtape/logtape";

/** Limits applied by {@link serveConnections}. */
export interface ConnectionLimits {
  /**
   * Most connections open at once. A connection accepted past it sheds the
   * oldest one without a request in flight (see the module documentation);
   * when every open connection is serving a request (or cannot be closed)
   * the newcomer is closed at once instead (the client sees the connection
   * closed before any answer). A request in flight is never cut by it.
   */
  maxConnections: number;
  /**
   * Longest time from accepting a connection to its first complete request
   * head (TLS handshake included), in ms.
   */
  headerTimeoutMs: number;
  /** Longest time a connection stays open with no request in flight, in ms. */
  idleTimeoutMs: number;
}

/** Defaults: 4,096 connections, 10 s header timeout, 60 s idle timeout. */
export const DEFAULT_CONNECTION_LIMITS: Readonly<ConnectionLimits> = Object.freeze({
  maxConnections: 4096,
  headerTimeoutMs: 10_000,
  idleTimeoutMs: 60_000,
});

/** Options of {@link serveConnections}. */
export interface ServeConnectionsOptions {
  /** The limits; each missing one takes its {@link DEFAULT_CONNECTION_LIMITS} value. */
  limits?: Partial<ConnectionLimits>;
  /** Answers a request whose handler threw (as `Deno.serve`'s `onError`). */
  onError?: (error: unknown) => Response | Promise<Response>;
  /** Interval between warnings about refused connections or failed accepts; default 10 s. */
  warnEveryMs?: number;
  /** What the listener is called in log lines, e.g. `TCP fallback`; default `listener`. */
  name?: string;
  /**
   * The setting that sets `maxConnections`, named in the warnings about
   * refused and shed connections; default `--max-connections`.
   */
  maxConnectionsSetting?: string;
  /** LogTape category of the log lines; default `["payments", "connections"]`. */
  logCategory?: string[];
}

/** Counters of a {@link ConnectionServer}, since it started. */
export interface ConnectionStats {
  /** Connections open now. */
  open: number;
  /** Connections accepted and served. */
  accepted: number;
  /** Connections closed at once because `maxConnections` were open and none could be shed. */
  refused: number;
  /**
   * Connections closed to make room for a newcomer at `maxConnections`: no
   * request head yet, or idle between requests; never one serving a request.
   */
  shed: number;
  /**
   * Relay mode ({@link serveTlsConnections}) only: connections made straight
   * to the loopback TLS listener by someone other than the relay, refused
   * unserved (open, and counted against `maxConnections`, until Deno can
   * close them: see the module documentation).
   */
  notRelayed?: number;
  /** Connections closed by the header timeout (TLS handshake included). */
  headerTimeouts: number;
  /** Connections closed by the idle timeout. */
  idleTimeouts: number;
  /** Failed `accept()` calls (e.g. `EMFILE`: out of file descriptors). */
  acceptErrors: number;
}

/** A running {@link serveConnections} server. */
export interface ConnectionServer {
  /** The bound address. */
  readonly addr: Deno.NetAddr;
  /** The limits in force. */
  readonly limits: Readonly<ConnectionLimits>;
  /** A snapshot of the counters. */
  stats(): ConnectionStats;
  /**
   * Stops accepting and shuts every connection down gracefully (HTTP/1.1:
   * closed once its response is sent; HTTP/2: GOAWAY, closed once its
   * streams are done). Resolves when all are closed.
   */
  shutdown(): Promise<void>;
  /** Stops accepting and closes every connection still open at once. */
  close(): void;
}

/** A running {@link serveTlsConnections} server. */
export interface TlsConnectionServer extends ConnectionServer {
  /**
   * Serves new connections with another certificate and key (PEM); those
   * already open keep theirs. Throws, changing nothing, when the pair cannot
   * be used.
   */
  setCertificate(cert: string, key: string): void;
}

/** The certificate and key (PEM) of {@link serveTlsConnections}. */
export interface TlsPair {
  /** The certificate chain, PEM. */
  cert: string;
  /** Its private key, PEM. */
  key: string;
}

/** The runtime's HTTP server for one accepted connection. */
interface ConnectionHttp {
  finished: Promise<void>;
  shutdown(): Promise<void>;
}

/**
 * What `serveHttpOnConnection` does with its second argument: it registers a
 * listener for `abort` that cancels the connection at once. We take that
 * listener instead of passing an `AbortSignal`, so that cancelling can be
 * called in a `try` (once the connection is gone, it throws `BadResource`,
 * which from an `AbortSignal` listener would be an uncaught error).
 */
interface CancelHook {
  addEventListener(type: string, listener: () => void, options?: unknown): void;
}

type ServeOnConnection = (
  conn: Deno.Conn,
  cancel: CancelHook,
  handler: Deno.ServeHandler<Deno.NetAddr>,
  onError: (error: unknown) => Response | Promise<Response>,
  onListen: (scheme: string) => void,
) => ConnectionHttp;

function findServeOnConnection(): ServeOnConnection | undefined {
  const internalKey = (Deno as unknown as { internal?: symbol }).internal;
  if (typeof internalKey !== "symbol") return undefined;
  const internals = (Deno as unknown as Record<symbol, Record<string, unknown> | undefined>)[
    internalKey
  ];
  const fn = internals?.serveHttpOnConnection;
  return typeof fn === "function" && fn.length === 5 ? fn as ServeOnConnection : undefined;
}

const serveOnConnection = findServeOnConnection();

/**
 * True when the running Deno can serve HTTP on a connection we accepted
 * (Deno 2.9's internal `serveHttpOnConnection`); {@link serveConnections}
 * throws without it.
 */
export function perConnectionServeAvailable(): boolean {
  return serveOnConnection !== undefined;
}

function isTls(conn: Deno.Conn): conn is Deno.TlsConn {
  return typeof (conn as Partial<Deno.TlsConn>).handshake === "function";
}

/** Check a limit: a positive integer. */
function positive(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) {
    throw new RangeError(`${name} must be a positive integer, got ${value}`);
  }
  return value;
}

function closeQuietly(conn: Deno.Conn | Deno.Listener | undefined): void {
  try {
    conn?.close();
  } catch {
    // already closed
  }
}

/** One accepted connection. */
interface Connection {
  http?: ConnectionHttp;
  cancel?: () => void;
  /** Requests whose response is not fully sent yet. */
  inFlight: number;
  /** Whether a request head has ever arrived. */
  served: boolean;
  /** Set by every request start and end; cleared by the sweep. */
  touched: boolean;
  /** `performance.now()` when the sweep last saw it busy or touched (or when accepted). */
  quietSince: number;
  closing: boolean;
  /** A TLS connection whose handshake is not done: it cannot be closed yet. */
  handshaking?: boolean;
  /** Relayed (serveTlsConnections): the client's connection and the loopback one. */
  relay?: Relay;
}

/** The sockets of one relayed connection. */
interface Relay {
  front: Deno.Conn;
  back?: Deno.Conn;
  /** The loopback listener it was sent to. */
  side?: TlsSide;
  /** Loopback connection accepted on the TLS side. */
  inner?: Deno.Conn;
  /** Pumps still copying (0, 1 or 2). */
  pumping: number;
  /** Whether the loopback connection has been accepted (or given up). */
  matched: boolean;
  /** Resolved when its record is gone. */
  ended: PromiseWithResolvers<void>;
}

/** A loopback TLS listener of {@link serveTlsConnections}. */
interface TlsSide {
  listener: Deno.TlsListener;
  port: number;
  /** Relays connected (or connecting) to it and not yet accepted. */
  pending: number;
  /** Replaced by a newer certificate: closed once nothing is pending. */
  retired: boolean;
  /** Relay connects under way, by the order they began in (a Set keeps it: oldest first). */
  connecting: Set<number>;
  /**
   * Accepted before their relay's connect completed, by remote port, with
   * the number of connects begun by then: it can only be one of those.
   */
  unmatched: Map<number, { conn: Deno.Conn; begunBefore: number }>;
}

/** Once per interval: how many times something happened, logged as one warning. */
class WarnOnce {
  #count = 0;
  #last = -Infinity;
  constructor(readonly everyMs: number) {}
  /** Counts one event; returns how many to report if a warning is due now. */
  due(): number | undefined {
    this.#count++;
    const now = performance.now();
    if (now - this.#last < this.everyMs) return undefined;
    this.#last = now;
    const n = this.#count;
    this.#count = 0;
    return n;
  }
}

/**
 * Serves HTTP on `listener` (TCP: HTTP/1.1 and h2c with prior knowledge;
 * TLS: h2 and HTTP/1.1 by ALPN; give `Deno.listenTls` `alpnProtocols:
 * ["h2", "http/1.1"]`) with the {@link ConnectionLimits}.
 *
 * An `accept()` that fails (out of descriptors: `EMFILE`/`ENFILE`, or any
 * other error) never ends the server: it is logged at most once per
 * `warnEveryMs` with the count, and accepting resumes after a pause that
 * doubles from 10 ms up to 1 s while the failures go on; connections already
 * open are served meanwhile.
 *
 * @throws {Error} when the running Deno lacks the per-connection server (see
 * {@link perConnectionServeAvailable}).
 * @throws {RangeError} for a limit that is not a positive integer.
 */
export function serveConnections(
  listener: Deno.Listener<Deno.Conn, Deno.NetAddr> | Deno.TlsListener,
  handler: Deno.ServeHandler<Deno.NetAddr>,
  opts: ServeConnectionsOptions = {},
): ConnectionServer {
  return startServer(listener, handler, opts, undefined);
}

/**
 * Serves HTTPS on a plain TCP `listener` (h2 and HTTP/1.1 by ALPN) with the
 * {@link ConnectionLimits}, the header timeout bounding the TLS handshake
 * too: each connection is relayed to a loopback TLS listener (see the module
 * documentation). The handler sees the client's address. The pair is checked
 * here: a certificate and key that cannot be used throw before anything is
 * served.
 *
 * @example
 * ```ts
 * declare const handler: Deno.ServeHandler<Deno.NetAddr>;
 * declare const cert: string;
 * declare const key: string;
 * declare const renewedCert: string;
 * declare const renewedKey: string;
 *
 * const listener = Deno.listen({ hostname: "0.0.0.0", port: 443 });
 * const server = serveTlsConnections(listener, { cert, key }, handler, { name: "TCP fallback" });
 * server.setCertificate(renewedCert, renewedKey);
 * ```
 *
 * @throws {Error} as {@link serveConnections}, and when the pair cannot be used.
 */
export function serveTlsConnections(
  listener: Deno.Listener<Deno.Conn, Deno.NetAddr>,
  tls: TlsPair,
  handler: Deno.ServeHandler<Deno.NetAddr>,
  opts: ServeConnectionsOptions = {},
): TlsConnectionServer {
  return startServer(listener, handler, opts, tls) as TlsConnectionServer;
}

function startServer(
  listener: Deno.Listener<Deno.Conn, Deno.NetAddr> | Deno.TlsListener,
  handler: Deno.ServeHandler<Deno.NetAddr>,
  opts: ServeConnectionsOptions,
  tls: TlsPair | undefined,
): ConnectionServer | TlsConnectionServer {
  const serveOn: ServeOnConnection | undefined = serveOnConnection;
  if (serveOn === undefined) {
    throw new Error(
      "this Deno cannot serve HTTP on an accepted connection (no internal serveHttpOnConnection); " +
        "use Deno 2.9",
    );
  }
  const limits: ConnectionLimits = {
    maxConnections: positive(
      "maxConnections",
      opts.limits?.maxConnections ?? DEFAULT_CONNECTION_LIMITS.maxConnections,
    ),
    headerTimeoutMs: positive(
      "headerTimeoutMs",
      opts.limits?.headerTimeoutMs ?? DEFAULT_CONNECTION_LIMITS.headerTimeoutMs,
    ),
    idleTimeoutMs: positive(
      "idleTimeoutMs",
      opts.limits?.idleTimeoutMs ?? DEFAULT_CONNECTION_LIMITS.idleTimeoutMs,
    ),
  };
  const log: Logger = getLogger(opts.logCategory ?? ["payments", "connections"]);
  const name = opts.name ?? "listener";
  const setting = opts.maxConnectionsSetting ?? "--max-connections";
  const onError = opts.onError ?? ((error: unknown): Response => {
    log.error("{name}: request failed: {error}", { name, error });
    return new Response("Internal Server Error", { status: 500 });
  });
  const warnEveryMs = opts.warnEveryMs ?? 10_000;
  const refusedWarning = new WarnOnce(warnEveryMs);
  const shedWarning = new WarnOnce(warnEveryMs);
  const strangerWarning = new WarnOnce(warnEveryMs);
  const acceptWarning = new WarnOnce(warnEveryMs);
  const stats: ConnectionStats = {
    open: 0,
    accepted: 0,
    refused: 0,
    shed: 0,
    headerTimeouts: 0,
    idleTimeouts: 0,
    acceptErrors: 0,
    ...(tls === undefined ? {} : { notRelayed: 0 }),
  };
  const open = new Set<Connection>();
  // The connections a newcomer at the cap may shed, oldest first (a Set
  // keeps insertion order): those with no request head yet, by accept; those
  // idle between requests, by when their last response ended.
  const waiting = new Set<Connection>();
  const idle = new Set<Connection>();
  let stopping = false;
  let wake: (() => void) | undefined;
  let pause: ReturnType<typeof setTimeout> | undefined;

  // Relay mode: the loopback TLS listener new connections go to, older ones
  // still draining, relays by the local port of their loopback socket (which
  // is the remote port the TLS side sees), and connections to a loopback
  // listener that no relay opened, held until Deno can close them.
  let side: TlsSide | undefined;
  const sides = new Set<TlsSide>();
  const byPort = new Map<number, Connection>();
  const strangers = new Set<Deno.Conn>();
  let connectsBegun = 0;
  const sideLoops: Promise<void>[] = [];
  if (tls !== undefined) side = openSide(tls);

  const sweepMs = Math.min(
    1000,
    Math.max(50, Math.floor(Math.min(limits.headerTimeoutMs, limits.idleTimeoutMs) / 4)),
  );
  const sweeper = setInterval(() => {
    const now = performance.now();
    for (const c of open) {
      if (c.closing) continue;
      if (c.inFlight > 0 || c.touched) {
        c.touched = false;
        c.quietSince = now;
        continue;
      }
      const limit = c.served ? limits.idleTimeoutMs : limits.headerTimeoutMs;
      if (now - c.quietSince < limit) continue;
      if (c.served) stats.idleTimeouts++;
      else stats.headerTimeouts++;
      if (c.handshaking) {
        c.closing = true; // counted once; it leaves when its handshake ends
        log.debug("{name}: a TLS handshake has taken longer than the header timeout ({ms} ms)", {
          name,
          ms: limits.headerTimeoutMs,
        });
        continue;
      }
      log.debug("{name}: closing a connection: {what} timeout ({ms} ms)", {
        name,
        what: c.served ? "idle" : "header",
        ms: limit,
      });
      cancel(c);
    }
  }, sweepMs);

  /**
   * Closes a connection at once (nothing is in flight on it). Not
   * gracefully: the runtime's graceful close cannot be cut short later (the
   * connection can no longer be cancelled), and on HTTP/2 it waits for the
   * client to answer a PING, which a hostile client never does. An HTTP/2
   * client whose next request races this close sees its connection reset;
   * a client pool idle timeout below the idle timeout avoids that.
   */
  function cancel(c: Connection): void {
    c.closing = true;
    waiting.delete(c);
    idle.delete(c);
    try {
      c.cancel?.();
    } catch {
      // already closed
    }
    if (c.relay) closeRelay(c.relay);
  }

  /**
   * A TLS connection is handed over once its handshake is done, and counted
   * from accept until then. Deno 2.9.6 cannot close a TLS connection in the
   * middle of its handshake (`close()` only detaches it: the socket stays
   * open until the handshake ends, which for a client that stalls is when
   * it leaves), so such a connection is counted against `maxConnections`
   * until its handshake ends, past the header timeout if need be: the cap
   * keeps telling the truth about descriptors.
   */
  async function handshakeThenServe(conn: Deno.TlsConn, serveOn: ServeOnConnection): Promise<void> {
    const c = newConnection();
    c.handshaking = true;
    track(c);
    try {
      await conn.handshake();
    } catch (err) {
      log.debug("{name}: TLS handshake failed: {error}", { name, error: err });
      untrack(c);
      closeQuietly(conn);
      return;
    }
    untrack(c);
    if (stopping) {
      conn.close();
      return;
    }
    serve(conn, serveOn, c.quietSince);
  }

  /**
   * Hands `conn` to the runtime's HTTP server; `c` is its record (new, or a
   * relayed connection's, already counted), `remote` the address the handler
   * is told (a relay's client).
   */
  function serveWith(
    conn: Deno.Conn,
    serveOn: ServeOnConnection,
    c: Connection,
    remote?: Deno.NetAddr,
  ): boolean {
    const done = () => {
      c.touched = true;
      if (--c.inFlight === 0 && !c.closing && open.has(c)) idle.add(c);
    };
    const perConnection: Deno.ServeHandler<Deno.NetAddr> = (req, info) => {
      if (!c.served) waiting.delete(c);
      else if (c.inFlight === 0) idle.delete(c);
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
      c.http = serveOn(conn, hook, perConnection, onError, () => {});
    } catch (err) {
      log.warn("{name}: cannot serve an accepted connection: {error}", { name, error: err });
      closeQuietly(conn);
      return false;
    }
    return true;
  }

  function serve(conn: Deno.Conn, serveOn: ServeOnConnection, since = performance.now()): void {
    const c = newConnection(since);
    if (!serveWith(conn, serveOn, c)) return;
    track(c);
    const closed = () => untrack(c);
    c.http!.finished.then(closed, (err) => {
      log.debug("{name}: connection ended with an error: {error}", { name, error: err });
      closed();
    });
  }

  // --- relay mode ---------------------------------------------------------

  function openSide(pair: TlsPair): TlsSide {
    const l = Deno.listenTls({
      hostname: "127.0.0.1",
      port: 0,
      cert: pair.cert,
      key: pair.key,
      alpnProtocols: ["h2", "http/1.1"],
    });
    const s: TlsSide = {
      listener: l,
      port: l.addr.port,
      pending: 0,
      retired: false,
      connecting: new Set(),
      unmatched: new Map(),
    };
    sides.add(s);
    sideLoops.push(sideAcceptLoop(s));
    return s;
  }

  function retireIfDone(s: TlsSide): void {
    if (s.retired && s.pending === 0 && sides.has(s)) {
      sides.delete(s);
      closeQuietly(s.listener);
    }
  }

  /** Accepts the loopback connections of relays and serves them. */
  async function sideAcceptLoop(s: TlsSide): Promise<void> {
    let pauseMs = 0;
    for (;;) {
      let conn: Deno.Conn;
      try {
        conn = await s.listener.accept();
      } catch (err) {
        if (
          !sides.has(s) || err instanceof Deno.errors.BadResource ||
          err instanceof Deno.errors.Interrupted
        ) {
          return;
        }
        // Out of descriptors: the relay waiting for this one is closed by
        // its header timeout if it is never taken.
        pauseMs = Math.min(1000, pauseMs === 0 ? 10 : pauseMs * 2);
        noteAcceptError(err, pauseMs);
        await new Promise((r) => setTimeout(r, pauseMs));
        continue;
      }
      pauseMs = 0;
      const port = (conn.remoteAddr as Deno.NetAddr).port;
      const c = byPort.get(port);
      if (c !== undefined) match(c, conn);
      else if (connectUnderWay(s, connectsBegun)) {
        // Its relay has not heard its connect complete yet: it takes it from
        // here, or settleUnmatched finds it is nobody's.
        s.unmatched.set(port, { conn, begunBefore: connectsBegun });
      } else refuseStranger(conn);
    }
  }

  /** Whether a relay connect to `s` begun before the `begunBefore`-th one is still under way. */
  function connectUnderWay(s: TlsSide, begunBefore: number): boolean {
    const oldest: number | undefined = s.connecting.values().next().value;
    return oldest !== undefined && oldest < begunBefore;
  }

  /**
   * After a relay connect to `s` completes: a connection accepted there that
   * no connect under way when it was accepted can still claim is a stranger.
   */
  function settleUnmatched(s: TlsSide): void {
    for (const [port, { conn, begunBefore }] of s.unmatched) {
      if (connectUnderWay(s, begunBefore)) continue;
      s.unmatched.delete(port);
      refuseStranger(conn);
    }
  }

  /**
   * A connection to the loopback TLS listener that no relay opened: never
   * served, closed once its handshake ends (Deno cannot close it sooner),
   * and counted as open (against the cap) until then.
   */
  function refuseStranger(conn: Deno.Conn): void {
    stats.notRelayed!++;
    const n = strangerWarning.due();
    if (n !== undefined) {
      log.warn(
        "{name}: refused {count} connection(s) to the internal TLS listener (127.0.0.1:{port}) " +
          "that the relay did not open, since the last warning: another process on this machine " +
          "connects to it; each holds a descriptor until its TLS handshake ends",
        { name, count: n, port: (conn.localAddr as Deno.NetAddr).port },
      );
    }
    if (stopping) {
      closeQuietly(conn);
      return;
    }
    const c = newConnection();
    c.handshaking = true;
    c.closing = true; // not served, not shed, no timeout: it leaves when its handshake ends
    track(c);
    strangers.add(conn);
    const gone = () => {
      strangers.delete(conn);
      closeQuietly(conn);
      untrack(c);
    };
    (conn as Deno.TlsConn).handshake().then(gone, gone);
  }

  /** Pairs a relay with its accepted loopback connection and serves it. */
  function match(c: Connection, inner: Deno.Conn): void {
    const r = c.relay!;
    r.matched = true;
    r.inner = inner;
    if (r.side) {
      r.side.pending--;
      retireIfDone(r.side);
    }
    if (c.closing || stopping || !open.has(c)) {
      // Its relay was closed before the loopback connection came in.
      closeQuietly(inner);
      closeRelay(r);
      const port = (inner.remoteAddr as Deno.NetAddr).port;
      if (r.pumping === 0 && byPort.get(port) === c) byPort.delete(port);
      return;
    }
    if (!serveWith(inner, serveOn!, c, r.front.remoteAddr as Deno.NetAddr)) {
      closeRelay(r);
      relayEnded(c);
      return;
    }
    c.http!.finished.then(
      () => relayEnded(c),
      (err) => {
        log.debug("{name}: connection ended with an error: {error}", { name, error: err });
        relayEnded(c);
      },
    );
  }

  /**
   * Called when a pump or the runtime's server of a relay ends: the record
   * goes once both pumps have stopped (both sockets are then closed) and the
   * runtime's server has finished with the loopback connection.
   */
  function relayEnded(c: Connection): void {
    const r = c.relay!;
    if (r.pumping > 0) return;
    if (!r.matched && r.back === undefined) {
      // Its connect failed or was not made: nothing will come to the TLS side.
      r.matched = true;
      if (r.side) {
        r.side.pending--;
        retireIfDone(r.side);
      }
    }
    // Connected but not accepted yet: the TLS side still gets its loopback
    // connection, which must be known as this relay's (and is closed by
    // match), not taken for a stranger's.
    if (r.back && r.matched) {
      const port = (r.back.localAddr as Deno.NetAddr).port;
      if (byPort.get(port) === c) byPort.delete(port);
    }
    const gone = () => {
      untrack(c);
      r.ended.resolve();
    };
    if (c.http === undefined) gone();
    else c.http.finished.then(gone, gone);
  }

  function closeRelay(r: Relay): void {
    closeQuietly(r.front);
    closeQuietly(r.back);
  }

  /**
   * Copies `from` to `to` until `from` ends. The client's end of input is
   * passed on (a half-close); the TLS side's end closes both sockets (the
   * runtime's server is done with the connection, and a client that never
   * closes its side must not keep it).
   */
  async function pump(c: Connection, from: Deno.Conn, to: Deno.Conn, fromClient: boolean) {
    const r = c.relay!;
    // Held while the pump waits: small from the client (request heads), a
    // TLS record's worth towards it. 20 KiB per connection in all.
    const buf = new Uint8Array(fromClient ? 4 * 1024 : 16 * 1024);
    try {
      for (;;) {
        const n = await from.read(buf);
        if (n === null) break;
        let off = 0;
        while (off < n) off += await to.write(buf.subarray(off, n));
      }
      if (fromClient) await (to as Deno.TcpConn).closeWrite();
      else closeRelay(r);
    } catch {
      // Either side is gone (or was closed by a timeout): end both.
      closeRelay(r);
    } finally {
      r.pumping--;
      if (r.pumping === 0) closeRelay(r);
      relayEnded(c);
    }
  }

  async function relay(front: Deno.Conn): Promise<void> {
    const c = newConnection();
    const r: Relay = { front, pumping: 0, matched: false, ended: Promise.withResolvers() };
    c.relay = r;
    track(c);
    const s = side!;
    r.side = s;
    s.pending++;
    const seq = connectsBegun++;
    s.connecting.add(seq);
    let back: Deno.Conn;
    try {
      back = await Deno.connect({ hostname: "127.0.0.1", port: s.port });
    } catch (err) {
      s.connecting.delete(seq);
      settleUnmatched(s);
      noteAcceptError(err, 0);
      closeRelay(r);
      relayEnded(c);
      return;
    }
    s.connecting.delete(seq);
    r.back = back;
    const port = (back.localAddr as Deno.NetAddr).port;
    // Known as ours before anything else can run, closing or not: its
    // loopback connection is never taken for a stranger's.
    byPort.set(port, c);
    const early = s.unmatched.get(port);
    s.unmatched.delete(port);
    settleUnmatched(s);
    if (c.closing) {
      closeRelay(r);
      if (early !== undefined) match(c, early.conn);
      relayEnded(c);
      return;
    }
    r.pumping = 2;
    pump(c, front, back, true);
    pump(c, back, front, false);
    if (early !== undefined) match(c, early.conn);
  }

  // --- bookkeeping --------------------------------------------------------

  function newConnection(since = performance.now()): Connection {
    return { inFlight: 0, served: false, touched: false, quietSince: since, closing: false };
  }

  function track(c: Connection): void {
    open.add(c);
    stats.open = open.size;
    if (!c.handshaking) waiting.add(c);
  }

  function untrack(c: Connection): void {
    open.delete(c);
    waiting.delete(c);
    idle.delete(c);
    stats.open = open.size;
  }

  /**
   * Makes room for a newcomer at the cap: closes the oldest connection with
   * no request head yet, else the one idle longest between requests.
   * Returns false, closing nothing, when every open connection is serving a
   * request (or cannot be closed yet).
   */
  function shedOne(): boolean {
    const victim: Connection | undefined = waiting.values().next().value ??
      idle.values().next().value;
    if (victim === undefined) return false;
    stats.shed++;
    log.debug("{name}: at {max} connections ({setting}), closing one {what} for a newcomer", {
      name,
      max: limits.maxConnections,
      setting,
      what: victim.served ? "idle between requests" : "without a request head",
    });
    cancel(victim);
    const n = shedWarning.due();
    if (n !== undefined) {
      log.warn(
        "{name}: {max} connections open ({setting}): closed {count} connection(s) with no " +
          "request in flight to admit newcomers since the last warning",
        { name, max: limits.maxConnections, setting, count: n },
      );
    }
    return true;
  }

  function noteAcceptError(err: unknown, pauseMs: number): void {
    stats.acceptErrors++;
    const n = acceptWarning.due();
    if (n === undefined) return;
    log.warn(
      "{name}: accept failed {count} time(s) since the last warning: {error}; " +
        "{open} connections open; accepting again in {ms} ms",
      {
        name,
        count: n,
        error: err instanceof Error ? err.message : String(err),
        open: open.size,
        ms: pauseMs,
      },
    );
  }

  const acceptLoop = (async () => {
    let pauseMs = 0;
    while (!stopping) {
      let conn: Deno.Conn;
      try {
        conn = await listener.accept();
      } catch (err) {
        if (
          stopping || err instanceof Deno.errors.BadResource ||
          err instanceof Deno.errors.Interrupted
        ) {
          break;
        }
        pauseMs = Math.min(1000, pauseMs === 0 ? 10 : pauseMs * 2);
        noteAcceptError(err, pauseMs);
        await new Promise<void>((resolve) => {
          wake = resolve;
          pause = setTimeout(resolve, pauseMs);
        });
        wake = undefined;
        pause = undefined;
        continue;
      }
      pauseMs = 0;
      if (stopping) {
        conn.close();
        break;
      }
      if (open.size >= limits.maxConnections && !shedOne()) {
        stats.refused++;
        closeQuietly(conn);
        const n = refusedWarning.due();
        if (n !== undefined) {
          log.warn(
            "{name}: {max} connections open ({setting}): refused {count} new connection(s) " +
              "since the last warning (none could be shed: each was serving a request or in " +
              "a TLS handshake Deno cannot cut short)",
            { name, max: limits.maxConnections, setting, count: n },
          );
        }
        continue;
      }
      stats.accepted++;
      if (tls !== undefined) relay(conn);
      else if (isTls(conn)) handshakeThenServe(conn, serveOn);
      else serve(conn, serveOn);
    }
  })();

  function stop(): void {
    if (stopping) return;
    stopping = true;
    clearInterval(sweeper);
    if (pause !== undefined) clearTimeout(pause);
    wake?.();
    closeQuietly(listener);
    for (const s of sides) {
      closeQuietly(s.listener);
      for (const { conn } of s.unmatched.values()) closeQuietly(conn);
      s.unmatched.clear();
    }
    sides.clear();
    for (const conn of strangers) closeQuietly(conn);
  }

  let shut: Promise<void> | undefined;
  const server: TlsConnectionServer = {
    addr: listener.addr,
    limits: Object.freeze({ ...limits }),
    stats: () => ({ ...stats }),
    shutdown() {
      shut ??= (async () => {
        stop();
        await acceptLoop;
        await Promise.all(sideLoops);
        // A relay whose loopback connection is not served yet has nothing to finish.
        for (const c of open) if (c.relay && c.http === undefined) cancel(c);
        const serving = [...open].filter((c) => c.http !== undefined);
        // No request yet: nothing to finish. Otherwise HTTP/1.1 closes once
        // its response is sent, HTTP/2 sends GOAWAY and closes when its
        // streams are done.
        for (const c of serving) if (!c.served && c.inFlight === 0) cancel(c);
        await Promise.all(
          serving.filter((c) => !c.closing).map((c) => c.http!.shutdown().catch(() => {})),
        );
        await Promise.all(serving.map((c) => c.http?.finished.catch(() => {})));
        await Promise.all([...open].map((c) => c.relay?.ended.promise));
      })();
      return shut;
    },
    close() {
      stop();
      for (const c of open) cancel(c);
    },
    setCertificate(cert: string, key: string) {
      if (tls === undefined) {
        throw new Error(
          `${name}: the certificate of a listener given to serveConnections is fixed`,
        );
      }
      if (stopping) return;
      const next = openSide({ cert, key }); // throws for a pair that cannot be used
      const old = side!;
      side = next;
      old.retired = true;
      retireIfDone(old);
    },
  };
  return server;
}
