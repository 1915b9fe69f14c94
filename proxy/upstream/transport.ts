/**
 * The upstream transport: how one request reaches one backend over HTTP/2
 * and how its answer comes back. The forwarding rules (candidates, retry,
 * status mapping, metrics) live in `phases/forward.ts` and know nothing of how the
 * exchange is carried (`h2_transport.ts`, the proxy's own HTTP/2 client; a
 * test may inject another). The conformance suite in
 * `transport_conformance_test.ts` is what an implementation must pass.
 *
 * @module
 */

import type { UpstreamConnectionsView } from "../metrics/views.ts";
import { requestEndMessage } from "../server/request_end.ts";
import type { BackendTlsSetting } from "./client_certificate.ts";

/** One request to one backend, as the transport must send it: nothing added, nothing dropped. */
export interface UpstreamRequest {
  /** The backend's `host:port` (h2c, prior knowledge, unless `tls`). */
  readonly address: string;
  /**
   * The backend's `tls` setting: HTTP/2 over TLS with ALPN h2 (`ca`: PEM file
   * of CAs to trust instead of the system's; `server_name`: SNI and
   * certificate name, default the host; `client_certificate`: presented
   * for mutual TLS). Absent: h2c.
   */
  readonly tls?: BackendTlsSetting;
  /**
   * The backend's `protocol`: `h2` (absent: the default), `http1`, or `auto`
   * (with `tls`: whichever ALPN picks). Read by the dispatching transport
   * (`dispatch_transport.ts`); a single-protocol transport ignores it.
   */
  readonly protocol?: "h2" | "http1" | "auto";
  /** The method, exactly as the client sent it (case kept). */
  readonly method: string;
  /** Path and query, exactly as routed (`:path`). */
  readonly path: string;
  /** `:authority` to send, or `undefined` to send none. */
  readonly authority: string | undefined;
  /** Regular fields (lowercase names, no pseudo-headers, no connection-specific fields). */
  readonly headers: ReadonlyArray<readonly [string, string]>;
  /** The body: bytes sent whole, a stream sent with backpressure, or none (END_STREAM with HEADERS). */
  readonly body: Uint8Array | ReadableStream<Uint8Array> | null;
  /**
   * The client's trailer section (RFC 9110 §6.5), asked once the body has
   * been read to its end: sent after it as a trailing HEADERS with
   * END_STREAM. Absent, or `null` when asked: none (the common case costs
   * nothing).
   */
  readonly trailers?: () => Trailers | null;
  /**
   * `request_timeout_ms`: the longest wait on the backend, either for it to
   * take more of the request body or, once the body is sent, for its response
   * head. A backend that stalls longer fails the exchange with kind `timeout`.
   */
  readonly timeoutMs: number;
  /**
   * `connect_timeout_ms`: the one deadline of a new connection to the
   * backend, TCP connect, TLS handshake and the backend's first SETTINGS
   * together, for a session opened for this request (absent: the
   * transport's default). A session past it is closed.
   */
  readonly connectTimeoutMs?: number;
  /**
   * Aborted when the request ends early, its `reason` a `RequestEnd`
   * (`server/request_end.ts`: the client went away, its body failed, its
   * connection closed, the proxy shut down): the exchange is cancelled
   * (RST_STREAM CANCEL). Before the response head it rejects with
   * {@link abortedError}; after it, the response body stream errors with it.
   */
  readonly signal?: AbortSignal;
}

/** The backend's answer. */
export interface UpstreamResponse {
  /** `:status`. */
  status: number;
  /** Regular fields as received (lowercase), in order, repeated names kept. */
  headers: Array<[string, string]>;
  /**
   * The body: whole bytes when it was small and complete before the head was
   * handed over (one write downstream), else a stream that errors if the
   * backend's body breaks, or `null` when there is none.
   */
  body: Uint8Array | ReadableStream<Uint8Array> | null;
  /**
   * The backend's trailer section, if it sent one (validated: no
   * pseudo-headers, no connection-specific fields). With a whole or absent
   * body it is here with the head; with a streamed body the transport sets
   * it before the stream closes, so read it once the body has ended.
   */
  trailers?: Array<[string, string]>;
}

/** A trailer section: regular fields (lowercase names), in order, repeated names kept. */
export type Trailers = ReadonlyArray<readonly [string, string]>;

/**
 * Why an exchange failed. Only `connect`, `reset`, `protocol`,
 * `invalid_response` and `timeout` are the backend's fault (they count for
 * passive health); `connect` means nothing reached the backend, so another
 * backend may be tried; `invalid_response` means it answered with a head
 * that fails `http/`'s response check (RFC 9113 §8.2, §8.3; RFC 9110 §15),
 * whichever layer found it: it processed the request, which is never sent
 * again. `outcome.ts` maps each kind to a status and a passive-health report.
 */
