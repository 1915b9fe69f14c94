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
import { fullGc, requestMajorGc } from "./full_gc.ts";
import { ChurnCollector, mallocTrim, type Step, type StepCount } from "./memory_release.ts";
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
   * A full garbage collection, run once a churn of closed connections has
   * passed, and during it when a requested one freed nothing: each
   * connection's native state is freed only when V8 collects its object (see
   * `full_gc.ts`, `memory_release.ts`). Default: `fullGc()`; nothing when the
   * runtime offers none.
   */
  collectGarbage?: () => void;
  /**
   * Asks for a regular collection, after every `gcAfterClosed` closed
   * connections (at most once a second). Default: `requestMajorGc()`.
   */
  requestCollection?: () => void;
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
  /** The collections and memory releases after churns of closed connections so far. */
  readonly memorySteps: ReadonlyMap<Step, Readonly<StepCount>>;
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
 * Binds a UDP socket and listens for QUIC connections with ALPN `h3` (a
 * {@link DenoQuicListener}).
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
  return new DenoQuicListener(opts);
}

/**
 * A QUIC listener on one `Deno.QuicEndpoint`, admitting connections through
 * an {@link AdmissionTable} and handing over those whose handshake completed.
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
 * const t = new DenoQuicListener({ hostname: "127.0.0.1", port: 0, cert, key });
 * const conn = await t.accept();
 * ```
 */
export class DenoQuicListener implements DenoQuicTransport {
  /** The bound address. */
  readonly addr: PeerAddr;
  readonly #opts: ListenQuicOptions;
  readonly #endpoint: Deno.QuicEndpoint;
  readonly #table: AdmissionTable<Deno.QuicConn>;
  /**
   * Collections during a churn of closed connections, and the memory given
   * back after it (see {@link ListenQuicOptions.collectGarbage}, `releaseMemory`).
   */
  readonly #collector: ChurnCollector;
  /**
   * Connections whose handshake completed, in completion order, and the
   * accept() calls waiting for one. A listener failing while the endpoint is
   * open is delivered as its error.
   */
  readonly #ready: (QuicConnection | Error)[] = [];
  readonly #waiting: ((next: QuicConnection | Error | null) => void)[] = [];
  /**
   * One sweeper for every handshake deadline (no timer per connection): it
   * runs while handshakes are held, at a tenth of the timeout (250 ms at most).
   */
  #sweeper: ReturnType<typeof setTimeout> | undefined;
  readonly #sweepEvery: number;
  #stopped = false;
  #closed = false;

