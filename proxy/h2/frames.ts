/**
 * HTTP/2 framing (RFC 9113 §4, §6), the wire format alone: frame types,
 * flags and settings identifiers, the client preface, {@link FrameWriter} (every frame the client
 * sends, into one growing output buffer) and {@link FrameReader} (the peer's
 * bytes cut into frames, a partial frame kept for the next read). No
 * protocol state: which frame may come when is the connection's to say.
 *
 * Buffer lifetimes: a payload the reader points at is a view into the input
 * (or the reader's reassembly buffer), valid until the next `begin`; the view
 * {@link FrameWriter.take} returns is valid until the next `take`.
 *
 * @example
 * ```ts
 * import { FrameReader, FrameType, FrameWriter } from "./frames.ts";
 *
 * const w = new FrameWriter();
 * w.ping(new Uint8Array(8), false);
 * const r = new FrameReader();
 * r.begin(w.take()!);
 * if (r.header() && r.whole) console.log(r.type === FrameType.PING, r.end - r.start); // true 8
 * ```
 *
 * @module
 */

/** Frame types (RFC 9113 §6). */
export const FrameType = {
  DATA: 0x0,
  HEADERS: 0x1,
  PRIORITY: 0x2,
  RST_STREAM: 0x3,
  SETTINGS: 0x4,
  PUSH_PROMISE: 0x5,
  PING: 0x6,
  GOAWAY: 0x7,
  WINDOW_UPDATE: 0x8,
  CONTINUATION: 0x9,
} as const;

/** Settings identifiers (RFC 9113 §6.5.2). */
export const SettingId = {
  HEADER_TABLE_SIZE: 0x1,
  ENABLE_PUSH: 0x2,
  MAX_CONCURRENT_STREAMS: 0x3,
  INITIAL_WINDOW_SIZE: 0x4,
  MAX_FRAME_SIZE: 0x5,
  MAX_HEADER_LIST_SIZE: 0x6,
  /** RFC 8441 §3: the server accepts extended CONNECT (`:protocol`). */
  ENABLE_CONNECT_PROTOCOL: 0x8,
} as const;

/** Frame flags (RFC 9113 §6); a flag's meaning depends on the frame type. */
export const Flag = {
  END_STREAM: 0x1,
  ACK: 0x1,
  END_HEADERS: 0x4,
  PADDED: 0x8,
  PRIORITY: 0x20,
} as const;

/** Octets of a frame header (RFC 9113 §4.1). */
export const FRAME_HEADER_SIZE = 9;
/** SETTINGS_MAX_FRAME_SIZE until the peer says otherwise, and its least value (RFC 9113 §6.5.2). */
export const DEFAULT_MAX_FRAME = 16_384;
/** The largest SETTINGS_MAX_FRAME_SIZE (RFC 9113 §6.5.2). */
export const MAX_MAX_FRAME = 0xffffff;
/** Stream ids are 31 bits and run out here (RFC 9113 §5.1.1). */
export const MAX_STREAM_ID = 0x7fffffff;

/** The client connection preface (RFC 9113 §3.4). */
export const CLIENT_PREFACE: Uint8Array = new TextEncoder().encode(
  "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
);

/** The 32-bit big-endian unsigned integer at `b[p]`. */
export function readU32(b: Uint8Array, p: number): number {
  return ((b[p] << 24) | (b[p + 1] << 16) | (b[p + 2] << 8) | b[p + 3]) >>> 0;
}

/**
 * The frames the client writes, appended to one buffer the transport takes
 * whole. Two buffers alternate: the one handed out stays intact while the
 * other fills.
 */
export class FrameWriter {
  #out: Uint8Array = new Uint8Array(32 * 1024);
  #spare: Uint8Array = new Uint8Array(32 * 1024);
  #len = 0;

  /** Octets queued for writing. */
  get pending(): number {
    return this.#len;
  }

