/**
 * Stream-level parsers on top of {@link FrameDecoder}: the peer's control
 * stream (RFC 9114 §6.2.1), a request stream as seen by a server (RFC 9114
 * §4.1), and unidirectional stream type handling (RFC 9114 §6.2).
 *
 * @module
 */

import { H3Code, H3Error, NEED_MORE, type NeedMore } from "./errors.ts";
import { FrameDecoder, type FrameDecoderOptions, FrameType } from "./frames.ts";
import { decodeSettings, type Settings } from "./settings.ts";
import { decodeVarint } from "./varint.ts";

// ---------------------------------------------------------------------------
// Unidirectional stream types

/** Unidirectional stream types (RFC 9114 §6.2, RFC 9204 §4.2). */
export const StreamType = {
  CONTROL: 0x0,
  PUSH: 0x1,
  QPACK_ENCODER: 0x2,
  QPACK_DECODER: 0x3,
} as const;

/** What a unidirectional stream is, by its type. */
export type UniStreamKind = "control" | "push" | "qpack_encoder" | "qpack_decoder" | "unknown";

/** Decodes the stream type varint that opens a unidirectional stream. */
export function decodeStreamType(buf: Uint8Array): { type: number; length: number } | NeedMore {
  const d = decodeVarint(buf, 0);
  if (d === NEED_MORE) return NEED_MORE;
  return { type: d.value, length: d.length };
}

/**
 * Classifies a unidirectional stream type. Reserved (0x1f * N + 0x21) and
 * unknown types are `"unknown"`: the receiver ignores such streams (RFC 9114
 * §6.2, §6.2.3) — stop reading, optionally STOP_SENDING with
 * H3_STREAM_CREATION_ERROR.
 *
 * `initiator` is who opened the stream; by default the client, since this
 * codec is a server's. Only servers push, so a push stream from a client is a
 * connection error H3_STREAM_CREATION_ERROR (RFC 9114 §6.2.2).
 */
export function classifyUniStream(
  type: number,
  initiator: "client" | "server" = "client",
): UniStreamKind {
  switch (type) {
    case StreamType.CONTROL:
      return "control";
    case StreamType.PUSH:
      if (initiator === "client") {
        throw new H3Error(
          H3Code.STREAM_CREATION_ERROR,
          "connection",
          "a client opened a push stream",
        );
      }
      return "push";
    case StreamType.QPACK_ENCODER:
      return "qpack_encoder";
    case StreamType.QPACK_DECODER:
      return "qpack_decoder";
    default:
      return "unknown";
  }
}

/**
 * Tracks the peer's critical unidirectional streams: a second control stream
 * (RFC 9114 §6.2.1) or a second QPACK encoder/decoder stream (RFC 9204 §4.2)
 * is a connection error H3_STREAM_CREATION_ERROR.
 */
export class UniStreamRegistry {
  #seen = new Set<UniStreamKind>();
  readonly #initiator: "client" | "server";

  /** `initiator`: who opens the streams this registry sees (the peer). */
  constructor(initiator: "client" | "server" = "client") {
    this.#initiator = initiator;
  }

