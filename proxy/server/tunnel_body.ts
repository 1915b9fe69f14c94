/**
 * The client's side of an HTTP/3 tunnel (an extended CONNECT, RFC 9220):
 * the payloads of the DATA frames on its request stream, handed on as they
 * are read (one read of the QUIC stream per pull: the transport's backpressure
 * reaches the client's flow control). Once CONNECT has completed only DATA
 * may follow on the stream (RFC 9114 §4.4): a HEADERS frame is a connection
 * error H3_FRAME_UNEXPECTED. No size limit and no idle timeout apply here:
 * a tunnel is bounded by its pool's `websocket` limits (`phases/tunnel_session.ts`).
 *
 * @example
 * ```ts
 * import type { RequestEvent } from "../h3/mod.ts";
 * declare const nextEvent: () => Promise<RequestEvent>;
 * const side = tunnelBody(nextEvent, new AbortController());
 * ```
 *
 * @module
 */

import { H3Code, H3Error, type RequestEvent } from "../h3/mod.ts";
import { clientBodyFailed } from "./request_end.ts";

/** The DATA payloads of a tunnel's request stream; see the module docs. */
export function tunnelBody(
  nextEvent: () => Promise<RequestEvent>,
  abort: AbortController,
): ReadableStream<Uint8Array> {
  const pullOnce = async (controller: ReadableStreamDefaultController<Uint8Array>) => {
    for (;;) {
      const ev = await nextEvent();
      if (ev.type === "data") {
        if (ev.chunk.length === 0) continue;
        controller.enqueue(ev.chunk);
        return;
      }
      if (ev.type === "end") return controller.close();
      throw new H3Error(
        H3Code.FRAME_UNEXPECTED,
        "connection",
        "HEADERS on a CONNECT stream after it completed (RFC 9114 §4.4)",
      );
    }
  };
  return new ReadableStream<Uint8Array>({
    pull: async (controller) => {
      try {
        await pullOnce(controller);
      } catch (err) {
        // The client broke (or reset) its side: the request ends as its failure.
        clientBodyFailed(abort, err);
      }
    },
  }, { highWaterMark: 0 });
}
