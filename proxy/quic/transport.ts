/**
 * The transport seen by the HTTP/3 server: the small part of Deno's QUIC API
 * that it uses. `Deno.QuicConn` satisfies {@link QuicConnection} structurally;
 * tests use the in-memory transport in `memory_transport.ts`.
 *
 * @module
 */

/** A peer address. */
export interface PeerAddr {
  /** IP address (or host name). */
  hostname: string;
  /** UDP port. */
  port: number;
}

/** Close code and reason of a connection (QUIC application error). */
export interface CloseInfo {
  /** The application error code (an HTTP/3 code, RFC 9114 §8.1). */
  closeCode: number;
  /** A short reason phrase. */
  reason: string;
}

/** A stream we receive on; `id` is the QUIC stream id. */
export type ReceiveStream = ReadableStream<Uint8Array> & { readonly id: bigint };

/** A stream we send on. */
export type SendStream = WritableStream<Uint8Array> & { readonly id: bigint };

/** A bidirectional stream opened by the peer (a request stream). */
export interface BidiStream {
  /** What the peer sends. */
  readonly readable: ReceiveStream;
  /** What we send. */
  readonly writable: SendStream;
}

/** One accepted QUIC connection. */
export interface QuicConnection {
  /** The peer's address. */
  readonly remoteAddr: PeerAddr;
  /** Streams the peer opens for requests. */
  readonly incomingBidirectionalStreams: ReadableStream<BidiStream>;
  /** The peer's control, QPACK and other unidirectional streams. */
  readonly incomingUnidirectionalStreams: ReadableStream<ReceiveStream>;
  /** Settles when the connection has closed, with its close code. */
  readonly closed: Promise<CloseInfo>;
  /** Opens one of our unidirectional streams (control, QPACK). */
  createUnidirectionalStream(): Promise<SendStream>;
  /** Closes the connection with an application error code. */
  close(info?: CloseInfo): void;
}

/** A listener that yields accepted connections until it is stopped. */
export interface QuicServerTransport {
  /** The bound address. */
  readonly addr: PeerAddr;
  /**
   * Next connection whose handshake has completed, or `null` once the
   * transport is closed. Nothing of a connection (0-RTT streams included)
   * is readable through this interface before then.
   */
  accept(): Promise<QuicConnection | null>;
  /** Stops accepting: newcomers are refused from now on; existing connections live on. */
  stop(): void;
  /**
   * Serve new connections with this certificate chain and key (PEM) from now
   * on; existing connections keep theirs. Throws, and keeps the current pair,
   * when the pair cannot be used (not PEM, or a key that does not match).
   * Optional: a transport without it needs a restart for a new certificate.
   */
  setCertificate?(cert: string, key: string): void;
  /** Closes the endpoint and every connection on it. */
  close(info?: CloseInfo): void;
}

/**
 * Why a connection was turned away or an unfinished handshake shed by the
 * admission limits (metrics label them all): `connections` (newcomer refused,
 * `maxConnections` reached), `per_address` (its address group holds
 * `maxPerAddress`), `handshakes`, `address_handshakes` and
 * `network_handshakes` (the oldest unfinished handshake of the whole table, of
 * the address group, or of the network was closed to make room for a
 * newcomer), `handshake_timeout` (not complete within its deadline),
 * `handshake_rate` (an Initial ignored unseen: more new handshakes per second
 * than `maxHandshakeRate`), `idle_reclaim` (an idle connection sent away with
 * GOAWAY because the connection table was nearly full), `handshake_failed`
 * (the connection ended before it could be served, its handshake perhaps
 * never completed: a replayed 0-RTT first flight ends so; never handed to
 * the HTTP/3 layer, see `handshake_gate.ts`).
 */
export const REJECT_REASONS = [
  "handshakes",
  "connections",
  "per_address",
  "handshake_timeout",
  "address_handshakes",
  "network_handshakes",
  "handshake_rate",
  "idle_reclaim",
  "handshake_failed",
] as const;

/** One of {@link REJECT_REASONS}. */
export type RejectReason = typeof REJECT_REASONS[number];
