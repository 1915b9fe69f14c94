/**
 * The TLS relay of `serveTlsConnections` (`serve_connections.ts`): each
 * connection accepted on the public plain TCP listener is copied, byte for
 * byte, to a TLS listener on the loopback interface meant for this server
 * alone, whose connections the runtime's HTTP server serves. Closing our
 * side of the relay ends a stalled handshake at once, and a new certificate
 * is a new loopback listener (those already open finish on the old one).
 * A connection to a loopback listener that no relay opened (another process
 * on the machine) is never served. See `serve_connections.ts` for the whole
 * story.
 *
 * @module
 */
import { writeAll } from "./bytes.ts";
import type { Connection, ConnectionTable, RelayLink } from "./connection_table.ts";
import { readFirstHead, RuntimePipe, type TakeOver } from "./connection_takeover.ts";
import type { TlsPair } from "./serve_connections.ts";
import { closeQuietly, WarnOnce } from "./serve_on_connection.ts";

/** A loopback TLS listener of the relay. */
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

/** The sockets of one relayed connection. */
class Relay implements RelayLink {
  /** Our connection to the loopback TLS listener, once connected. */
  back?: Deno.Conn;
  /** Loopback connection accepted on the TLS side. */
  inner?: Deno.Conn;
  /** Pumps still copying (0, 1 or 2). */
  pumping = 0;
  /** Whether the loopback connection has been accepted (or given up). */
  matched = false;
  readonly #ended = Promise.withResolvers<void>();

  /** The relay of `conn` (its record), from the client's `front` to `side`. */
  constructor(
    readonly conn: Connection,
    readonly front: Deno.Conn,
    readonly side: TlsSide,
  ) {}

  /** Resolved when its record is gone. */
  get ended(): Promise<void> {
    return this.#ended.promise;
  }

  /** Resolves {@link ended}. */
  end(): void {
    this.#ended.resolve();
  }

  /** Closes the client's socket and ours to the loopback listener. */
  close(): void {
    closeQuietly(this.front);
    closeQuietly(this.back);
  }
}

/**
 * Relays connections to loopback TLS listeners and serves them through a
 * {@link ConnectionTable}. The relays are known by the local port of their
 * loopback socket (which is the remote port the TLS side sees).
 */
export class TlsRelay {
  readonly #table: ConnectionTable;
  /** Warns of connections no relay opened, naming the loopback port they came to. */
  readonly #strangerWarning: WarnOnce<number>;
  /** The loopback listener new connections go to. */
  #side: TlsSide;
  /** Every loopback listener open: the current one and older ones still draining. */
  readonly #sides = new Set<TlsSide>();
  readonly #byPort = new Map<number, Relay>();
  /** Connections to a loopback listener that no relay opened, held until Deno can close them. */
  readonly #strangers = new Set<Deno.Conn>();
  #connectsBegun = 0;
  /** Pipes to the runtime's server for HTTP/1.1 connections whose head was read (take-over mode). */
  #pipe: RuntimePipe | undefined;
  readonly #sideLoops: Promise<void>[] = [];

