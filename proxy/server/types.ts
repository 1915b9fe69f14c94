/**
 * What the HTTP/3 server hands to the application and what it expects back.
 * Nothing here knows about QUIC or QPACK.
 *
 * @module
 */

import type { RequestHead } from "../http/mod.ts";
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
  /**
   * The trailer section that followed the body (RFC 9114 §4.1), validated
   * (RFC 9110 §6.5.1): ask once the body has been read to its end (`null`:
   * none). Absent when there is no body, and on the TCP fallback.
   */
  readonly trailers?: () => Array<[string, string]> | null;
  /** The client's UDP address. */
  readonly remote: PeerAddr;
  /** The listener that carried it (absent: HTTP/3); tracing reads it for the protocol version. */
  readonly listener?: "h3" | "tcp";
  /**
   * The request's one end signal: aborted when the request ends before its
   * answer is done (the client went away, its body failed, its connection
   * closed, the proxy shut down), its `reason` a `RequestEnd` saying which
   * (`request_end.ts`; on the TCP fallback, `Deno.serve`'s own signal: any
   * reason there means the client went away).
   */
  readonly signal: AbortSignal;
  /**
   * Counts this request against `key` (its pool) for its connection until
   * the request is done (see `stream_share.ts`): `true` at once while the
   * connection has fewer than `limits.max_backend_streams_per_connection`
   * requests in flight on `key`; past it, a promise that waits up to
   * `waitMs` for one of them to finish and resolves `false` (nothing
   * counted: answer 503, do not forward) if none does. Absent: no limit.
   */
  readonly claimBackendStream?: (key: string, waitMs: number) => boolean | Promise<boolean>;
}

/** A response the server encodes as HEADERS + DATA frames. */
export interface OutgoingResponse {
  /** The HTTP status code. */
  status: number;
  /** Regular fields; names are lowercased by the server, connection-specific ones dropped. */
  headers: Iterable<[string, string]>;
  /**
   * The body: bytes, a stream (an error while reading it ends the response so
   * that the client cannot mistake it for complete), or `null`.
   */
  body: Uint8Array | ReadableStream<Uint8Array> | null;
  /**
   * The trailer section to send after the body, asked once the body has
   * been written (absent or `undefined`: none). Fields that may not be
   * trailers (RFC 9110 §6.5.1, hop-by-hop ones included) are dropped. Sent
   * by the HTTP/3 server only: the TCP fallback (`Deno.serve`) cannot.
   */
  trailers?: () => ReadonlyArray<readonly [string, string]> | undefined;
  /** The backend that answered, for the access log (absent for the proxy's own answers). */
  backend?: string;
  /** Milliseconds from sending to the backend until its response head, for the access log. */
  upstreamMs?: number;
  /**
   * Why the answer is not the backend's own, for the counters: the backend
   * timed out, failed, or the client left while the backend was asked
   * (absent: the backend answered, or the proxy answered by itself).
   */
  failure?: RequestFailure;
  /** The rate limit that refused the request (a 429 of `rate_limits`), for the access log. */
  rateLimit?: string;
  /** The `error` of the proxy's own JSON answer (`error_response.ts`); absent for a backend's. */
  error?: string;
  /**
   * Called by the server layer exactly once, when the request is finished
   * (the body delivered, cut or failed, the client gone or its connection
   * closed; a response without a body once its head is written), with the
   * {@link RequestRecord} the request sink is told (the fields read are
   * spelt out). The one hook on a response's end: the request's SERVER span
   * ends there (`proxy/tracing/`), and a backend slot held while the body
   * streams is released there (`circuit/`). Listeners are added with
   * `whenFinished` (`response_finished.ts`), never assigned over another's;
   * absent when nobody listens.
   */
  finished?: (record: {
    readonly status: number;
    readonly bytes: number;
    readonly outcome: "complete" | "broken" | "aborted";
    readonly backend?: string;
    readonly failure?: RequestFailure;
    readonly rateLimit?: string;
  }) => void;
}

/** See {@link OutgoingResponse.failure}. */
export type RequestFailure = "timeout" | "error" | "client_gone";

/** Which listener carried a request: HTTP/3 over QUIC, or the TCP fallback (HTTP/2, HTTP/1.1). */
export type ListenerKind = "h3" | "tcp";

/** One finished request, as the access log and metrics see it. */
export interface RequestRecord {
  /** The listener that carried it. */
  listener: ListenerKind;
  /** The HTTP/3 stream id (or 0 on the TCP fallback). */
  streamId: number;
  /** The client's address. */
  remote: PeerAddr;
  /** `:method` (`-` when the request head could not be decoded). */
  method: string;
  /** `:authority`, if any. */
  authority: string | undefined;
  /** `:path` as received, query included (the logger redacts); `-` when the head could not be decoded. */
  path: string;
  /** The status sent (499: the client left before an answer). */
  status: number;
  /** DATA bytes sent for the body. */
  bytes: number;
  /** From the request's HEADERS to the response's end, in milliseconds. */
  durationMs: number;
  /** The backend that answered, if one did. */
  backend?: string;
  /** Time to the backend's response head, in milliseconds. */
  upstreamMs?: number;
  /** Why the answer is not the backend's own (see {@link OutgoingResponse.failure}). */
  failure?: RequestFailure;
  /** The rate limit that refused the request, if one did. */
  rateLimit?: string;
  /** `complete`; `broken`: the body was cut and marked malformed; `aborted`: the client left. */
  outcome: "complete" | "broken" | "aborted";
}

/** The application: turns a request into a response. It should not throw; if it does, the server answers 500. */
export type RequestHandler = (req: IncomingRequest) => Promise<OutgoingResponse>;

/** Limits and settings of an HTTP/3 connection. */
export interface ConnectionOptions {
  /** The application. */
  handler: RequestHandler;
  /** SETTINGS_MAX_FIELD_SECTION_SIZE we advertise and enforce (bytes). */
  maxFieldSectionSize: number;
  /** SETTINGS_QPACK_MAX_TABLE_CAPACITY we advertise (bytes, > 0 enables the dynamic table). */
  qpackMaxTableCapacity: number;
  /** SETTINGS_QPACK_BLOCKED_STREAMS we advertise. */
  qpackBlockedStreams: number;
  /** Largest request body accepted; larger gets 413. */
  maxRequestBodyBytes: number;
  /**
   * Longest wait for the next part of a request (its HEADERS, including a
   * QPACK-blocked section, or the next DATA of its body) before answering 408,
   * for the next part of a response body before cutting it, and for the
   * client to take a response write (flow control) before dropping the
   * stream and resetting its backend stream; default 30 s.
   */
  requestIdleTimeoutMs?: number;
  /**
   * Requests one connection may have in flight to one pool (see
   * {@link IncomingRequest.claimBackendStream}); default: no limit.
   */
  maxBackendStreamsPerConnection?: number;
  /** Observers for metrics and the access log. */
  hooks?: ConnectionHooks;
}

/** Callbacks for metrics and the access log; all optional. */
export interface ConnectionHooks {
  /** A request stream was opened. */
  streamOpened?(): void;
  /** A request's field section referenced the QPACK dynamic table (`limits.qpack_max_table_capacity` > 0). */
  qpackDynamicSection?(): void;
  /** A request stream is done. */
  streamClosed?(): void;
  /**
   * A request finished: answered (by the application or by the server
   * itself: 400, 408, 413, 431, 500), cut, or abandoned; also when its head
   * could not be decoded.
   */
  requestDone?(record: RequestRecord): void;
}