  /** Registers a new stream of `type`; returns its kind or throws. */
  open(type: number): UniStreamKind {
    const kind = classifyUniStream(type, this.#initiator);
    if (kind === "control" || kind === "qpack_encoder" || kind === "qpack_decoder") {
      if (this.#seen.has(kind)) {
        throw new H3Error(
          H3Code.STREAM_CREATION_ERROR,
          "connection",
          `second ${kind} stream opened by the peer`,
        );
      }
      this.#seen.add(kind);
    }
    return kind;
  }
}

// ---------------------------------------------------------------------------
// Control stream

/** Something the peer said on its control stream. */
export type ControlEvent =
  | { type: "settings"; settings: Settings }
  | { type: "goaway"; id: number }
  | { type: "max_push_id"; id: number }
  | { type: "cancel_push"; id: number };

/** Options of {@link ControlStreamParser}. */
export interface ControlStreamParserOptions extends FrameDecoderOptions {
  /**
   * Who sent this control stream. Default `"client"` (this codec is a
   * server's). From a server, MAX_PUSH_ID is FRAME_UNEXPECTED and a GOAWAY ID
   * must be a client-initiated bidirectional stream ID.
   */
  peer?: "client" | "server";
}

/**
 * Parses the peer's control stream (the bytes after its stream type).
 *
 * Connection errors:
 * - the first frame is not SETTINGS → H3_MISSING_SETTINGS (RFC 9114 §6.2.1).
 *   A reserved/unknown frame before SETTINGS counts too; it is noticed when
 *   the next known frame arrives.
 * - a second SETTINGS, or DATA, HEADERS, PUSH_PROMISE → H3_FRAME_UNEXPECTED
 *   (RFC 9114 §7.2.4, §7.2.1, §7.2.2, §7.2.5).
 * - GOAWAY/MAX_PUSH_ID/CANCEL_PUSH whose payload is not exactly one varint →
 *   H3_FRAME_ERROR (RFC 9114 §7.1).
 * - a GOAWAY with a larger ID than an earlier one → H3_ID_ERROR (RFC 9114
 *   §5.2); a MAX_PUSH_ID smaller than an earlier one → H3_ID_ERROR (§7.2.7).
 * - from a client, a CANCEL_PUSH above the largest MAX_PUSH_ID it sent (or
 *   before any) → H3_ID_ERROR (§7.2.3).
 * - the stream ends ({@link end}) → H3_CLOSED_CRITICAL_STREAM (§6.2.1).
 *
 * IDs above 2^53 - 1 are approximate (see `varint.ts`).
 * Checking CANCEL_PUSH IDs within MAX_PUSH_ID against pushes actually
 * promised is left to the caller, which knows its promises (RFC 9114 §7.2.3).
 */
export class ControlStreamParser {
  readonly #dec: FrameDecoder;
  readonly #peer: "client" | "server";
  #settings: Settings | undefined;
  #lastGoaway = -1;
  #maxPushId = -1;

  /**
   * Creates a parser for the start of the peer's control stream.
   *
   * @param opts the frame size limit and which side the peer is.
   */
  constructor(opts: ControlStreamParserOptions = {}) {
    this.#dec = new FrameDecoder(opts);
    this.#peer = opts.peer ?? "client";
  }

  /** The peer's settings, once received. */
  get settings(): Settings | undefined {
    return this.#settings;
  }

