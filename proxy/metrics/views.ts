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
  /**
   * Collections and memory releases after churns of closed connections, by
   * step (`request`, `collect`, `settle`, `linger`): how many, and the main
   * thread's time in them (`proxy/quic/memory_release.ts`).
   */
  memorySteps?: ReadonlyMap<string, { readonly count: number; readonly ms: number }>;
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

/**
 * Why an upstream connection closed: `idle` (unused for its idle time),
 * `peer_closed` (the backend closed it, asked to: `connection: close`, an
 * HTTP/2 GOAWAY, or ended it with an error code), `protocol_error` (it broke
 * the protocol: a malformed response, bytes outside one, an HTTP/2
 * violation), `timeout` (no answer in time: a request's, a PING's, or no
 * SETTINGS after connecting), `cancelled` (HTTP/1.1: an exchange given up,
 * which only closing the connection cancels), `retired` (its address left
 * the configuration), `shutdown` (the proxy stopped), `error` (the socket
 * failed).
 */
export const UPSTREAM_CLOSE_REASONS = [
  "idle",
  "peer_closed",
  "protocol_error",
  "timeout",
  "cancelled",
  "retired",
  "shutdown",
  "error",
] as const;

/** One of {@link UPSTREAM_CLOSE_REASONS}. */
export type UpstreamCloseReason = typeof UPSTREAM_CLOSE_REASONS[number];

/** The connections of one upstream transport to one backend address (see `upstream/connection_stats.ts`). */
export interface UpstreamConnectionsView {
  /** The backend's `host:port`. */
  address: string;
  /** What the connections speak: `h2` or `http1`. */
  protocol: "h2" | "http1";
  /** Connections established (TCP connect and TLS handshake done). */
  opened: number;
  /** Attempts that established none (refused, timed out, TLS or ALPN refused). */
  connectFailures: number;
  /** Requests sent on a connection that had carried one before. */
  reused: number;
  /** Connections open now. */
  open: number;
  /** Connections closed, by reason. */
  closed: Readonly<Record<UpstreamCloseReason, number>>;
}
