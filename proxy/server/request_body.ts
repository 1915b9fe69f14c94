/**
 * The request body of an HTTP/3 request stream: the payloads of its DATA
 * frames as a readable byte stream, pulled (each read takes the next
 * payload, reading the QUIC stream once more when none is queued), counted
 * against the declared length and the size limit, with the trailers kept
 * for the application.
 *
 * The payloads are views into the buffer the QUIC stream was read into
 * (`body_io.ts` `chunkReader`). A body declared to fit one read (64 KiB,
 * which the forwarder reads whole) is a plain stream of those views, as
 * they are. Any other body is a byte stream, and how its reader takes the
 * payloads decides whether that buffer can be read into again:
 *
 * - a BYOB reader (the upstream transports, `upstream/request_body_reader.ts`)
 *   has them copied into its own buffer, what does not fit kept for its
 *   next read. Nothing of a read is held once it is copied out, so the
 *   stream's next read reuses its buffer: a long upload allocates no buffer
 *   per read, here nor in the transport;
 * - a default reader (a body read whole, `shared/bytes.ts` `readUpTo`; the
 *   HEAD drain; anything else) gets the payload itself when nothing else
 *   still refers to its buffer (a byte stream hands a chunk over by
 *   transferring its buffer, which detaches it: the reader then never reads
 *   into it again), else a copy. Its chunks are its own either way.
 *
 * @example
 * ```ts
 * declare const events: RequestEvents;
 * declare const decode: (ev: SectionEvent) => Array<[string, string]>;
 * let trailers: Array<[string, string]> | null = null;
 * const body = requestBody(events, decode, undefined, 1 << 20, new AbortController(), (t) => trailers = t);
 * ```
 *
 * @module
 */

import { BodyLengthTracker, type RequestEvent, validateTrailerFields } from "../h3/mod.ts";
import { BODY_READ_BYTES, RequestBodyTooLarge } from "./body_io.ts";
import { clientBodyFailed } from "./request_end.ts";

/** A request event that stands for a header section: decoded, or skipped as too large. */
export type SectionEvent = Extract<RequestEvent, { type: "headers" | "headers_too_large" }>;

/** The request stream's events, as the body takes them. */
export interface RequestEvents {
  /**
   * The next event (reads the QUIC stream when none is queued). `recycle`:
   * the caller keeps nothing of what earlier events gave, so a read may go
   * into the buffer of the last one.
   */
  next(recycle: boolean): Promise<RequestEvent>;
  /**
   * Whether nothing still to be taken (queued events, bytes the parser
   * keeps of an unfinished frame) refers to the last read's buffer.
   */
  lastReadTaken(): boolean;
}

const EMPTY = new Uint8Array(0);

/** The next payload of a body (a view into a read's buffer), or null at its end. */
type NextPayload = (recycle: boolean) => Promise<Uint8Array | null>;

/**
 * The request body (see the module docs). A body declared to fit one read
 * of the stream (`content-length` up to 64 KiB: read whole by the
 * forwarder, nothing to recycle) is a plain stream of the payloads
 * themselves, which costs no copy and no transfer; any other body is the
 * byte stream. A failure of the client's own body (too large, malformed,
 * reset, stalled) ends the request first (`abort`, as
 * `client_body_failed`), then errors the stream.
 */
export function requestBody(
  events: RequestEvents,
  decode: (ev: SectionEvent) => Array<[string, string]> | Promise<Array<[string, string]>>,
  declared: number | undefined,
  limit: number,
  abort: AbortController,
  onTrailers: (fields: Array<[string, string]>) => void,
): ReadableStream<Uint8Array> {
  const tracker = new BodyLengthTracker(declared);
  let received = 0;
  const nextPayload: NextPayload = async (recycle) => {
    for (;;) {
      const ev = await events.next(recycle);
      if (ev.type === "data") {
        if (ev.chunk.length === 0) continue;
        received += ev.chunk.length;
        if (received > limit) throw new RequestBodyTooLarge();
        tracker.add(ev.chunk.length);
        return ev.chunk;
      }
      if (ev.type === "headers" || ev.type === "headers_too_large") {
        // Trailers (RFC 9114 §4.1): validated, kept for the application
        // (forwarded after the body); an empty section is none.
        const fields = validateTrailerFields(await decode(ev));
        if (fields.length > 0) onTrailers(fields);
        continue;
      }
      tracker.finish();
      return null;
    }
  };
  return declared !== undefined && declared <= BODY_READ_BYTES
    ? payloadStream(nextPayload, abort)
    : byteStream(nextPayload, events, abort);
}

/** The payloads themselves, one per pull; the reads they sit in are never recycled. */
function payloadStream(
  nextPayload: NextPayload,
  abort: AbortController,
): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    pull: async (controller) => {
      let payload: Uint8Array | null;
      try {
        payload = await nextPayload(false);
      } catch (err) {
        clientBodyFailed(abort, err);
      }
      if (payload === null) controller.close();
      else controller.enqueue(payload);
    },
  }, { highWaterMark: 0 });
}

/** The body as a byte stream: copied into a BYOB reader's buffers, else handed on (see the module docs). */
function byteStream(
  nextPayload: NextPayload,
  events: RequestEvents,
  abort: AbortController,
): ReadableStream<Uint8Array> {
  /** Payload taken from an event and not handed over yet (a view into a read's buffer). */
  let rest: Uint8Array = EMPTY;
  const pullOnce = async (controller: ReadableByteStreamController): Promise<void> => {
    const view = controller.byobRequest?.view ?? null;
    if (rest.length === 0) {
      // Read into the reader's buffer: nothing of earlier reads is kept.
      const payload = await nextPayload(view !== null);
      if (payload === null) {
        controller.close();
        // A BYOB read still waiting gets the end (the spec's way to release it).
        controller.byobRequest?.respond(0);
        return;
      }
      rest = payload;
    }
    if (view !== null) {
      const n = Math.min(view.byteLength, rest.length);
      new Uint8Array(view.buffer, view.byteOffset, n).set(rest.subarray(0, n));
      rest = rest.subarray(n);
      controller.byobRequest!.respond(n);
      return;
    }
    // Handing a chunk over transfers its buffer: the payload itself only
    // when no other view of that buffer is still to be taken.
    const chunk = events.lastReadTaken() ? rest : rest.slice();
    rest = EMPTY;
    controller.enqueue(chunk);
  };
  return new ReadableStream({
    type: "bytes",
    pull: async (controller) => {
      try {
        await pullOnce(controller);
      } catch (err) {
        clientBodyFailed(abort, err);
      }
    },
    cancel: () => {
      rest = EMPTY;
    },
  });
}
