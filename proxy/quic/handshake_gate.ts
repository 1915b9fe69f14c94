/**
 * The handshake gate: what a connection accepted with 0-RTT must prove
 * before the HTTP/3 layer may read any of its streams.
 *
 * Deno's `QuicConn.handshake` resolves when the handshake completes, and
 * also when the connection dies before it completes (quinn reports `false`
 * there; Deno 2.9.6 drops the boolean). A replayed first flight (ClientHello
 * with a PSK, and 0-RTT packets carrying a request) is such a connection:
 * the attacker cannot send the client's Finished, so it dies unfinished, and
 * its 0-RTT streams were readable the whole time. What tells the two apart,
 * measured on Deno 2.9.6 (docs/architecture.md §4): opening a stream.
 * `createUnidirectionalStream()` rejects with the connection's error once it
 * is dead, and quinn records that error before it reports the handshake's
 * outcome; `protocol` and `serverName` are set from the ClientHello on a dead
 * connection too, and `closed` settles only after `handshake`. (Accepting
 * without `zeroRtt` would wait for the real outcome, but hands over no
 * connection to close while its handshake stalls, which admission needs.)
 *
 * So the gate opens the server's first unidirectional stream (the HTTP/3
 * control stream) and hands the connection on only when that succeeds,
 * wrapped so that the HTTP/3 layer's first stream opened is that one: the
 * HTTP/3 layer never sees a connection that has not passed.
 *
 * @module
 */

import type { CloseInfo, PeerAddr, QuicConnection, SendStream } from "./transport.ts";

/** A connection whose handshake promise has resolved, as Deno's `QuicConn` offers it. */
export interface GateCandidate extends QuicConnection {
  /** Deno's stream opener: `waitUntilAvailable` waits for the peer's stream credit. */
  createUnidirectionalStream(options?: { waitUntilAvailable?: boolean }): Promise<SendStream>;
}

/** Why a connection failed the gate: it is not established and alive. */
export class HandshakeFailed extends Error {
  /** Wraps the runtime's error for the stream that could not be opened. */
  constructor(cause: unknown) {
    super(`connection not established: ${cause instanceof Error ? cause.message : cause}`, {
      cause,
    });
    this.name = "HandshakeFailed";
  }
}

/**
 * Proves that a connection whose `handshake` has resolved is established
 * and alive: opens its first unidirectional stream (waiting for the peer's
 * stream credit, which an HTTP/3 client grants in its transport parameters),
 * and returns the connection to serve. Rejects with {@link HandshakeFailed}
 * when the stream cannot be opened: the connection died, perhaps before its
 * handshake completed, and must not be served.
 *
 * @example
 * ```ts
 * declare const conn: Deno.QuicConn;
 *
 * await conn.handshake;
 * const established = await passHandshakeGate(conn); // throws HandshakeFailed on a dead one
 * ```
 */
export async function passHandshakeGate(conn: GateCandidate): Promise<QuicConnection> {
  let first: SendStream;
  try {
    first = await conn.createUnidirectionalStream({ waitUntilAvailable: true });
  } catch (err) {
    throw new HandshakeFailed(err);
  }
  return new EstablishedConnection(conn, first);
}

/**
 * A connection that passed the gate: the runtime's connection, whose first
 * {@link QuicConnection.createUnidirectionalStream} returns the stream the
 * gate opened (held here until then, so that it is not collected and closed).
 */
class EstablishedConnection implements QuicConnection {
  readonly #conn: QuicConnection;
  #first: SendStream | undefined;

  constructor(conn: QuicConnection, first: SendStream) {
    this.#conn = conn;
    this.#first = first;
  }

  get remoteAddr(): PeerAddr {
    return this.#conn.remoteAddr;
  }

  get incomingBidirectionalStreams() {
    return this.#conn.incomingBidirectionalStreams;
  }

  get incomingUnidirectionalStreams() {
    return this.#conn.incomingUnidirectionalStreams;
  }

  get closed(): Promise<CloseInfo> {
    return this.#conn.closed;
  }

  createUnidirectionalStream(): Promise<SendStream> {
    const first = this.#first;
    if (first === undefined) return this.#conn.createUnidirectionalStream();
    this.#first = undefined;
    return Promise.resolve(first);
  }

  close(info?: CloseInfo): void {
    this.#conn.close(info);
  }
}
