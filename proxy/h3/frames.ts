/**
 * HTTP/3 frame layer (RFC 9114 §7): encoders and the incremental
 * {@link FrameDecoder}.
 *
 * Every frame is `type (varint) | length (varint) | payload`. The decoder is
 * fed chunks with arbitrary boundaries and:
 * - streams DATA payloads as zero-copy `subarray`s of the pushed chunks, as
 *   soon as bytes arrive; a DATA frame is never buffered whole, whatever its
 *   declared length;
 * - delivers every other known frame whole, bounded by `maxFrameSize`;
 * - skips reserved (0x1f * N + 0x21) and unknown frame types without
 *   buffering them (RFC 9114 §7.2.8, §9);
 * - rejects the HTTP/2-only types 0x2, 0x6, 0x8, 0x9 with
 *   H3_FRAME_UNEXPECTED (RFC 9114 §7.2.8, §11.2.1).
 *
 * A HEADERS frame longer than `maxHeadersSize` (but within `maxFrameSize`) is
 * not buffered either: it yields one `oversized` event as soon as its header is
 * read, and its payload is discarded as it arrives. Its receiver answers it as
 * a field section over the size limit (RFC 9114 §4.2.2), a stream error.
 *
 * Limits (connection errors):
 * - a HEADERS, PUSH_PROMISE or SETTINGS frame longer than `maxFrameSize` →
 *   H3_EXCESSIVE_LOAD. The frame is well formed, the peer only asks for more
 *   memory than this endpoint grants (RFC 9114 §8.1, §10.5), so EXCESSIVE_LOAD
 *   rather than FRAME_ERROR. It is raised as soon as the frame header is read,
 *   before any of the payload is buffered.
 * - a CANCEL_PUSH, GOAWAY or MAX_PUSH_ID frame longer than 8 bytes →
 *   H3_FRAME_ERROR: their payload is a single varint, so a longer one can only
 *   be malformed (RFC 9114 §7.1).
 *
 * @module
 */

import { H3Code, H3Error, NEED_MORE, type NeedMore } from "./errors.ts";
import { encodeSettings, type Settings } from "./settings.ts";
import { decodeVarint, encodeVarint, varintLength, writeVarint } from "./varint.ts";

/** Frame types of RFC 9114 §7.2. */
export const FrameType = {
  DATA: 0x0,
  HEADERS: 0x1,
  CANCEL_PUSH: 0x3,
  SETTINGS: 0x4,
  PUSH_PROMISE: 0x5,
  GOAWAY: 0x7,
  MAX_PUSH_ID: 0xd,
} as const;

/** HTTP/2 frame types that have no HTTP/3 equivalent (RFC 9114 §11.2.1): PRIORITY, PING, WINDOW_UPDATE, CONTINUATION. */
export const HTTP2_ONLY_FRAME_TYPES: ReadonlySet<number> = new Set([0x2, 0x6, 0x8, 0x9]);

/** Default bound for a non-DATA frame's payload: 64 KiB. */
export const DEFAULT_MAX_FRAME_SIZE = 64 * 1024;

/** Whether `type` is a reserved "grease" frame type 0x1f * N + 0x21 (RFC 9114 §7.2.8). */
export function isReservedFrameType(type: number | bigint): boolean {
  const big = BigInt(type);
  return big >= 0x21n && (big - 0x21n) % 0x1fn === 0n;
}

/**
 * One decoded item: a whole non-DATA frame, a piece of a DATA frame's
 * payload, or a HEADERS frame over `maxHeadersSize` whose payload is skipped
 * (`length` bytes; only with that option set).
 */
export type FrameEvent =
  | { kind: "frame"; type: number; payload: Uint8Array }
  | { kind: "data"; chunk: Uint8Array }
  | { kind: "oversized"; type: number; length: number };

/** Options of {@link FrameDecoder}. */
export interface FrameDecoderOptions {
  /** Largest payload accepted for a HEADERS, PUSH_PROMISE or SETTINGS frame. Default 64 KiB. */
  maxFrameSize?: number;
  /**
   * Largest HEADERS payload delivered; a longer one, up to `maxFrameSize`, is
   * reported as an `oversized` event and skipped unbuffered. Default: no
   * HEADERS frame is skipped.
   */
  maxHeadersSize?: number;
}