  /** Feeds bytes; returns the events they complete. */
  push(chunk: Uint8Array): ControlEvent[] {
    this.#dec.push(chunk);
    const events: ControlEvent[] = [];
    for (;;) {
      const ev = this.#dec.next();
      if (ev === NEED_MORE) return events;
      if (ev.kind === "data") throw this.#unexpected(FrameType.DATA);
      if (ev.kind === "oversized") throw this.#unexpected(ev.type);
      const { type, payload } = ev;
      if (this.#settings === undefined) {
        if (type !== FrameType.SETTINGS || this.#dec.framesStarted !== 1) {
          throw new H3Error(
            H3Code.MISSING_SETTINGS,
            "connection",
            `first frame on the control stream is not SETTINGS (0x${type.toString(16)})`,
          );
        }
        const settings = decodeSettings(payload);
        this.#settings = settings;
        events.push({ type: "settings", settings });
        continue;
      }
      switch (type) {
        case FrameType.GOAWAY: {
          const id = singleVarint(payload, "GOAWAY");
          if (this.#peer === "server" && id % 4 !== 0) {
            throw new H3Error(
              H3Code.ID_ERROR,
              "connection",
              `GOAWAY stream ID ${id} is not a client-initiated bidirectional stream`,
            );
          }
          if (this.#lastGoaway >= 0 && id > this.#lastGoaway) {
            throw new H3Error(
              H3Code.ID_ERROR,
              "connection",
              `GOAWAY ID grew from ${this.#lastGoaway} to ${id}`,
            );
          }
          this.#lastGoaway = id;
          events.push({ type: "goaway", id });
          break;
        }
        case FrameType.MAX_PUSH_ID: {
          if (this.#peer === "server") throw this.#unexpected(type);
          const id = singleVarint(payload, "MAX_PUSH_ID");
          if (id < this.#maxPushId) {
            throw new H3Error(
              H3Code.ID_ERROR,
              "connection",
              `MAX_PUSH_ID shrank from ${this.#maxPushId} to ${id}`,
            );
          }
          this.#maxPushId = id;
          events.push({ type: "max_push_id", id });
          break;
        }
        case FrameType.CANCEL_PUSH: {
          const id = singleVarint(payload, "CANCEL_PUSH");
          // From a client: a push ID it never allowed (no MAX_PUSH_ID yet, or
          // above the largest) cannot name a push (RFC 9114 §7.2.3).
          if (this.#peer === "client" && id > this.#maxPushId) {
            throw new H3Error(
              H3Code.ID_ERROR,
              "connection",
              this.#maxPushId < 0
                ? `CANCEL_PUSH ${id} before any MAX_PUSH_ID`
                : `CANCEL_PUSH ${id} above MAX_PUSH_ID ${this.#maxPushId}`,
            );
          }
          events.push({ type: "cancel_push", id });
          break;
        }
        default:
          // SETTINGS (a second one), HEADERS, PUSH_PROMISE.
          throw this.#unexpected(type);
      }
    }
  }

  /** The peer closed its control stream: always a connection error. */
  end(): never {
    throw new H3Error(
      H3Code.CLOSED_CRITICAL_STREAM,
      "connection",
      "the peer closed its control stream",
    );
  }

  #unexpected(type: number): H3Error {
    if (this.#settings === undefined) {
      return new H3Error(
        H3Code.MISSING_SETTINGS,
        "connection",
        `first frame on the control stream is not SETTINGS (0x${type.toString(16)})`,
      );
    }
    return new H3Error(
      H3Code.FRAME_UNEXPECTED,
      "connection",
      `frame type 0x${type.toString(16)} is not allowed on the control stream`,
    );
  }
}

function singleVarint(payload: Uint8Array, frame: string): number {
  const d = decodeVarint(payload, 0);
  if (d === NEED_MORE || d.length !== payload.length) {
    throw new H3Error(
      H3Code.FRAME_ERROR,
      "connection",
      `${frame} payload must be exactly one varint (${payload.length} bytes)`,
    );
  }
  return d.value;
}

// ---------------------------------------------------------------------------
// Request stream

/**
 * What a client sent on a request stream. `headers_too_large` stands for a
 * HEADERS frame over `maxHeadersSize`, skipped undecoded (`length` bytes).
 */
export type RequestEvent =
  | { type: "headers"; block: Uint8Array }
  | { type: "headers_too_large"; length: number }
  | { type: "data"; chunk: Uint8Array }
  | { type: "end" };

const P_HEAD = 0;
const P_BODY = 1;
const P_TRAILERS = 2;
const P_ENDED = 3;

/**
 * Parses a client-initiated bidirectional stream as a server sees it
 * (RFC 9114 §4.1): HEADERS, then any DATA, then optionally trailing HEADERS.
 * `headers` events carry the encoded field section for QPACK; the first is the
 * request head, a second one the trailers. A HEADERS frame longer than
 * `maxHeadersSize` takes the same place as a `headers_too_large` event, its
 * payload skipped as it arrives (never buffered): the caller answers it as a
 * field section over its limit (RFC 9114 §4.2.2), with no QPACK decoding.
 * `data` events are zero-copy views of the pushed chunks and never empty.
 *
 * Connection errors H3_FRAME_UNEXPECTED (RFC 9114 §4.1, §7.2): DATA before
 * HEADERS, any DATA or HEADERS after trailers, SETTINGS / GOAWAY / MAX_PUSH_ID
 * / CANCEL_PUSH (control-stream frames, §7.2.3–§7.2.7), PUSH_PROMISE from a
 * client (§7.2.5). Reserved and unknown frames are skipped anywhere (§9).
 *
 * On {@link end}: a stream ending inside a frame → connection error
 * H3_FRAME_ERROR (§7.1); a stream ending without HEADERS → stream error
 * H3_REQUEST_INCOMPLETE (§4.1).
 */
export class RequestStreamParser {
  readonly #dec: FrameDecoder;
  #phase = P_HEAD;