export type UpstreamFailureKind =
  | "connect"
  | "reset"
  | "protocol"
  | "invalid_response"
  | "timeout"
  | "aborted"
  | "local";

/** A failed exchange, with its kind and the underlying cause. */
export class UpstreamError extends Error {
  /** Why it failed. */
  readonly kind: UpstreamFailureKind;
  /**
   * A `connect` failure because the backend refused the stream before any
   * response head (HTTP/2 REFUSED_STREAM, or above a GOAWAY's last stream
   * id), rather than no connection at all: `retries.retry_on: [refused]`.
   */
  readonly refusedStream: boolean;

  /** A failure of `kind`; `cause` is the underlying error; `refusedStream` see {@link refusedStream}. */
  constructor(
    kind: UpstreamFailureKind,
    message: string,
    options?: { cause?: unknown; refusedStream?: boolean },
  ) {
    super(message, options);
    this.name = "UpstreamError";
    this.kind = kind;
    this.refusedStream = options?.refusedStream ?? false;
  }

  /** Whether the backend itself failed (counts for passive health and backend error metrics). */
  get backendFault(): boolean {
    return this.kind === "connect" || this.kind === "reset" || this.kind === "protocol" ||
      this.kind === "invalid_response" || this.kind === "timeout";
  }
}

/**
 * The backend cannot carry a WebSocket: an HTTP/2 backend that has not sent
 * SETTINGS_ENABLE_CONNECT_PROTOCOL = 1 (RFC 8441 §3). Nothing was sent to
 * it; kind `local` (not the backend's fault, nothing for passive health).
 */
export class WebSocketUnsupported extends UpstreamError {
  /** `address`: the backend's. */
  constructor(address: string) {
    super(
      "local",
      `backend ${address} does not accept WebSockets over HTTP/2 ` +
        "(it sent no SETTINGS_ENABLE_CONNECT_PROTOCOL, RFC 8441)",
    );
    this.name = "WebSocketUnsupported";
  }
}

/**
 * The failure of an exchange whose request ended early: kind `aborted`,
 * the message saying how it ended (`client went away`, `client request
 * body failed`, …), the signal's `RequestEnd` as the cause.
 */
export function abortedError(signal: AbortSignal): UpstreamError {
  return new UpstreamError("aborted", requestEndMessage(signal), { cause: signal.reason });
}

/** Carries exchanges to backends; keeps one pooled HTTP/2 connection per backend address. */
export interface UpstreamTransport {
  /**
   * Sends the request and resolves with the response head (and body).
   * Rejects with an {@link UpstreamError}; any other error is a bug of the
   * transport itself (outcome `internal`, 500).
   */
  exchange(req: UpstreamRequest): Promise<UpstreamResponse>;
  /**
   * Opens a WebSocket to the backend (absent: this transport cannot): an
   * extended CONNECT with `:protocol websocket` on HTTP/2 (RFC 8441; the
   * backend must have sent SETTINGS_ENABLE_CONNECT_PROTOCOL = 1, else it
   * rejects with {@link WebSocketUnsupported}), a GET with `Upgrade:
   * websocket` on HTTP/1.1 (RFC 6455 §4.1: a `sec-websocket-key` among
   * `headers` is sent as it is, else the transport makes one, and the 101's
   * `Sec-WebSocket-Accept` is checked). `method` is ignored. Resolves with
   * status 200 and the backend's side of the tunnel as the body once it
   * switched (a checked 101 reads as 200, without its `Sec-WebSocket-Accept`),
   * or with its refusal (a final status outside 2xx) as any response. The
   * request body, the client's side, is read only once the tunnel is open,
   * so nothing of it reaches a backend that refused. `timeoutMs` bounds the
   * wait for the answer; the tunnel itself has no deadline: it ends when
   * either side ends its stream, or when the caller cancels the response
   * body or aborts `signal`.
   */
  websocket?(req: UpstreamRequest): Promise<UpstreamResponse>;
  /** Closes the pooled connection of an address no longer configured (in-flight exchanges finish). */
  release(address: string): void;
  /** Closes every connection; pending exchanges fail with kind `aborted`. */
  close(): Promise<void>;
  /**
   * Its connections' counters per backend address and protocol, for
   * `/metrics` (`connection_stats.ts`); a transport without them (a test
   * double) leaves this out.
   */
  connections?(): UpstreamConnectionsView[];
}
