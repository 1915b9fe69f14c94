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
 * @example
 * ```ts
 * const t = listenQuic({ hostname: "127.0.0.1", port: 0, cert, key });
 * const conn = await t.accept();
 * ```
 */
export function listenQuic(opts: ListenQuicOptions): QuicServerTransport {
  const endpoint = new Deno.QuicEndpoint({ hostname: opts.hostname, port: opts.port });
  const listener = endpoint.listen({
    cert: opts.cert,
    key: opts.key,
    alpnProtocols: opts.alpnProtocols ?? ["h3"],
    maxConcurrentBidirectionalStreams: opts.maxStreams ?? 256,
    maxConcurrentUnidirectionalStreams: 16,
    maxIdleTimeout: opts.idleTimeoutMs ?? 30_000,
  });
  let stopped = false;
  let closed = false;
  const addr: PeerAddr = { hostname: endpoint.addr.hostname, port: endpoint.addr.port };
  return {
    addr,
    async accept(): Promise<QuicConnection | null> {
      while (!closed) {
        let incoming: Deno.QuicIncoming;
        try {
          incoming = await listener.incoming();
        } catch (err) {
          if (closed) return null;
          throw err;
        }
        if (stopped) {
          // Draining: refuse newcomers but keep the listener running.
          // `listener.stop()` drops the endpoint's server config, and a late
          // packet of a connection still waiting to be accepted then panics
          // Deno 2.9.6 (quinn-proto endpoint.rs:217 unwraps the missing
          // config), so the listener is never stopped, only closed with the
          // endpoint.
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
    close(info?: CloseInfo) {
      if (closed) return;
      stopped = true;
      closed = true;
      try {
        endpoint.close(info ?? { closeCode: 0x100, reason: "" });
      } catch {
        // already closed
      }
    },
  };
}
