/**
 * {@link QuicServerTransport} on `Deno.QuicEndpoint` (unstable net API). The
 * only module that touches Deno's QUIC API.
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
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
  hostname: string;
  port: number;
  cert: string;
  key: string;
  alpnProtocols?: string[];
  /** Concurrent request streams a client may open (default 256). */
  maxStreams?: number;
  /** Idle timeout in ms (default 30000). */
  idleTimeoutMs?: number;
  /** Admission limits; see {@link AdmissionLimits} for defaults. */
  limits?: Partial<AdmissionLimits>;
  /** Told of every connection turned away, with the reason (metrics, logs). */
  onRejected?(reason: RejectReason): void;
}

/**
 * What one UDP port admits. A QUIC handshake costs the server state from the
 * client's first packet on, so handshakes are bounded in number and in time,
 * and connections in number, in all and per client address.
 */
export interface AdmissionLimits {
  /** A handshake not complete by then is closed (ms; default 10000). */
  handshakeTimeoutMs: number;
  /** Handshakes under way at once; past it newcomers are refused (default 256). */
  maxHandshakes: number;
  /** Established connections; past it newcomers are refused (default 4096). */
  maxConnections: number;
  /** Handshakes and connections from one IP address (default 64). */
  maxPerAddress: number;
}

/** Defaults of {@link AdmissionLimits}. */
export const DEFAULT_ADMISSION_LIMITS: Readonly<AdmissionLimits> = Object.freeze({
  handshakeTimeoutMs: 10_000,
  maxHandshakes: 256,
  maxConnections: 4096,
  maxPerAddress: 64,
});

/** H3_EXCESSIVE_LOAD (RFC 9114 §8.1): the close code for connections past a limit. */
const EXCESSIVE_LOAD = 0x107;

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
 * const t = listenQuic({ hostname: "127.0.0.1", port: 0, cert, key });
 * const conn = await t.accept();
 * ```
 */
export function listenQuic(
  opts: ListenQuicOptions,
): QuicServerTransport & Required<Pick<QuicServerTransport, "setCertificate">> {
  const endpoint = new Deno.QuicEndpoint({ hostname: opts.hostname, port: opts.port });
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
  let handshaking = 0;
  let established = 0;
  const perAddress = new Map<string, number>();
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
  const release = (address: string) => {
    const n = (perAddress.get(address) ?? 1) - 1;
    if (n === 0) perAddress.delete(address);
    else perAddress.set(address, n);
  };

  /**
   * Admits one incoming connection. Its handshake runs on its own, bounded by
   * the handshake timeout: a client that sends an Initial and goes silent
   * holds only its own slot, never the accept loop (it used to hold every
   * newcomer until the idle timeout). `zeroRtt` makes `accept()` hand over
   * the connection at once with a `handshake` promise, so a stalled one can
   * be closed; nothing is served on it before the handshake completes.
   */
  const admit = (incoming: Deno.QuicIncoming) => {
    if (stopped || handshaking >= limits.maxHandshakes || established >= limits.maxConnections) {
      // Past a global limit: refuse without reading the address (reading
      // it first would consume the incoming connection, DESIGN.md §2).
      try {
        incoming.refuse();
      } catch {
        // already gone
      }
      if (!stopped) reject(handshaking >= limits.maxHandshakes ? "handshakes" : "connections");
      return;
    }
    let conn: Deno.QuicConn;
    try {
      conn = incoming.accept({ zeroRtt: true });
    } catch (err) {
      log.trace("accept failed: {error}", { error: String(err) });
      return;
    }
    const address = conn.remoteAddr.hostname;
    const count = perAddress.get(address) ?? 0;
    if (count >= limits.maxPerAddress) {
      closeQuietly(conn, EXCESSIVE_LOAD, "too many connections from this address");
      reject("per_address");
      return;
    }
    perAddress.set(address, count + 1);
    handshaking++;
    let state: "handshake" | "open" | "done" = "handshake";
    const timer = setTimeout(() => {
      if (state !== "handshake") return;
      state = "done";
      handshaking--;
      closeQuietly(conn, EXCESSIVE_LOAD, "handshake timeout");
      reject("handshake_timeout");
    }, limits.handshakeTimeoutMs);
    conn.closed.catch(() => {}).finally(() => {
      clearTimeout(timer);
      if (state === "handshake") handshaking--;
      if (state === "open") established--;
      state = "done";
      release(address);
    });
    conn.handshake.then(() => {
      if (state !== "handshake") return; // timed out or closed meanwhile
      clearTimeout(timer);
      handshaking--;
      if (closed) return;
      state = "open";
      established++;
      deliver(conn as unknown as QuicConnection);
    }, (err) => log.trace("handshake failed: {error}", { error: String(err) }));
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
    async accept(): Promise<QuicConnection | null> {
      while (!closed) {
        const conn = await next();
        if (conn === null) return null;
        if (conn instanceof Error) throw conn;
        if (stopped) {
          // Draining: a connection whose handshake finished meanwhile is not served.
          closeQuietly(conn, 0x100, "shutting down");
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
      for (const waiter of waiting.splice(0)) waiter(null);
      try {
        endpoint.close(info ?? { closeCode: 0x100, reason: "" });
      } catch {
        // already closed
      }
    },
  };
}

function closeQuietly(
  conn: { close(info?: CloseInfo): void },
  closeCode: number,
  reason: string,
): void {
  try {
    conn.close({ closeCode, reason });
  } catch {
    // already closed
  }
}
