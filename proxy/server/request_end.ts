/**
 * How a request ended before its answer was done: the one end signal of a
 * request. The server layer aborts the request's `AbortSignal` with a
 * {@link RequestEnd} as its `reason`, whoever ends it: the client stopped
 * reading or reset the stream, the client's body failed (too large, too
 * slow, malformed, reset), the connection closed, the proxy shut down, or
 * the client took no response data for too long. The forwarder maps it to
 * the outcome (`upstream/outcome.ts`) and the transport to the message of
 * its `aborted` failure, from this reason alone: nothing else carries
 * it (the model is hyperium/h3's `RequestEnd` and its `recv_data()` errors).
 *
 * @example
 * ```ts
 * const abort = new AbortController();
 * const err = new Error("request body exceeds the limit");
 * abort.abort(new RequestEnd("client_body_failed", { cause: err }));
 * requestEnd(abort.signal); // "client_body_failed"
 * ```
 *
 * @module
 */

/**
 * Why a request ended early:
 * - `client_gone`: the client stopped reading (STOP_SENDING) or reset its
 *   request, or (TCP fallback) went away;
 * - `client_body_failed`: reading the client's body failed; the error is
 *   the `cause`, and it decides the answer (413, 408, 400, or none);
 * - `connection_closed`: the client's connection closed (by the client, an
 *   error, or the idle timeout);
 * - `shutdown`: the proxy closed the connection at the end of its drain;
 * - `write_stalled`: the client took no response data for the idle
 *   timeout and the response was cut.
 */
export type RequestEndKind =
  | "client_gone"
  | "client_body_failed"
  | "connection_closed"
  | "shutdown"
  | "write_stalled";

const MESSAGES: Readonly<Record<RequestEndKind, string>> = {
  client_gone: "client went away",
  client_body_failed: "client request body failed",
  connection_closed: "client connection closed",
  shutdown: "the proxy is shutting down",
  write_stalled: "client took no response data",
};

/** The `reason` a request's signal is aborted with. */
export class RequestEnd extends Error {
  /** Why the request ended. */
  readonly kind: RequestEndKind;

  /** A request end of `kind`; `cause` is the underlying error, if any. */
  constructor(kind: RequestEndKind, options?: { cause?: unknown }) {
    super(MESSAGES[kind], options);
    this.name = "RequestEnd";
    this.kind = kind;
  }
}

/**
 * How the request of `signal` ended, or `undefined` while it has not. A
 * signal aborted with another reason (`Deno.serve`'s `request.signal`,
 * which aborts when the client goes away) is `client_gone`.
 */
export function requestEnd(signal: AbortSignal): RequestEndKind | undefined {
  if (!signal.aborted) return undefined;
  const reason = signal.reason;
  return reason instanceof RequestEnd ? reason.kind : "client_gone";
}

/** The message for a request that ended as `signal` says (`client went away` for any other reason). */
export function requestEndMessage(signal: AbortSignal): string {
  return MESSAGES[requestEnd(signal) ?? "client_gone"];
}

/**
 * The client broke its own body (a request's or a tunnel's side): the
 * request ends first, as `client_body_failed`, so the application sees a
 * client failure and does not blame the backend; then `err` is thrown to
 * error the body.
 */
export function clientBodyFailed(abort: AbortController, err: unknown): never {
  abort.abort(new RequestEnd("client_body_failed", { cause: err }));
  throw err;
}