  /** Opens the first loopback listener with `tls`; throws when the pair cannot be used. */
  constructor(table: ConnectionTable, tls: TlsPair, warnEveryMs: number) {
    this.#table = table;
    this.#strangerWarning = new WarnOnce(warnEveryMs, (count, port) =>
      table.log.warn(
        "{name}: refused {count} connection(s) to the internal TLS listener (127.0.0.1:{port}) " +
          "that the relay did not open, since the last warning: another process on this machine " +
          "connects to it; each holds a descriptor until its TLS handshake ends",
        { name: table.name, count, port },
      ));
    this.#side = this.#openSide(tls);
    // Made now: a machine that cannot have one fails at startup.
    if (table.takeOver !== undefined) this.#pipe = new RuntimePipe();
  }

  /**
   * Serves new connections with another certificate and key (PEM); those
   * already open keep theirs. Throws, changing nothing, when the pair cannot
   * be used.
   */
  setCertificate(pair: TlsPair): void {
    const next = this.#openSide(pair); // throws for a pair that cannot be used
    const old = this.#side;
    this.#side = next;
    old.retired = true;
    this.#retireIfDone(old);
  }

  /** Closes the loopback listeners and the connections no relay opened. */
  stop(): void {
    this.#pipe?.close();
    for (const s of this.#sides) {
      closeQuietly(s.listener);
      for (const { conn } of s.unmatched.values()) closeQuietly(conn);
      s.unmatched.clear();
    }
    this.#sides.clear();
    for (const conn of this.#strangers) closeQuietly(conn);
  }

  /** Settles once every loopback listener's accept loop has ended (after {@link stop}). */
  async acceptLoopsEnded(): Promise<void> {
    await Promise.all(this.#sideLoops);
  }

  /** Relays `front`, a connection accepted on the public listener (counted from now). */
  async relay(front: Deno.Conn): Promise<void> {
    const table = this.#table;
    const c = table.create();
    const s = this.#side;
    const r = new Relay(c, front, s);
    c.relay = r;
    table.track(c);
    s.pending++;
    const seq = this.#connectsBegun++;
    s.connecting.add(seq);
    let back: Deno.Conn;
    try {
      back = await Deno.connect({ hostname: "127.0.0.1", port: s.port });
    } catch (err) {
      s.connecting.delete(seq);
      this.#settleUnmatched(s);
      table.acceptFailed(err, 0);
      r.close();
      this.#relayEnded(r);
      return;
    }
    s.connecting.delete(seq);
    r.back = back;
    const port = (back.localAddr as Deno.NetAddr).port;
    // Known as ours before anything else can run, closing or not: its
    // loopback connection is never taken for a stranger's.
    this.#byPort.set(port, r);
    const early = s.unmatched.get(port);
    s.unmatched.delete(port);
    this.#settleUnmatched(s);
    if (c.closing) {
      r.close();
      if (early !== undefined) this.#match(r, early.conn);
      this.#relayEnded(r);
      return;
    }
    r.pumping = 2;
    this.#pump(r, front, back, true);
    this.#pump(r, back, front, false);
    if (early !== undefined) this.#match(r, early.conn);
  }

  #openSide(pair: TlsPair): TlsSide {
    const { cert, key } = pair;
    const l = Deno.listenTls({ hostname: "127.0.0.1", port: 0, cert, key, alpnProtocols: ALPN });
    const s: TlsSide = {
      listener: l,
      port: l.addr.port,
      pending: 0,
      retired: false,
      connecting: new Set(),
      unmatched: new Map(),
    };
    this.#sides.add(s);
    this.#sideLoops.push(this.#sideAcceptLoop(s));
    return s;
  }

  #retireIfDone(s: TlsSide): void {
    if (s.retired && s.pending === 0 && this.#sides.has(s)) {
      this.#sides.delete(s);
      closeQuietly(s.listener);
    }
  }

  /** Accepts the loopback connections of relays and serves them. */
  async #sideAcceptLoop(s: TlsSide): Promise<void> {
    let pauseMs = 0;
    for (;;) {
      let conn: Deno.Conn;
      try {
        conn = await s.listener.accept();
      } catch (err) {
        if (
          !this.#sides.has(s) || err instanceof Deno.errors.BadResource ||
          err instanceof Deno.errors.Interrupted
        ) {
          return;
        }
        // Out of descriptors: the relay waiting for this one is closed by
        // its header timeout if it is never taken.
        pauseMs = Math.min(1000, pauseMs === 0 ? 10 : pauseMs * 2);
        this.#table.acceptFailed(err, pauseMs);
        await new Promise((r) => setTimeout(r, pauseMs));
        continue;
      }
      pauseMs = 0;
      this.#accepted(s, conn);
    }
  }

  /** A connection accepted on the loopback listener `s`: a relay's, or a stranger's. */
  #accepted(s: TlsSide, conn: Deno.Conn): void {
    const port = (conn.remoteAddr as Deno.NetAddr).port;
    const r = this.#byPort.get(port);
    if (r !== undefined) this.#match(r, conn);
    else if (connectUnderWay(s, this.#connectsBegun)) {
      // Its relay has not heard its connect complete yet: it takes it from
      // here, or settleUnmatched finds it is nobody's.
      s.unmatched.set(port, { conn, begunBefore: this.#connectsBegun });
    } else this.#refuseStranger(conn);
  }

  /**
   * After a relay connect to `s` completes: a connection accepted there that
   * no connect under way when it was accepted can still claim is a stranger.
   */
  #settleUnmatched(s: TlsSide): void {
    for (const [port, { conn, begunBefore }] of s.unmatched) {
      if (connectUnderWay(s, begunBefore)) continue;
      s.unmatched.delete(port);
      this.#refuseStranger(conn);
    }
  }

  /**
   * A connection to the loopback TLS listener that no relay opened: never
   * served, closed once its handshake ends (Deno cannot close it sooner),
   * and counted as open (against the cap) until then.
   */
  #refuseStranger(conn: Deno.Conn): void {
    const table = this.#table;
    table.stats.notRelayed!++;
    this.#strangerWarning.note((conn.localAddr as Deno.NetAddr).port);
    if (table.stopped) {
      closeQuietly(conn);
      return;
    }
    const c = table.create();
    c.handshaking = true;
    c.closing = true; // not served, not shed, no timeout: it leaves when its handshake ends
    table.track(c);
    this.#strangers.add(conn);
    const gone = () => {
      this.#strangers.delete(conn);
      closeQuietly(conn);
      table.untrack(c);
    };
    (conn as Deno.TlsConn).handshake().then(gone, gone);
  }

  /** Pairs a relay with its accepted loopback connection and serves it. */
  #match(r: Relay, inner: Deno.Conn): void {
    const table = this.#table;
    const c = r.conn;
    r.matched = true;
    r.inner = inner;
    r.side.pending--;
    this.#retireIfDone(r.side);
    if (c.closing || table.stopped || !table.has(c)) {
      // Its relay was closed before the loopback connection came in.
      closeQuietly(inner);
      r.close();
      const port = (inner.remoteAddr as Deno.NetAddr).port;
      if (r.pumping === 0 && this.#byPort.get(port) === r) this.#byPort.delete(port);
      return;
    }
    if (table.takeOver !== undefined) {
      this.#firstHead(r, inner as Deno.TlsConn, table.takeOver).catch((err) => {
        table.log.debug("{name}: a connection failed before its first request: {error}", {
          name: table.name,
          error: err,
        });
        closeQuietly(inner);
        r.close();
      });
      return;
    }
    this.#serve(r, inner);
  }

  /**
   * Relay mode with a take-over hook (`connection_takeover.ts`): h2 goes to
   * the runtime; on HTTP/1.1 the first request head is read and offered to
   * the hook, and a connection it leaves goes to the runtime through a pipe.
   */
  async #firstHead(r: Relay, inner: Deno.TlsConn, takeOver: TakeOver): Promise<void> {
    const table = this.#table;
    const c = r.conn;
    const alpn = (await inner.handshake()).alpnProtocol;
    const gone = () => c.closing || table.stopped || !table.has(c);
    if (gone()) return closeQuietly(inner);
    if (alpn === "h2") return this.#serve(r, inner);
    const first = await readFirstHead(inner, FIRST_HEAD_LIMIT);
    if (first === null || gone()) return closeQuietly(inner);
    const remote = r.front.remoteAddr as Deno.NetAddr;
    const taken = first.headEnd < 0 ? null : takeOver(first.bytes, first.headEnd, inner, remote);
    if (taken !== null) {
      table.adopt(c, taken);
      taken.finished.then(() => this.#relayEnded(r), () => this.#relayEnded(r));
      return;
    }
    const piped = await this.#pipe!.open(inner, first.bytes);
    if (gone()) return closeQuietly(piped);
    this.#serve(r, piped);
  }

  /** Hands `conn` (the loopback connection, or a pipe of it) to the runtime's server. */
  #serve(r: Relay, conn: Deno.Conn): void {
    const table = this.#table;
    const c = r.conn;
    if (!table.serve(conn, c, r.front.remoteAddr as Deno.NetAddr)) {
      r.close();
      this.#relayEnded(r);
      return;
    }
    c.http!.finished.then(
      () => this.#relayEnded(r),
      (err) => {
        table.log.debug("{name}: connection ended with an error: {error}", {
          name: table.name,
          error: err,
        });
        this.#relayEnded(r);
      },
    );
  }

  /**
   * Called when a pump or the runtime's server of a relay ends: the record
   * goes once both pumps have stopped (both sockets are then closed) and the
   * runtime's server has finished with the loopback connection.
   */
  #relayEnded(r: Relay): void {
    if (r.pumping > 0) return;
    if (!r.matched && r.back === undefined) {
      // Its connect failed or was not made: nothing will come to the TLS side.
      r.matched = true;
      r.side.pending--;
      this.#retireIfDone(r.side);
    }
    // Connected but not accepted yet: the TLS side still gets its loopback
    // connection, which must be known as this relay's (and is closed by
    // match), not taken for a stranger's.
    if (r.back && r.matched) {
      const port = (r.back.localAddr as Deno.NetAddr).port;
      if (this.#byPort.get(port) === r) this.#byPort.delete(port);
    }
    const c = r.conn;
    const gone = () => {
      this.#table.untrack(c);
      r.end();
    };
    if (c.http === undefined) gone();
    else c.http.finished.then(gone, gone);
  }

  /**
   * Copies `from` to `to` until `from` ends. The client's end of input is
   * passed on (a half-close); the TLS side's end closes both sockets (the
   * runtime's server is done with the connection, and a client that never
   * closes its side must not keep it).
   */
  async #pump(r: Relay, from: Deno.Conn, to: Deno.Conn, fromClient: boolean): Promise<void> {
    // Held while the pump waits: small from the client (request heads), a
    // TLS record's worth towards it. 20 KiB per connection in all.
    const buf = new Uint8Array(fromClient ? 4 * 1024 : 16 * 1024);
    try {
      for (;;) {
        const n = await from.read(buf);
        if (n === null) break;
        await writeAll(to, buf.subarray(0, n));
      }
      if (fromClient) await (to as Deno.TcpConn).closeWrite();
      else r.close();
    } catch {
      // Either side is gone (or was closed by a timeout): end both.
      r.close();
    } finally {
      r.pumping--;
      if (r.pumping === 0) r.close();
      this.#relayEnded(r);
    }
  }
}

/** Most bytes read for a first request head (take-over mode); past it the connection is the runtime's. */
const FIRST_HEAD_LIMIT = 16 * 1024;

/** What the loopback TLS listeners offer: h2, then HTTP/1.1. */
const ALPN = ["h2", "http/1.1"];

/** Whether a relay connect to `s` begun before the `begunBefore`-th one is still under way. */
function connectUnderWay(s: TlsSide, begunBefore: number): boolean {
  const oldest: number | undefined = s.connecting.values().next().value;
  return oldest !== undefined && oldest < begunBefore;
}