/** The header of a frame: `type | length`. Lets a DATA payload be sent without copying it. */
export function encodeFrameHeader(type: number, length: number): Uint8Array {
  const out = new Uint8Array(varintLength(type) + varintLength(length));
  writeVarint(out, writeVarint(out, 0, type), length);
  return out;
}

/** A whole frame: header followed by a copy of `payload`. */
export function encodeFrame(type: number, payload: Uint8Array): Uint8Array {
  const headerLength = varintLength(type) + varintLength(payload.length);
  const out = new Uint8Array(headerLength + payload.length);
  writeVarint(out, writeVarint(out, 0, type), payload.length);
  out.set(payload, headerLength);
  return out;
}

/**
 * A HEADERS frame with `block` followed by a DATA frame with `body`, in one
 * buffer: a small response goes out in one write and one allocation
 * (RFC 9114 §4.1). Without a body, {@link encodeFrame} does.
 */
export function encodeHeadersAndData(block: Uint8Array, body: Uint8Array): Uint8Array {
  const headersLength = varintLength(FrameType.HEADERS) + varintLength(block.length) +
    block.length;
  const out = new Uint8Array(
    headersLength + varintLength(FrameType.DATA) + varintLength(body.length) + body.length,
  );
  out.set(block, writeVarint(out, writeVarint(out, 0, FrameType.HEADERS), block.length));
  out.set(body, writeVarint(out, writeVarint(out, headersLength, FrameType.DATA), body.length));
  return out;
}

/** A SETTINGS frame. */
export function encodeSettingsFrame(settings: Settings): Uint8Array {
  return encodeFrame(FrameType.SETTINGS, encodeSettings(settings));
}

/** A GOAWAY frame carrying a stream ID (server) or push ID (client). */
export function encodeGoaway(id: number | bigint): Uint8Array {
  return encodeFrame(FrameType.GOAWAY, encodeVarint(id));
}

/** A MAX_PUSH_ID frame. */
export function encodeMaxPushId(id: number | bigint): Uint8Array {
  return encodeFrame(FrameType.MAX_PUSH_ID, encodeVarint(id));
}

/** A CANCEL_PUSH frame. */
export function encodeCancelPush(id: number | bigint): Uint8Array {
  return encodeFrame(FrameType.CANCEL_PUSH, encodeVarint(id));
}

const S_HEADER = 0;
const S_DATA = 1;
const S_SKIP = 2;
const S_BODY = 3;

const EMPTY = new Uint8Array(0);