  /**
   * Creates a parser for a new request stream.
   *
   * @param opts the frame size limits.
   */
  constructor(opts: FrameDecoderOptions = {}) {
    this.#dec = new FrameDecoder(opts);
  }

  /** Whether the request head (first HEADERS) has been received. */
  get headersReceived(): boolean {
    return this.#phase !== P_HEAD;
  }

  /** Whether trailers have been received. */
  get trailersReceived(): boolean {
    return this.#phase === P_TRAILERS;
  }

  /**
   * Bytes pushed and still kept, by reference, for a frame not complete
   * yet: while this is 0 the parser refers to no pushed chunk.
   */
  get pendingBytes(): number {
    return this.#dec.pendingBytes;
  }

  /** Feeds bytes; returns the events they complete. */
  push(chunk: Uint8Array): RequestEvent[] {
    if (this.#phase === P_ENDED) throw new Error("RequestStreamParser: push after end");
    this.#dec.push(chunk);
    const events: RequestEvent[] = [];
    for (;;) {
      const ev = this.#dec.next();
      if (ev === NEED_MORE) return events;
      if (ev.kind === "data") {
        if (this.#phase !== P_BODY) {
          throw unexpected(
            this.#phase === P_HEAD ? "DATA before HEADERS" : "DATA after trailers",
          );
        }
        if (ev.chunk.length > 0) events.push({ type: "data", chunk: ev.chunk });
        continue;
      }
      if (ev.kind === "oversized") {
        this.#headersFrame();
        events.push({ type: "headers_too_large", length: ev.length });
        continue;
      }
      switch (ev.type) {
        case FrameType.HEADERS:
          this.#headersFrame();
          events.push({ type: "headers", block: ev.payload });
          break;
        case FrameType.PUSH_PROMISE:
          throw unexpected("PUSH_PROMISE from a client");
        default:
          // SETTINGS, GOAWAY, MAX_PUSH_ID, CANCEL_PUSH.
          throw unexpected(`control frame 0x${ev.type.toString(16)} on a request stream`);
      }
    }
  }

  /** A HEADERS frame starts the body, or is the trailers; none may follow trailers. */
  #headersFrame(): void {
    if (this.#phase === P_TRAILERS) throw unexpected("HEADERS after trailers");
    this.#phase = this.#phase === P_HEAD ? P_BODY : P_TRAILERS;
  }

  /** The client ended the stream (FIN). Returns `[{ type: "end" }]` or throws. */
  end(): RequestEvent[] {
    if (this.#phase === P_ENDED) return [];
    if (!this.#dec.atFrameBoundary) {
      throw new H3Error(
        H3Code.FRAME_ERROR,
        "connection",
        "request stream ended inside a frame",
      );
    }
    if (this.#phase === P_HEAD) {
      throw new H3Error(
        H3Code.REQUEST_INCOMPLETE,
        "stream",
        "request stream ended before a HEADERS frame",
      );
    }
    this.#phase = P_ENDED;
    return [{ type: "end" }];
  }
}

function unexpected(what: string): H3Error {
  return new H3Error(H3Code.FRAME_UNEXPECTED, "connection", `${what} (RFC 9114 §4.1)`);
}
