/**
 * {@link QuicServerTransport} on `Deno.QuicEndpoint` (unstable net API). The
 * only module that touches Deno's QUIC API.
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import type { CloseInfo, PeerAddr, QuicConnection, QuicServerTransport } from "./transport.ts";

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
  // Incoming connections from every listener, in arrival order, and the
  // accept() calls waiting for one. A listener failing while the endpoint
  // is open is delivered as its error.
  const ready: (Deno.QuicIncoming | Error)[] = [];
  const waiting: ((next: Deno.QuicIncoming | Error | null) => void)[] = [];
  const deliver = (next: Deno.QuicIncoming | Error) => {
    const waiter = waiting.shift();
    if (waiter) waiter(next);
    else ready.push(next);
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
      deliver(incoming);
    }
  };
  const next = (): Promise<Deno.QuicIncoming | Error | null> => {
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
        const incoming = await next();
        if (incoming === null) return null;
        if (incoming instanceof Error) throw incoming;
        if (stopped) {
          // Draining: refuse newcomers but keep the listeners running (see
          // above: a listener is never stopped).
          try {
            incoming.refuse();
          } catch {
            // already gone
          }
          continue;
        }
        // Accept before reading remoteAddr: reading it first consumes the
        // incoming connection (DESIGN.md §2).
        try {
          const conn = await incoming.accept();
          return conn as unknown as QuicConnection;
        } catch (err) {
          log.trace("handshake failed: {error}", { error: String(err) });
        }
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
