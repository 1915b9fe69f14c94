/**
 * What the proxy's sockets report at each scrape: the QUIC socket's figures
 * and each TCP listener's connection counters. `ProxyMetrics` holds the
 * readers of these views and the Prometheus exposition renders them; both
 * import them from here.
 *
 * @module
 */

/** The QUIC socket's figures (see `quic/udp_stats.ts`); a figure Linux does not give is left out. */
export interface QuicSocketView {
  /** Unfinished handshakes held now. */
  handshakes: number;
  /** The socket's receive buffer as `getsockopt(SO_RCVBUF)` last read it (raised at startup, lowered during a flood), bytes. */
  receiveBufferBytes?: number;
  /** Host-wide UDP datagrams dropped at a full receive buffer since boot (`/proc/net/snmp{,6}`). */
  rcvbufErrors?: number;
  /** Datagrams the QUIC socket itself dropped (`/proc/net/udp{,6}`). */
  socketDrops?: number;
}

/** Connection counters of one TCP listener (see `shared/serve_connections.ts`). */
export interface TcpListenerView {
  /** `tcp_fallback` or `admin`. */
  listener: string;
  /** Connections open now. */
  open: number;
  /** Closed at once: the listener's connection cap was reached and none could be shed. */
  refused: number;
  /** Closed to make room for a newcomer at the cap (no request in flight on them). */
  shed: number;
  /** TCP fallback only: connections to its internal TLS listener that its relay did not open. */
  notRelayed?: number;
  /** Failed accepts (e.g. out of file descriptors). */
  acceptErrors: number;
  /** Closed without a complete request head (TLS handshake included) in time. */
  headerTimeouts: number;
  /** Closed after no request was in flight for the idle timeout. */
  idleTimeouts: number;
}