/** Concatenates byte arrays: frames into a stream's bytes, pieces into a frame. */
export function concatBytes(...parts: Uint8Array[]): Uint8Array<ArrayBuffer> {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/**
 * Incremental frame decoder for one stream. `push` chunks as they arrive, then
 * call `next` until it returns {@link NEED_MORE}.
 *
 * DATA frames: every DATA frame yields at least one `data` event. The first is
 * returned as soon as the frame header is complete and may be empty (always
 * so for a zero-length DATA frame); the rest are non-empty zero-copy views of
 * the pushed chunks, so the caller must not reuse a pushed chunk's memory
 * while it still holds an event's bytes. Non-DATA payloads are views when the
 * whole payload lies in one pushed chunk, otherwise one fresh copy.
 *
 * After `next` throws an {@link H3Error}, every later call throws it again.
 */
export class FrameDecoder {
  /** Largest non-DATA payload accepted (see {@link FrameDecoderOptions}). */
  readonly maxFrameSize: number;
  /** Largest HEADERS payload delivered rather than skipped (see {@link FrameDecoderOptions}). */
  readonly maxHeadersSize: number;

  #chunks: Uint8Array[] = [];
  #ci = 0;
  #off = 0;
  #buffered = 0;
  #state = S_HEADER;
  #type = 0;
  #remaining = 0;
  #dataStart = false;
  /** The frame being skipped is an oversized HEADERS frame not yet reported. */
  #oversized = false;
  #framesStarted = 0;
  #scratch = new Uint8Array(16);
  #error: H3Error | undefined;

  /**
   * Creates a decoder at the start of a stream.
   *
   * @param opts frame size limits (default {@link DEFAULT_MAX_FRAME_SIZE}, no HEADERS skipped).
   */
  constructor(opts: FrameDecoderOptions = {}) {
    const max = opts.maxFrameSize ?? DEFAULT_MAX_FRAME_SIZE;
    if (!Number.isSafeInteger(max) || max < 0) throw new RangeError(`bad maxFrameSize ${max}`);
    const headers = opts.maxHeadersSize ?? max;
    if (!Number.isSafeInteger(headers) || headers < 0) {
      throw new RangeError(`bad maxHeadersSize ${headers}`);
    }
    this.maxFrameSize = max;
    this.maxHeadersSize = headers;
  }

  /** Adds received bytes. The chunk is kept by reference, not copied. */
  push(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    this.#chunks.push(chunk);
    this.#buffered += chunk.length;
  }

  /** Bytes pushed but not yet returned or skipped. */
  get pendingBytes(): number {
    return this.#buffered;
  }

  /** True when no frame is partly received: the stream may end cleanly here. */
  get atFrameBoundary(): boolean {
    return this.#state === S_HEADER && this.#buffered === 0;
  }

  /** How many frame headers were read so far, including skipped frames. */
  get framesStarted(): number {
    return this.#framesStarted;
  }

  /** The next event, or {@link NEED_MORE} once the pushed bytes are used up. */
  next(): FrameEvent | NeedMore {
    if (this.#error !== undefined) throw this.#error;
    try {
      return this.#next();
    } catch (e) {
      if (e instanceof H3Error) this.#error = e;
      throw e;
    }
  }

  #next(): FrameEvent | NeedMore {
    for (;;) {
      switch (this.#state) {
        case S_HEADER:
          if (this.#buffered === 0 || !this.#readHeader()) return NEED_MORE;
          continue;
        case S_DATA: {
          const remaining = this.#remaining;
          if (remaining === 0 || this.#buffered === 0) {
            if (!this.#dataStart) return NEED_MORE;
            this.#dataStart = false;
            if (remaining === 0) this.#state = S_HEADER;
            return { kind: "data", chunk: EMPTY };
          }
          this.#dataStart = false;
          const c = this.#chunks[this.#ci];
          const off = this.#off;
          const avail = c.length - off;
          let chunk: Uint8Array;
          let taken: number;
          if (avail <= remaining) {
            chunk = off === 0 ? c : c.subarray(off);
            taken = avail;
            this.#dropChunk();
          } else {
            chunk = c.subarray(off, off + remaining);
            taken = remaining;
            this.#off = off + remaining;
          }
          this.#buffered -= taken;
          this.#remaining = remaining - taken;
          if (this.#remaining === 0) this.#state = S_HEADER;
          return { kind: "data", chunk };
        }
        case S_SKIP: {
          if (this.#oversized) {
            // Announced before any of its payload is dropped: `#remaining` is its length.
            this.#oversized = false;
            return { kind: "oversized", type: this.#type, length: this.#remaining };
          }
          const n = Math.min(this.#remaining, this.#buffered);
          this.#discard(n);
          this.#remaining -= n;
          if (this.#remaining > 0) return NEED_MORE;
          this.#state = S_HEADER;
          continue;
        }
        default: {
          const length = this.#remaining;
          if (this.#buffered < length) return NEED_MORE;
          const payload = this.#take(length);
          this.#state = S_HEADER;
          return { kind: "frame", type: this.#type, payload };
        }
      }
    }
  }

  /** Reads a whole frame header if buffered; returns false when more bytes are needed. */
  #readHeader(): boolean {
    const c = this.#chunks[this.#ci];
    const off = this.#off;
    const avail = c.length - off;
    let buf = c;
    let pos = off;
    const typeLength = 1 << (c[off] >> 6);
    if (avail <= typeLength || avail < typeLength + (1 << (c[off + typeLength] >> 6))) {
      // The header straddles chunks (or is incomplete): gather at most 16 bytes.
      const n = Math.min(16, this.#buffered);
      this.#peek(this.#scratch, n);
      buf = this.#scratch.subarray(0, n);
      pos = 0;
    }
    const type = decodeVarint(buf, pos);
    if (type === NEED_MORE) return false;
    if (HTTP2_ONLY_FRAME_TYPES.has(type.value)) {
      throw new H3Error(
        H3Code.FRAME_UNEXPECTED,
        "connection",
        `HTTP/2 frame type 0x${type.value.toString(16)} is not allowed in HTTP/3`,
      );
    }
    const length = decodeVarint(buf, pos + type.length);
    if (length === NEED_MORE) return false;
    this.#discard(type.length + length.length);
    this.#framesStarted++;
    this.#startFrame(type.value, length.value);
    return true;
  }

  #startFrame(type: number, length: number): void {
    this.#type = type;
    this.#remaining = length;
    switch (type) {
      case FrameType.DATA:
        this.#state = S_DATA;
        this.#dataStart = true;
        return;
      case FrameType.HEADERS:
      case FrameType.PUSH_PROMISE:
      case FrameType.SETTINGS:
        if (length > this.maxFrameSize) {
          throw new H3Error(
            H3Code.EXCESSIVE_LOAD,
            "connection",
            `frame type 0x${
              type.toString(16)
            } of ${length} bytes exceeds the limit of ${this.maxFrameSize}`,
          );
        }
        this.#oversized = type === FrameType.HEADERS && length > this.maxHeadersSize;
        this.#state = this.#oversized ? S_SKIP : S_BODY;
        return;
      case FrameType.CANCEL_PUSH:
      case FrameType.GOAWAY:
      case FrameType.MAX_PUSH_ID:
        if (length > 8) {
          throw new H3Error(
            H3Code.FRAME_ERROR,
            "connection",
            `frame type 0x${type.toString(16)} has a ${length}-byte payload; it holds one varint`,
          );
        }
        this.#state = S_BODY;
        return;
      default:
        this.#state = S_SKIP;
    }
  }

  #dropChunk(): void {
    this.#chunks[this.#ci] = EMPTY;
    this.#ci++;
    this.#off = 0;
    if (this.#ci === this.#chunks.length) {
      this.#chunks.length = 0;
      this.#ci = 0;
    } else if (this.#ci >= 64) {
      this.#chunks = this.#chunks.slice(this.#ci);
      this.#ci = 0;
    }
  }

  /** Drops `n` buffered bytes (n <= buffered). */
  #discard(n: number): void {
    this.#buffered -= n;
    while (n > 0) {
      const avail = this.#chunks[this.#ci].length - this.#off;
      if (avail > n) {
        this.#off += n;
        return;
      }
      n -= avail;
      this.#dropChunk();
    }
  }

  /** Copies the first `n` buffered bytes into `out` without consuming them. */
  #peek(out: Uint8Array, n: number): void {
    let ci = this.#ci;
    let off = this.#off;
    let w = 0;
    while (w < n) {
      const c = this.#chunks[ci];
      const k = Math.min(c.length - off, n - w);
      out.set(c.subarray(off, off + k), w);
      w += k;
      ci++;
      off = 0;
    }
  }

  /** Removes and returns the first `n` buffered bytes (n <= buffered). */
  #take(n: number): Uint8Array {
    if (n === 0) return EMPTY;
    const c = this.#chunks[this.#ci];
    const off = this.#off;
    const avail = c.length - off;
    if (avail >= n) {
      const out = c.subarray(off, off + n);
      if (avail === n) this.#dropChunk();
      else this.#off = off + n;
      this.#buffered -= n;
      return out;
    }
    const out = new Uint8Array(n);
    let w = 0;
    while (w < n) {
      const cur = this.#chunks[this.#ci];
      const o = this.#off;
      const k = Math.min(cur.length - o, n - w);
      out.set(o === 0 && k === cur.length ? cur : cur.subarray(o, o + k), w);
      w += k;
      if (o + k === cur.length) this.#dropChunk();
      else this.#off = o + k;
    }
    this.#buffered -= n;
    return out;
  }
}