  /** Binds (unless `opts.endpoint` is given) and starts listening; throws for an unusable pair. */
  constructor(opts: ListenQuicOptions) {
    this.#opts = opts;
    const endpoint = opts.endpoint ??
      new Deno.QuicEndpoint({ hostname: opts.hostname, port: opts.port });
    this.#endpoint = endpoint;
    const limits: AdmissionLimits = { ...DEFAULT_ADMISSION_LIMITS, ...opts.limits };
    const now = opts.now ?? (() => performance.now());
    const table = new AdmissionTable<Deno.QuicConn>(limits, now);
    this.#table = table;
    this.#collector = new ChurnCollector({
      collectGarbage: opts.collectGarbage ?? fullGc(),
      requestCollection: opts.requestCollection ?? requestMajorGc,
      releaseMemory: reportedRelease(opts.releaseMemory ?? mallocTrim()),
      gcAfterClosed: opts.gcAfterClosed ?? 1000,
      lingerMs: limits.handshakeTimeoutMs + 1000,
      drained: () => table.handshakes <= limits.maxHandshakes / 16,
      residentBytes: () => Deno.memoryUsage().rss,
      now,
      onStep: (step, ms) =>
        log.debug("garbage collection ({step} of a churn of closed connections): {ms} ms", {
          step,
          ms: Math.round(ms),
        }),
    });
    this.#sweepEvery = Math.max(5, Math.min(250, limits.handshakeTimeoutMs / 10));
    this.#read(this.#listen(opts.cert, opts.key));
    this.addr = { hostname: endpoint.addr.hostname, port: endpoint.addr.port };
  }

  /** Unfinished handshakes held now. */
  get handshakes(): number {
    return this.#table.handshakes;
  }

  /** Established connections held now. */
  get connections(): number {
    return this.#table.connections;
  }

  /** The collections and memory releases after churns of closed connections so far (metrics). */
  get memorySteps(): ReadonlyMap<Step, Readonly<StepCount>> {
    return this.#collector.steps;
  }

  /** The next established connection; null once closed. */
  async accept(): Promise<QuicConnection | null> {
    while (!this.#closed) {
      const conn = await this.#next();
      if (conn === null) return null;
      if (conn instanceof Error) throw conn;
      if (this.#stopped) {
        // Draining: a connection whose handshake finished meanwhile is not served.
        closeQuietly(conn, H3Code.NO_ERROR, "shutting down");
        continue;
      }
      return conn;
    }
    return null;
  }

  /** Turns away every new connection (draining). */
  stop(): void {
    this.#stopped = true;
  }

  /** Serves new handshakes with another certificate (PEM); open connections keep theirs. */
  setCertificate(cert: string, key: string): void {
    if (this.#closed) return;
    // Throws before anything changes when the pair is unusable.
    this.#read(this.#listen(cert, key));
  }

  /** Closes the endpoint and every connection on it. */
  close(info?: CloseInfo): void {
    if (this.#closed) return;
    this.#stopped = true;
    this.#closed = true;
    clearTimeout(this.#sweeper);
    this.#collector.stop();
    for (const waiter of this.#waiting.splice(0)) waiter(null);
    try {
      this.#endpoint.close(info ?? { closeCode: H3Code.NO_ERROR, reason: "" });
    } catch {
      // already closed
    }
  }

  #listen(cert: string, key: string): Deno.QuicListener {
    const opts = this.#opts;
    return this.#endpoint.listen({
      cert,
      key,
      alpnProtocols: opts.alpnProtocols ?? ["h3"],
      maxConcurrentBidirectionalStreams: opts.maxStreams ?? 256,
      maxConcurrentUnidirectionalStreams: 16,
      maxIdleTimeout: opts.idleTimeoutMs ?? 30_000,
    });
  }

  async #read(listener: Deno.QuicListener): Promise<void> {
    while (!this.#closed) {
      let incoming: Deno.QuicIncoming;
      try {
        incoming = await listener.incoming();
      } catch (err) {
        if (!this.#closed) this.#deliver(err instanceof Error ? err : new Error(String(err)));
        return;
      }
      this.#admit(incoming);
    }
  }

  #next(): Promise<QuicConnection | Error | null> {
    if (this.#closed) return Promise.resolve(null);
    const first = this.#ready.shift();
    if (first) return Promise.resolve(first);
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  #deliver(next: QuicConnection | Error): void {
    const waiter = this.#waiting.shift();
    if (waiter) waiter(next);
    else this.#ready.push(next);
  }

  #reject(reason: RejectReason): void {
    log.debug("connection turned away: {reason}", { reason });
    this.#opts.onRejected?.(reason);
  }

  #shed(list: Shed<Deno.QuicConn>[]): void {
    for (const { entry, reason } of list) {
      closeQuietly(
        entry.handle,
        H3Code.EXCESSIVE_LOAD, // RFC 9114 §8.1: the close code for connections past a limit
        reason === "handshake_timeout" ? "handshake timeout" : "busy",
      );
      this.#reject(reason);
    }
  }

  #sweep(): void {
    this.#sweeper = undefined;
    this.#shed(this.#table.sweep());
    if (this.#table.handshakes > 0 && !this.#closed) {
      this.#sweeper = setTimeout(() => this.#sweep(), this.#sweepEvery);
    }
  }

  /**
   * Admits one incoming connection. Its handshake runs on its own, bounded by
   * the (shrinking) handshake deadline: a client that sends an Initial and
   * goes silent holds only its own slot, never the accept loop, and a flood
   * of such clients sheds its own oldest handshakes (see `admission.ts`).
   * `zeroRtt` makes `accept()` hand over the connection at once with a
   * `handshake` promise, so a stalled one can be closed; nothing is served on
   * it before the handshake completes.
   */
  #admit(incoming: Deno.QuicIncoming): void {
    const table = this.#table;
    const refused = this.#stopped ? "stopped" : table.refuseUnseen();
    if (refused !== undefined) {
      this.#turnAway(incoming, refused);
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
      this.#reject(result.reason);
      this.#collector.closed(conn, false);
      return;
    }
    this.#shed(result.shed);
    const entry: AdmissionEntry<Deno.QuicConn> = result.admitted;
    if (this.#sweeper === undefined) {
      this.#sweeper = setTimeout(() => this.#sweep(), this.#sweepEvery);
    }
    const release = () => {
      const served = entry.state === "open";
      table.closed(entry);
      this.#collector.closed(conn, served);
    };
    conn.closed.then(release, release);
    conn.handshake.then(
      () => this.#serveIfEstablished(conn, entry),
      (err) => log.trace("handshake failed: {error}", { error: String(err) }),
    );
  }

  /**
   * Turned away without reading the address (reading it first would consume
   * the incoming connection, docs/architecture.md §4): a refusal is one
   * small packet; past the handshake rate nothing is sent at all.
   */
  #turnAway(incoming: Deno.QuicIncoming, refused: RejectReason | "stopped"): void {
    try {
      if (refused === "handshake_rate") incoming.ignore();
      else incoming.refuse();
    } catch {
      // already gone
    }
    if (refused !== "stopped") this.#reject(refused);
  }

  /**
   * The handshake gate (`handshake_gate.ts`): `handshake` resolves also for
   * a connection that died before its handshake completed, whose 0-RTT
   * streams (a replayed request) must never be read. Only a connection that
   * proves it is established and alive goes to the HTTP/3 layer; one that
   * died on its own is counted as `handshake_failed`.
   */
  async #serveIfEstablished(
    conn: Deno.QuicConn,
    entry: AdmissionEntry<Deno.QuicConn>,
  ): Promise<void> {
    let established: QuicConnection;
    try {
      established = await passHandshakeGate(conn as unknown as GateCandidate);
    } catch (err) {
      if (this.#closed || closedHere.has(conn)) return; // shed or shut down: counted already
      log.debug("{host}:{port} not served: {error}", {
        host: conn.remoteAddr.hostname,
        port: conn.remoteAddr.port,
        error: err instanceof Error ? err.message : String(err),
      });
      this.#opts.onRejected?.("handshake_failed");
      closeQuietly(conn, H3Code.NO_ERROR, "");
      return;
    }
    if (!this.#table.established(entry)) return; // shed or closed meanwhile
    if (this.#closed) return;
    this.#deliver(established);
  }
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
