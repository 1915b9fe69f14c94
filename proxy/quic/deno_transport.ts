/**
 * {@link QuicServerTransport} on `Deno.QuicEndpoint` (unstable net API). The
 * only module that touches Deno's QUIC API.
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import {
  type AdmissionEntry,
  type AdmissionLimits,
  AdmissionTable,
  DEFAULT_ADMISSION_LIMITS,
  type Shed,
} from "./admission.ts";
import { fullGc } from "./full_gc.ts";
import { ChurnCollector, mallocTrim } from "./memory_release.ts";
import { type GateCandidate, passHandshakeGate } from "./handshake_gate.ts";
import { H3Code } from "../h3/errors.ts";
import type {
  CloseInfo,
  PeerAddr,
  QuicConnection,
  QuicServerTransport,
  RejectReason,
} from "./transport.ts";

const log = getLogger(["proxy", "quic"]);

/** Options of {@link listenQuic}. */
export interface ListenQuicOptions {
  /** Address to bind (`::` for every IPv6 and IPv4 address). */
  hostname: string;
  /** UDP port to bind (0: any free port). */
  port: number;
  /** An endpoint already bound (`hostname` and `port` are then not used). */
  endpoint?: Deno.QuicEndpoint;
  /** PEM certificate chain. */
  cert: string;
  /** PEM private key of the certificate. */
  key: string;
  /** ALPN protocols offered (default `["h3"]`). */
  alpnProtocols?: string[];
  /** Concurrent request streams a client may open (default 256). */
  maxStreams?: number;
  /** Idle timeout in ms (default 30000). */
  idleTimeoutMs?: number;
  /** Admission limits; see {@link AdmissionLimits} for defaults. */
  limits?: Partial<AdmissionLimits>;
  /** Told of every connection turned away or handshake shed, with the reason (metrics, logs). */
  onRejected?(reason: RejectReason): void;
  /** Injected clock for the handshake deadlines (ms; default `performance.now`). */
  now?: () => number;
  /**
   * A full garbage collection, asked for after every `gcAfterClosed`
   * closed connections (at most once a second): each connection's native
   * state is freed only when V8 collects its object (see `full_gc.ts`).
   * Default: `fullGc()` (`full_gc.ts`); nothing when the runtime offers none.
   */
  collectGarbage?: () => void;
  /** Closed connections (handshakes included) between collections (default 1000). */
  gcAfterClosed?: number;
  /**
   * Hands freed memory back to the kernel once a churn of closed
   * connections has passed (see `memory_release.ts`). Default:
   * `mallocTrim()`; nothing where the C library has none.
   */
  releaseMemory?: () => Promise<void> | void;
}

/** What {@link listenQuic} returns: the transport and its admission figures. */
export interface DenoQuicTransport extends QuicServerTransport {
  /** Serves new handshakes with another certificate (PEM); open connections keep theirs. */
  setCertificate(cert: string, key: string): void;
  /** Unfinished handshakes held now. */
  readonly handshakes: number;
  /** Established connections held now. */
  readonly connections: number;
}

export { type AdmissionLimits, DEFAULT_ADMISSION_LIMITS };

/**
 * A QUIC endpoint on a port the kernel picks, whose TCP twin is free too: for
 * `listen.port: 0` with the TCP fallback, which serves the same port number
 * over TCP. A port is taken from a TCP listener (closed again at once, which
 * frees it for the fallback's bind right after, in the same turn of the event
 * loop) and then bound for UDP; a UDP port in use is skipped, up to `tries`
 * times. Picking the UDP port first made startup fail now and then: the
 * kernel picks a free UDP port without looking at TCP, and a TCP socket of
 * another process could hold that number.
 *
 * @example
 * ```ts
 * const endpoint = quicEndpointWithTcpTwin("127.0.0.1");
 * endpoint.addr.port; // free for TCP too, e.g. 41234
 * ```
 */
export function quicEndpointWithTcpTwin(hostname: string, tries = 20): Deno.QuicEndpoint {
  for (let i = 1;; i++) {
    const probe = Deno.listen({ hostname, port: 0 });
    const port = (probe.addr as Deno.NetAddr).port;
    probe.close();
    try {
      return new Deno.QuicEndpoint({ hostname, port });
    } catch (err) {
      if (!(err instanceof Deno.errors.AddrInUse) || i >= tries) throw err;
    }
  }
}

/**
 * Binds a UDP socket and listens for QUIC connections with ALPN `h3`.
 *
 * A new certificate ({@link QuicServerTransport.setCertificate}) is one more
 * `endpoint.listen()` on the same endpoint: Deno replaces the endpoint's TLS
 * configuration for new handshakes and keeps existing connections. Incoming
 * connections may then arrive on any of the listeners, so all of them are
 * read. None is ever stopped: `listener.stop()` drops the endpoint's server
 * configuration, and a late packet of a connection still waiting to be
 * accepted then panics Deno 2.9.6 (quinn-proto endpoint.rs:217 unwraps the
 * missing configuration).
 *
 * @example
 * ```ts
 * const cert = await Deno.readTextFile(".dev/certs/cert.pem");
 * const key = await Deno.readTextFile(".dev/certs/key.pem");
 * const t = listenQuic({ hostname: "127.0.0.1", port: 0, cert, key });
 * const conn = await t.accept();
 * ```
 */
