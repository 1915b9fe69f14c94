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
import { getLogger } from "@logtape/logtape";
import { type Connection, ConnectionTable } from "./connection_table.ts";
import type { TakeOver } from "./connection_takeover.ts";
import { closeQuietly, serveOnConnection, WarnOnce } from "./serve_on_connection.ts";
import { TlsRelay } from "./tls_relay.ts";

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
  /**
   * {@link serveTlsConnections} only: offered the first request head of each
   * connection that did not negotiate h2, to take the connection over (an
   * HTTP/1.1 upgrade the runtime's server cannot carry, see
   * `connection_takeover.ts`); a connection it leaves is served by the
   * runtime through a pipe. Absent: every connection goes to the runtime.
   */
  takeOver?: TakeOver;
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

/**
 * True when the running Deno can serve HTTP on a connection we accepted
 * (Deno 2.9's internal `serveHttpOnConnection`); {@link serveConnections}
 * throws without it.
 */
export function perConnectionServeAvailable(): boolean {
  return serveOnConnection !== undefined;
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
  return new LimitedServer(listener, handler, opts, undefined);
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
  return new LimitedServer(listener, handler, opts, tls);
}

/** Check a limit: a positive integer. */
function positive(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) {
    throw new RangeError(`${name} must be a positive integer, got ${value}`);
  }
  return value;
}

/** `opts.limits`, each missing one taking its default, checked. */
function limitsOf(opts: ServeConnectionsOptions): ConnectionLimits {
  const given = opts.limits ?? {};
  const d = DEFAULT_CONNECTION_LIMITS;
  return {
    maxConnections: positive("maxConnections", given.maxConnections ?? d.maxConnections),
    headerTimeoutMs: positive("headerTimeoutMs", given.headerTimeoutMs ?? d.headerTimeoutMs),
    idleTimeoutMs: positive("idleTimeoutMs", given.idleTimeoutMs ?? d.idleTimeoutMs),
  };
}

function isTls(conn: Deno.Conn): conn is Deno.TlsConn {
  return typeof (conn as Partial<Deno.TlsConn>).handshake === "function";
}

/**
 * The server of {@link serveConnections} and {@link serveTlsConnections}:
 * the accept loop and the shutdown; the connections are kept by a
 * {@link ConnectionTable}, relayed ones by a {@link TlsRelay}.
 */
class LimitedServer implements TlsConnectionServer {
  readonly addr: Deno.NetAddr;
  readonly limits: Readonly<ConnectionLimits>;
  readonly #listener: Deno.Listener<Deno.Conn, Deno.NetAddr> | Deno.TlsListener;
  readonly #table: ConnectionTable;
  readonly #relay: TlsRelay | undefined;
  readonly #refusedWarning: WarnOnce;
  readonly #setting: string;
  readonly #acceptLoop: Promise<void>;
  /** Ends the pause after failed accepts early (when stopping). */
  #wake: (() => void) | undefined;
  #pause: ReturnType<typeof setTimeout> | undefined;
  #shut: Promise<void> | undefined;

