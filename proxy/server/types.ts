/**
 * What the HTTP/3 server hands to the application and what it expects back.
 * Nothing here knows about QUIC or QPACK.
 *
 * @module
 */

import type { RequestHead } from "../h3/mod.ts";
import type { PeerAddr } from "../quic/transport.ts";

/** A decoded, validated request whose body streams from the client. */
export interface IncomingRequest {
  /** Validated pseudo-headers and regular fields (RFC 9114 §4.3.1). */
  readonly head: RequestHead;
  /**
   * The request body, streamed with backpressure from the QUIC stream, or
   * `null` when the request carries none (GET/HEAD, or the stream already ended).
   */
  readonly body: ReadableStream<Uint8Array> | null;
  /** The client's UDP address. */
  readonly remote: PeerAddr;
  /** Aborted when the client goes away or the connection closes. */
  readonly signal: AbortSignal;
}

/** A response the server encodes as HEADERS + DATA frames. */
export interface OutgoingResponse {
  status: number;
  /** Regular fields; names are lowercased by the server, connection-specific ones dropped. */
  headers: Iterable<[string, string]>;
  /**
   * The body: bytes, a stream (an error while reading it ends the response so
   * that the client cannot mistake it for complete), or `null`.
   */
  body: Uint8Array | ReadableStream<Uint8Array> | null;
}

/** The application: turns a request into a response. It should not throw; if it does, the server answers 500. */
export type RequestHandler = (req: IncomingRequest) => Promise<OutgoingResponse>;
