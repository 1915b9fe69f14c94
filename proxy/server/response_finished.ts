/**
 * The one hook on a response's end: {@link OutgoingResponse.finished},
 * called exactly once by the server layer when the request is over,
 * whichever way (the body delivered, cut or failed, the client gone, its
 * connection closed; a response without a body once its head is written),
 * on HTTP/3 and on the TCP fallback alike. Several parts of the proxy
 * listen to it (the tracing's SERVER span, the circuit gate's slot held
 * while the body streams): each adds its listener with {@link whenFinished},
 * never by assigning over another's. A response nobody listens to has no
 * `finished` at all (nothing to call).
 *
 * @example
 * ```ts
 * import type { OutgoingResponse } from "./types.ts";
 * declare const res: OutgoingResponse;
 *
 * whenFinished(res, (record) => console.log("done", record.status));
 * whenFinished(res, () => console.log("slot released"));
 * ```
 *
 * @module
 */

import type { OutgoingResponse } from "./types.ts";

/** What the server layer tells the listeners of a finished request. */
export type FinishedRequest = Parameters<NonNullable<OutgoingResponse["finished"]>>[0];

/**
 * Adds `listener` to the listeners of `res`'s end, after those already
 * there. Each listener runs even when an earlier one throws (the error
 * propagates once the later ones have run), so one listener's failure
 * cannot keep another's resource (a backend slot) held.
 */
export function whenFinished(
  res: OutgoingResponse,
  listener: (record: FinishedRequest) => void,
): void {
  const earlier = res.finished;
  res.finished = earlier === undefined ? listener : (record) => {
    try {
      earlier(record);
    } finally {
      listener(record);
    }
  };
}
