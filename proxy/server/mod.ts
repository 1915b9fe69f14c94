/**
 * The HTTP/3 server: QUIC connections in, {@link IncomingRequest}s to a
 * {@link RequestHandler}, responses back as HEADERS and DATA frames; plus the
 * TCP+TLS fallback (HTTP/2, HTTP/1.1) that advertises HTTP/3 with Alt-Svc.
 *
 * @example
 * ```ts
 * import { H3Server, type RequestHandler } from "./mod.ts";
 * import { listenQuic } from "../quic/deno_transport.ts";
 *
 * const cert = await Deno.readTextFile(".dev/certs/cert.pem");
 * const key = await Deno.readTextFile(".dev/certs/key.pem");
 * const handler: RequestHandler = () => Promise.resolve({ status: 200, headers: [], body: null });
 * const server = new H3Server(listenQuic({ hostname: "::", port: 9889, cert, key }), {
 *   handler,
 *   maxFieldSectionSize: 16_384,
 *   maxRequestBodyBytes: 10 * 1024 * 1024,
 *   qpackMaxTableCapacity: 4096,
 *   qpackBlockedStreams: 16,
 * });
 * server.start();
 * await server.shutdown(10_000);
 * ```
 *
 * @module
 */

export { type ConnectionInfo, H3Server, type H3ServerOptions } from "./server.ts";
export { type ConnectionHooks, type ConnectionOptions, H3Connection } from "./connection.ts";
export { tcpFallbackHandler, type TcpFallbackOptions } from "./tcp_fallback.ts";
export type { IdleReclaimOptions } from "./idle_reclaim.ts";
export type {
  IncomingRequest,
  ListenerKind,
  OutgoingResponse,
  RequestFailure,
  RequestHandler,
  RequestRecord,
} from "./types.ts";
export type { StreamContext } from "./request_stream.ts";
export { errorResponse } from "./error_response.ts";
export { RequestEnd, requestEnd, type RequestEndKind, requestEndMessage } from "./request_end.ts";
export { RequestBodyTooLarge, RequestIdleTimeout, ResponseIdleTimeout } from "./body_io.ts";
export type { RequestHead } from "../http/mod.ts";
export type { PeerAddr } from "../quic/transport.ts";