  /**
   * The octets to write, or null when there are none. The view stays valid
   * until the next call: write it whole before taking more.
   */
  take(): Uint8Array | null {
    if (this.#len === 0) return null;
    const view = this.#out.subarray(0, this.#len);
    const spare = this.#spare;
    this.#spare = this.#out;
    this.#out = spare;
    this.#len = 0;
    return view;
  }

  /** Appends octets as they are (the preface, a payload). */
  bytes(bytes: Uint8Array): void {
    this.#ensure(bytes.length);
    this.#out.set(bytes, this.#len);
    this.#len += bytes.length;
  }

  /** A frame header (RFC 9113 §4.1); its `length` octets of payload must follow. */
  header(length: number, type: number, flags: number, stream: number): void {
    this.#ensure(FRAME_HEADER_SIZE + length);
    const o = this.#out;
    let p = this.#len;
    o[p++] = (length >>> 16) & 0xff;
    o[p++] = (length >>> 8) & 0xff;
    o[p++] = length & 0xff;
    o[p++] = type;
    o[p++] = flags;
    this.#len = p;
    this.u32(stream & MAX_STREAM_ID);
  }

  /** A 16-bit big-endian integer. */
  u16(v: number): void {
    this.#ensure(2);
    this.#out[this.#len++] = v >>> 8;
    this.#out[this.#len++] = v & 0xff;
  }

  /** A 32-bit big-endian integer. */
  u32(v: number): void {
    this.#ensure(4);
    const o = this.#out;
    o[this.#len++] = (v >>> 24) & 0xff;
    o[this.#len++] = (v >>> 16) & 0xff;
    o[this.#len++] = (v >>> 8) & 0xff;
    o[this.#len++] = v & 0xff;
  }

  /** SETTINGS of `[id, value]` pairs (RFC 9113 §6.5). */
  settings(pairs: ReadonlyArray<readonly [number, number]>): void {
    this.header(pairs.length * 6, FrameType.SETTINGS, 0, 0);
    for (const [id, value] of pairs) {
      this.u16(id);
      this.u32(value);
    }
  }

  /** The acknowledgement of the peer's SETTINGS (RFC 9113 §6.5.3). */
  settingsAck(): void {
    this.header(0, FrameType.SETTINGS, Flag.ACK, 0);
  }

  /** WINDOW_UPDATE of `increment` on `stream` (0: the connection; RFC 9113 §6.9). */
  windowUpdate(stream: number, increment: number): void {
    this.header(4, FrameType.WINDOW_UPDATE, 0, stream);
    this.u32(increment);
  }

  /** RST_STREAM with `code` (RFC 9113 §6.4). */
  rstStream(stream: number, code: number): void {
    this.header(4, FrameType.RST_STREAM, 0, stream);
    this.u32(code);
  }

  /** PING, or its acknowledgement, with 8 octets of payload (RFC 9113 §6.7). */
  ping(payload: Uint8Array, ack: boolean): void {
    this.header(8, FrameType.PING, ack ? Flag.ACK : 0, 0);
    this.bytes(payload.subarray(0, 8));
  }

  /** GOAWAY naming `lastStreamId` (RFC 9113 §6.8). */
  goaway(lastStreamId: number, code: number, debug: Uint8Array): void {
    this.header(8 + debug.length, FrameType.GOAWAY, 0, 0);
    this.u32(lastStreamId);
    this.u32(code);
    this.bytes(debug);
  }

  /**
   * A header block as HEADERS and as many CONTINUATION frames as frames of
   * `maxFrame` octets need (RFC 9113 §6.2, §6.10); END_STREAM on the HEADERS.
   */
  headerBlock(stream: number, block: Uint8Array, endStream: boolean, maxFrame: number): void {
    let first = true;
    let at = 0;
    do {
      const n = Math.min(maxFrame, block.length - at);
      const last = at + n >= block.length;
      const flags = (last ? Flag.END_HEADERS : 0) | (first && endStream ? Flag.END_STREAM : 0);
      this.header(n, first ? FrameType.HEADERS : FrameType.CONTINUATION, flags, stream);
      this.bytes(block.subarray(at, at + n));
      at += n;
      first = false;
    } while (at < block.length);
  }

  /** One DATA frame (RFC 9113 §6.1). */
  data(stream: number, data: Uint8Array, endStream: boolean): void {
    this.header(data.length, FrameType.DATA, endStream ? Flag.END_STREAM : 0, stream);
    this.bytes(data);
  }

  #ensure(n: number): void {
    const need = this.#len + n;
    if (need <= this.#out.length) return;
    const next = new Uint8Array(Math.max(need, this.#out.length * 2));
    next.set(this.#out.subarray(0, this.#len));
    this.#out = next;
  }
}

/** A frame read whole: its header, and its payload `buf[start, end)`. */
export interface Frame {
  /** The frame type (unknown ones included). */
  readonly type: number;
  /** Its flags. */
  readonly flags: number;
  /** Its stream id (the reserved bit cleared). */
  readonly stream: number;
  /** The bytes holding its payload. */
  readonly buf: Uint8Array;
  /** Where its payload starts in `buf`. */
  readonly start: number;
  /** Where its payload ends in `buf`. */
  readonly end: number;
}

/**
 * Cuts the peer's bytes into frames. Per read: {@link begin} with the
 * chunk, then {@link header} while it finds a frame header; a frame whose
 * payload is {@link whole} is the {@link Frame} the reader itself shows
 * until {@link advance} moves past it; {@link keepRest} keeps what is left
 * (a partial frame) for the next read.
 */
export class FrameReader implements Frame {
  /** The bytes being read (input, or the reassembly buffer). */
  buf: Uint8Array = new Uint8Array(0);
  /** Type of the frame whose header was read. */
  type = 0;
  /** Its flags. */
  flags = 0;
  /** Its stream id (the reserved bit cleared). */
  stream = 0;
  /** Its payload's length. */
  length = 0;
  /** Where its payload starts in {@link buf}. */
  start = 0;

  #pos = 0;
  #end = 0;
  // Two reassembly buffers, so that views handed out during a read stay valid.
  #in: Uint8Array = new Uint8Array(0);
  #inAlt: Uint8Array = new Uint8Array(0);
  #inLen = 0;

  /** Starts reading `chunk`, after the partial frame kept from the last read. */
  begin(chunk: Uint8Array): void {
    this.#pos = 0;
    if (this.#inLen === 0) {
      this.buf = chunk;
      this.#end = chunk.length;
      return;
    }
    const need = this.#inLen + chunk.length;
    if (this.#in.length < need) {
      const grown = new Uint8Array(Math.max(need, this.#in.length * 2));
      grown.set(this.#in.subarray(0, this.#inLen));
      this.#in = grown;
    }
    this.#in.set(chunk, this.#inLen);
    this.buf = this.#in;
    this.#end = need;
  }

  /** Reads the next frame header; false when fewer than 9 octets are left. */
  header(): boolean {
    const b = this.buf;
    const p = this.#pos;
    if (this.#end - p < FRAME_HEADER_SIZE) return false;
    this.length = (b[p] << 16) | (b[p + 1] << 8) | b[p + 2];
    this.type = b[p + 3];
    this.flags = b[p + 4];
    this.stream = readU32(b, p + 5) & MAX_STREAM_ID;
    this.start = p + FRAME_HEADER_SIZE;
    return true;
  }

  /** Where the payload of the frame whose header was read ends. */
  get end(): number {
    return this.start + this.length;
  }

  /** Whether the payload of the frame whose header was read is all there. */
  get whole(): boolean {
    return this.#end - this.start >= this.length;
  }

  /** Moves past the frame whose header was read. */
  advance(): void {
    this.#pos = this.start + this.length;
  }

  /** Ends a read: keeps the unread bytes (a partial frame) for the next one. */
  keepRest(): void {
    const left = this.#end - this.#pos;
    if (left > 0) {
      // Into the buffer this read's views do not point at.
      const fromIn = this.buf === this.#in;
      let target = fromIn ? this.#inAlt : this.#in;
      if (target.length < left) target = new Uint8Array(Math.max(left, 16 * 1024));
      target.set(this.buf.subarray(this.#pos, this.#end));
      if (fromIn) this.#inAlt = this.#in;
      this.#in = target;
    }
    this.#inLen = left;
  }

  /** Drops everything unread (the connection is over). */
  clear(): void {
    this.#inLen = 0;
    this.#pos = this.#end;
  }
}