export function listenQuic(opts: ListenQuicOptions): DenoQuicTransport {
  const endpoint = opts.endpoint ??
    new Deno.QuicEndpoint({ hostname: opts.hostname, port: opts.port });
  const listen = (cert: string, key: string) =>
    endpoint.listen({
      cert,
      key,
      alpnProtocols: opts.alpnProtocols ?? ["h3"],
      maxConcurrentBidirectionalStreams: opts.maxStreams ?? 256,
      maxConcurrentUnidirectionalStreams: 16,
      maxIdleTimeout: opts.idleTimeoutMs ?? 30_000,
    });
  let stopped = false;
  let closed = false;
  const limits: AdmissionLimits = { ...DEFAULT_ADMISSION_LIMITS, ...opts.limits };
  const now = opts.now ?? (() => performance.now());
  const table = new AdmissionTable<Deno.QuicConn>(limits, now);
  // Collections during a churn of closed connections, and the memory given
  // back after it (see ListenQuicOptions.collectGarbage, releaseMemory).
  const collector = new ChurnCollector({
    collectGarbage: opts.collectGarbage ?? fullGc(),
    releaseMemory: reportedRelease(opts.releaseMemory ?? mallocTrim()),
    gcAfterClosed: opts.gcAfterClosed ?? 1000,
    lingerMs: limits.handshakeTimeoutMs + 1000,
    drained: () => table.handshakes <= limits.maxHandshakes / 16,
    now,
    onStep: (step, ms) =>
      log.debug("full garbage collection ({step} of a churn of closed connections): {ms} ms", {
        step,
        ms: Math.round(ms),
      }),
  });
  const countClosed = () => collector.closed();
  // Connections whose handshake completed, in completion order, and the
  // accept() calls waiting for one. A listener failing while the endpoint is
  // open is delivered as its error.
  const ready: (QuicConnection | Error)[] = [];
  const waiting: ((next: QuicConnection | Error | null) => void)[] = [];
  const deliver = (next: QuicConnection | Error) => {
    const waiter = waiting.shift();
    if (waiter) waiter(next);
    else ready.push(next);
  };
  const reject = (reason: RejectReason) => {
    log.debug("connection turned away: {reason}", { reason });
    opts.onRejected?.(reason);
  };
  const shed = (list: Shed<Deno.QuicConn>[]) => {
    for (const { entry, reason } of list) {
      closeQuietly(
        entry.handle,
        H3Code.EXCESSIVE_LOAD, // RFC 9114 §8.1: the close code for connections past a limit
        reason === "handshake_timeout" ? "handshake timeout" : "busy",
      );
      reject(reason);
    }
  };

  // One sweeper for every handshake deadline (no timer per connection): it
  // runs while handshakes are held, at a tenth of the timeout (250 ms at most).
  let sweeper: ReturnType<typeof setTimeout> | undefined;
  const sweepEvery = Math.max(5, Math.min(250, limits.handshakeTimeoutMs / 10));
  const sweep = () => {
    sweeper = undefined;
    shed(table.sweep());
    if (table.handshakes > 0 && !closed) sweeper = setTimeout(sweep, sweepEvery);
  };

  /**
   * Admits one incoming connection. Its handshake runs on its own, bounded by
   * the (shrinking) handshake deadline: a client that sends an Initial and
   * goes silent holds only its own slot, never the accept loop, and a flood
   * of such clients sheds its own oldest handshakes (see `admission.ts`).
   * `zeroRtt` makes `accept()` hand over the connection at once with a
   * `handshake` promise, so a stalled one can be closed; nothing is served on
   * it before the handshake completes.
   */
  const admit = (incoming: Deno.QuicIncoming) => {
    const refused = stopped ? "stopped" : table.refuseUnseen();
    if (refused !== undefined) {
      // Turned away without reading the address (reading it first would
      // consume the incoming connection, docs/architecture.md §4): a refusal is one small
      // packet; past the handshake rate nothing is sent at all.
      try {
        if (refused === "handshake_rate") incoming.ignore();
        else incoming.refuse();
      } catch {
        // already gone
      }
      if (refused !== "stopped") reject(refused);
      return;
    }
    let conn: Deno.QuicConn;
    try {
      conn = incoming.accept({ zeroRtt: true });
    } catch (err) {
      log.trace("accept failed: {error}", { error: String(err) });
      return;
    }
    const result = table.admit(conn, conn.remoteAddr.hostname);
    if (result.admitted === undefined) {
      closeQuietly(conn, H3Code.EXCESSIVE_LOAD, "too many connections from this address");
      reject(result.reason);
      countClosed();
      return;
    }
    shed(result.shed);
    const entry: AdmissionEntry<Deno.QuicConn> = result.admitted;
    if (sweeper === undefined) sweeper = setTimeout(sweep, sweepEvery);
    conn.closed.then(release, release);
    conn.handshake.then(
      () => serveIfEstablished(conn, entry),
      (err) => log.trace("handshake failed: {error}", { error: String(err) }),
    );
    function release() {
      table.closed(entry);
      countClosed();
    }
  };

  /**
   * The handshake gate (`handshake_gate.ts`): `handshake` resolves also for
   * a connection that died before its handshake completed, whose 0-RTT
   * streams (a replayed request) must never be read. Only a connection that
   * proves it is established and alive goes to the HTTP/3 layer; one that
   * died on its own is counted as `handshake_failed`.
   */
  const serveIfEstablished = async (
    conn: Deno.QuicConn,
    entry: AdmissionEntry<Deno.QuicConn>,
  ) => {
    let established: QuicConnection;
    try {
      established = await passHandshakeGate(conn as unknown as GateCandidate);
    } catch (err) {
      if (closed || closedHere.has(conn)) return; // shed or shut down: counted already
      log.debug("{host}:{port} not served: {error}", {
        host: conn.remoteAddr.hostname,
        port: conn.remoteAddr.port,
        error: err instanceof Error ? err.message : String(err),
      });
      opts.onRejected?.("handshake_failed");
      closeQuietly(conn, H3Code.NO_ERROR, "");
      return;
    }
    if (!table.established(entry)) return; // shed or closed meanwhile
    if (closed) return;
    deliver(established);
  };

  const read = async (listener: Deno.QuicListener) => {
    while (!closed) {
      let incoming: Deno.QuicIncoming;
      try {
        incoming = await listener.incoming();
      } catch (err) {
        if (!closed) deliver(err instanceof Error ? err : new Error(String(err)));
        return;
      }
      admit(incoming);
    }
  };
  const next = (): Promise<QuicConnection | Error | null> => {
    if (closed) return Promise.resolve(null);
    const first = ready.shift();
    if (first) return Promise.resolve(first);
    return new Promise((resolve) => waiting.push(resolve));
  };
  read(listen(opts.cert, opts.key));
  const addr: PeerAddr = { hostname: endpoint.addr.hostname, port: endpoint.addr.port };
  return {
    addr,
    get handshakes() {
      return table.handshakes;
    },
    get connections() {
      return table.connections;
    },
    async accept(): Promise<QuicConnection | null> {
      while (!closed) {
        const conn = await next();
        if (conn === null) return null;
        if (conn instanceof Error) throw conn;
        if (stopped) {
          // Draining: a connection whose handshake finished meanwhile is not served.
          closeQuietly(conn, H3Code.NO_ERROR, "shutting down");
          continue;
        }
        return conn;
      }
      return null;
    },
    stop() {
      stopped = true;
    },
    setCertificate(cert: string, key: string) {
      if (closed) return;
      // Throws before anything changes when the pair is unusable.
      read(listen(cert, key));
    },
    close(info?: CloseInfo) {
      if (closed) return;
      stopped = true;
      closed = true;
      clearTimeout(sweeper);
      collector.stop();
      for (const waiter of waiting.splice(0)) waiter(null);
      try {
        endpoint.close(info ?? { closeCode: H3Code.NO_ERROR, reason: "" });
      } catch {
        // already closed
      }
    },
  };
}

/**
 * Connections this module closed itself (shed, refused, shutting down): the
 * handshake gate does not count their failure as `handshake_failed`, the
 * admission reason that closed them was counted already.
 */
const closedHere = new WeakSet<object>();

/** `release`, logging what it gave back (resident memory before and after, time taken). */
function reportedRelease(
  release: (() => Promise<void> | void) | undefined,
): (() => Promise<void>) | undefined {
  if (!release) return undefined;
  return async () => {
    const before = Deno.memoryUsage().rss;
    const t = performance.now();
    try {
      await release();
    } catch (err) {
      log.warn("freed memory not returned to the system: {error}", { error: String(err) });
      return;
    }
    log.info(
      "freed memory returned to the system after a churn of connections: " +
        "resident {before} MiB → {after} MiB ({ms} ms)",
      {
        before: Math.round(before / 1048576),
        after: Math.round(Deno.memoryUsage().rss / 1048576),
        ms: Math.round(performance.now() - t),
      },
    );
  };
}

function closeQuietly(
  conn: { close(info?: CloseInfo): void },
  closeCode: number,
  reason: string,
): void {
  closedHere.add(conn);
  try {
    conn.close({ closeCode, reason });
  } catch {
    // already closed
  }
}