  constructor(
    listener: Deno.Listener<Deno.Conn, Deno.NetAddr> | Deno.TlsListener,
    handler: Deno.ServeHandler<Deno.NetAddr>,
    opts: ServeConnectionsOptions,
    tls: TlsPair | undefined,
  ) {
    const serveOn = serveOnConnection;
    if (serveOn === undefined) {
      throw new Error(
        "this Deno cannot serve HTTP on an accepted connection (no internal " +
          "serveHttpOnConnection); use Deno 2.9",
      );
    }
    const limits = limitsOf(opts);
    const log = getLogger(opts.logCategory ?? ["payments", "connections"]);
    const name = opts.name ?? "listener";
    const warnEveryMs = opts.warnEveryMs ?? 10_000;
    this.#setting = opts.maxConnectionsSetting ?? "--max-connections";
    this.#table = new ConnectionTable({
      limits,
      handler,
      onError: opts.onError ?? ((error: unknown): Response => {
        log.error("{name}: request failed: {error}", { name, error });
        return new Response("Internal Server Error", { status: 500 });
      }),
      serveOn,
      log,
      name,
      setting: this.#setting,
      warnEveryMs,
      relayed: tls !== undefined,
      takeOver: tls === undefined ? undefined : opts.takeOver,
    });
    this.#refusedWarning = new WarnOnce(warnEveryMs, (count) =>
      log.warn(
        "{name}: {max} connections open ({setting}): refused {count} new connection(s) " +
          "since the last warning (none could be shed: each was serving a request or in " +
          "a TLS handshake Deno cannot cut short)",
        { name, max: limits.maxConnections, setting: this.#setting, count },
      ));
    this.#relay = tls === undefined ? undefined : new TlsRelay(this.#table, tls, warnEveryMs);
    this.#table.startSweeping();
    this.#listener = listener;
    this.addr = listener.addr;
    this.limits = Object.freeze({ ...limits });
    this.#acceptLoop = this.#acceptAll();
  }

  stats(): ConnectionStats {
    return { ...this.#table.stats };
  }

  shutdown(): Promise<void> {
    this.#shut ??= this.#drain();
    return this.#shut;
  }

  close(): void {
    this.#stop();
    for (const c of this.#table.openConnections()) this.#table.cancel(c);
  }

  setCertificate(cert: string, key: string): void {
    if (this.#relay === undefined) {
      throw new Error(
        `${this.#table.name}: the certificate of a listener given to serveConnections is fixed`,
      );
    }
    if (this.#table.stopped) return;
    this.#relay.setCertificate({ cert, key });
  }

  async #acceptAll(): Promise<void> {
    let pauseMs = 0;
    while (!this.#table.stopped) {
      let conn: Deno.Conn;
      try {
        conn = await this.#listener.accept();
      } catch (err) {
        if (
          this.#table.stopped || err instanceof Deno.errors.BadResource ||
          err instanceof Deno.errors.Interrupted
        ) {
          break;
        }
        pauseMs = Math.min(1000, pauseMs === 0 ? 10 : pauseMs * 2);
        this.#table.acceptFailed(err, pauseMs);
        await this.#pauseFor(pauseMs);
        continue;
      }
      pauseMs = 0;
      if (this.#table.stopped) {
        conn.close();
        break;
      }
      this.#admit(conn);
    }
  }

  /** Waits `ms` after failed accepts, or until the server stops. */
  async #pauseFor(ms: number): Promise<void> {
    await new Promise<void>((resolve) => {
      this.#wake = resolve;
      this.#pause = setTimeout(resolve, ms);
    });
    this.#wake = undefined;
    this.#pause = undefined;
  }

  /** Serves an accepted connection, or refuses it at the cap when none can be shed. */
  #admit(conn: Deno.Conn): void {
    const table = this.#table;
    if (table.size >= this.limits.maxConnections && !table.shedOne()) {
      this.#refuse(conn);
      return;
    }
    table.stats.accepted++;
    if (this.#relay !== undefined) this.#relay.relay(conn);
    else if (isTls(conn)) this.#handshakeThenServe(conn);
    else this.#serve(conn);
  }

  #refuse(conn: Deno.Conn): void {
    this.#table.stats.refused++;
    closeQuietly(conn);
    this.#refusedWarning.note();
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
  async #handshakeThenServe(conn: Deno.TlsConn): Promise<void> {
    const table = this.#table;
    const c = table.create();
    c.handshaking = true;
    table.track(c);
    try {
      await conn.handshake();
    } catch (err) {
      table.log.debug("{name}: TLS handshake failed: {error}", { name: table.name, error: err });
      table.untrack(c);
      closeQuietly(conn);
      return;
    }
    table.untrack(c);
    if (table.stopped) {
      conn.close();
      return;
    }
    this.#serve(conn, c.quietSince);
  }

  #serve(conn: Deno.Conn, since: number = performance.now()): void {
    const table = this.#table;
    const c: Connection = table.create(since);
    if (!table.serve(conn, c)) return;
    table.track(c);
    const closed = () => table.untrack(c);
    c.http!.finished.then(closed, (err) => {
      table.log.debug("{name}: connection ended with an error: {error}", {
        name: table.name,
        error: err,
      });
      closed();
    });
  }

  #stop(): void {
    if (this.#table.stopped) return;
    this.#table.stop();
    if (this.#pause !== undefined) clearTimeout(this.#pause);
    this.#wake?.();
    closeQuietly(this.#listener);
    this.#relay?.stop();
  }

  async #drain(): Promise<void> {
    const table = this.#table;
    this.#stop();
    await this.#acceptLoop;
    await this.#relay?.acceptLoopsEnded();
    // A relay whose loopback connection is not served yet has nothing to finish.
    for (const c of table.openConnections()) if (c.relay && c.http === undefined) table.cancel(c);
    const serving = table.openConnections().filter((c) => c.http !== undefined);
    // No request yet: nothing to finish. Otherwise HTTP/1.1 closes once
    // its response is sent, HTTP/2 sends GOAWAY and closes when its
    // streams are done.
    for (const c of serving) if (!c.served && c.inFlight === 0) table.cancel(c);
    await Promise.all(
      serving.filter((c) => !c.closing).map((c) => c.http!.shutdown().catch(() => {})),
    );
    await Promise.all(serving.map((c) => c.http?.finished.catch(() => {})));
    await Promise.all(table.openConnections().map((c) => c.relay?.ended));
  }
}
