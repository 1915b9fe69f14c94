/**
 * The client side of one HTTP/2 connection (RFC 9113), sans-IO: bytes in
 * ({@link H2ClientConnection.receive}) become events, calls out
 * ({@link H2ClientConnection.openStream}, `sendData`, …) become bytes to
 * write ({@link H2ClientConnection.takeOutput}). No sockets, no timers, no
 * `Deno.*`; nothing a peer sends makes it throw: every violation comes back
 * as a `connection-error` or `stream-error` event carrying the RFC 9113 §7
 * code of §5.4 (and the GOAWAY or RST_STREAM it calls for is queued).
 *
 * What it holds for a peer is bounded: one header block (HEADERS +
 * CONTINUATION) up to `maxHeaderBlock` octets and `maxContinuations` frames,
 * one partial frame, and control answers (PING and SETTINGS acknowledgements)
 * not yet taken by the transport; past `maxPendingControl` of those, or a
 * long run of frames that carry nothing, the connection ends with
 * ENHANCE_YOUR_CALM.
 *
 * Buffer lifetimes: the `data` of a `data` event is a view into the input
 * (or the codec's reassembly buffer), valid until the next `receive` call;
 * the view `takeOutput` returns is valid until the next `takeOutput` call.
 *
 * @example
 * ```ts
 * declare function socketWrite(bytes: Uint8Array): void;
 * declare const bytesFromSocket: Uint8Array;
 *
 * const conn = new H2ClientConnection();
 * const id = conn.openStream([[":method", "GET"], [":scheme", "http"], [":path", "/"]], { endStream: true });
 * socketWrite(conn.takeOutput()!);
 * for (const ev of conn.receive(bytesFromSocket)) console.log(ev.type);
 * ```
 *
 * @module
 */

import { H2Code, type H2ErrorValue } from "./errors.ts";
import { type FieldLine, HPACK_ENTRY_OVERHEAD, HpackDecoder, HpackEncoder } from "./hpack.ts";
import { validateResponseHead, validateTrailers } from "./validate.ts";

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
} as const;

const END_STREAM = 0x1;
const ACK = 0x1;
const END_HEADERS = 0x4;
const PADDED = 0x8;
const PRIORITY_FLAG = 0x20;

/** Largest flow-control window (RFC 9113 §6.9.1). */
export const MAX_WINDOW = 0x7fffffff;
/** The initial window every stream and the connection start with (RFC 9113 §6.9.2). */
export const DEFAULT_WINDOW = 65_535;
const DEFAULT_MAX_FRAME = 16_384;
const MAX_MAX_FRAME = 0xffffff;
/** Stream ids run out here (RFC 9113 §5.1.1). */
const MAX_STREAM_ID = 0x7fffffff;

/** The client connection preface (RFC 9113 §3.4). */
export const CLIENT_PREFACE: Uint8Array = new TextEncoder().encode(
  "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
);

/** Options of {@link H2ClientConnection}; every field has a default. */
export interface H2ConnectionOptions {
  /** Our SETTINGS_INITIAL_WINDOW_SIZE: receive window of each stream (default 256 KiB). */
  streamWindow?: number;
  /** Receive window of the connection (default 1 MiB). */
  connectionWindow?: number;
  /** Our SETTINGS_MAX_FRAME_SIZE (default 16,384). */
  maxFrameSize?: number;
  /** Our SETTINGS_MAX_HEADER_LIST_SIZE (default 64 KiB). */
  maxHeaderListSize?: number;
  /** Our SETTINGS_HEADER_TABLE_SIZE, the HPACK table the peer may use (default 4,096). */
  headerTableSize?: number;
  /** Largest header block (HEADERS + CONTINUATION payloads) we assemble (default: list size + 16 KiB). */
  maxHeaderBlock?: number;
  /** Most CONTINUATION frames in one header block (default 64). */
  maxContinuations?: number;
  /** Most control answers (PING/SETTINGS ACKs) queued and not yet taken (default 1,000). */
  maxPendingControl?: number;
  /** Most frames in a row that carry nothing useful (default 10,000). */
  maxIdleFrames?: number;
  /** Streams assumed allowed before the peer's SETTINGS say (default 100). */
  initialPeerConcurrency?: number;
  /**
   * Huffman-code request field literals when shorter (default false: the
   * backends are near, and plain literals cost less CPU than the bytes they save).
   */
  huffman?: boolean;
}

/** What the codec reports; the transport acts on each in order. */
export type H2Event =
  /** The final response head of a stream (`endStream`: no body follows). */
  | {
    type: "response";
    stream: number;
    status: number;
    headers: FieldLine[];
    contentLength: number;
    endStream: boolean;
  }
  /** Response body bytes (a view valid until the next `receive`); call `consume` once used. */
  | { type: "data"; stream: number; data: Uint8Array; endStream: boolean }
  /** The trailer section; the stream's response is complete. */
  | { type: "trailers"; stream: number; headers: FieldLine[] }
  /**
   * The stream ended abnormally: `local` true when we reset it for the peer's
   * fault (RST_STREAM sent with `code`), false when the peer reset it (or
   * refused it by GOAWAY: code REFUSED_STREAM). `answered`: a response head
   * (1xx included) had arrived on it, so the peer processed the request,
   * whatever a later REFUSED_STREAM claims (RFC 9113 §8.7).
   */
  | {
    type: "stream-error";
    stream: number;
    code: number;
    message: string;
    local: boolean;
    answered: boolean;
  }
  /** Send window opened on `stream` (0: the connection, any stream may try again). */
  | { type: "send-window"; stream: number }
  /** The peer's SETTINGS were applied (concurrency may have changed). */
  | { type: "settings" }
  /** The peer is going away: streams above `lastStreamId` were refused (their own events precede). */
  | { type: "goaway"; lastStreamId: number; code: number; debug: string }
  /** Our PING was answered. */
  | { type: "ping-ack"; payload: Uint8Array }
  /**
   * The connection is over: `local` when we found the peer's violation (GOAWAY
   * queued with `code`), else the peer's GOAWAY with an error and no stream
   * left. Every open stream is failed with it; nothing more is accepted.
   */
  | { type: "connection-error"; code: number; message: string; local: boolean };

/** Why {@link H2ClientConnection.openStream} could not open a stream. */
export type OpenRefusal =
  /** The peer's MAX_CONCURRENT_STREAMS is reached: wait for a stream to close. */
  | "busy"
  /** The connection cannot take new streams (GOAWAY, error, ids exhausted). */
  | "closed"
  /** The header list is larger than the peer's MAX_HEADER_LIST_SIZE. */
  | "too-large";

interface Stream {
  readonly id: number;
  sendWindow: number;
  recvWindow: number;
  /** Bytes delivered and consumed, not yet returned with WINDOW_UPDATE. */
  recvUnacked: number;
  localClosed: boolean;
  remoteClosed: boolean;
  /** 0 awaiting the final head, 1 body, 2 trailers received. */
  phase: 0 | 1 | 2;
  /** A response head arrived (1xx included): the peer processed the request. */
  answered: boolean;
  /** The response carries no body whatever it declares (HEAD, 204, 304). */
  noBody: boolean;
  readonly headRequest: boolean;
  contentLength: number;
  received: number;
}

/** Result of {@link H2ClientConnection.openStream}. */
export type OpenResult = { id: number } | { refused: OpenRefusal };

/**
 * One HTTP/2 client connection's protocol state. See the module docs.
 */
export class H2ClientConnection {
  readonly #o: Required<H2ConnectionOptions>;
  readonly #decoder: HpackDecoder;
  readonly #encoder: HpackEncoder;
  readonly #streams = new Map<number, Stream>();

  // Output: two buffers, one being written by the transport, one filling.
  #out: Uint8Array = new Uint8Array(32 * 1024);
  #spare: Uint8Array = new Uint8Array(32 * 1024);
  #outLen = 0;
  #pendingControl = 0;

  // Input reassembly (two buffers so that views handed out stay valid).
  #in: Uint8Array = new Uint8Array(0);
  #inAlt: Uint8Array = new Uint8Array(0);
  #inLen = 0;

  // Header block reassembly.
  #block: Uint8Array = new Uint8Array(1024);
  #blockLen = 0;
  /** Stream whose header block is being assembled, or 0. */
  #blockStream = 0;
  #blockEndStream = false;
  #continuations = 0;

  #sawSettings = false;
  #dead = false;
  #goaway = false;
  #nextId = 1;
  #idleFrames = 0;

  // The peer's settings.
  #peerMaxConcurrent: number;
  #peerInitialWindow = DEFAULT_WINDOW;
  #peerMaxFrame = DEFAULT_MAX_FRAME;
  #peerMaxHeaderList = Infinity;

  #connSendWindow = DEFAULT_WINDOW;
  #connRecvWindow: number;
  #connRecvUnacked = 0;

  /** Opens the connection: queues the preface, our SETTINGS and the connection window. */
  constructor(opts: H2ConnectionOptions = {}) {
    const maxHeaderListSize = opts.maxHeaderListSize ?? 64 * 1024;
    this.#o = {
      streamWindow: opts.streamWindow ?? 256 * 1024,
      connectionWindow: opts.connectionWindow ?? 1024 * 1024,
      maxFrameSize: opts.maxFrameSize ?? DEFAULT_MAX_FRAME,
      maxHeaderListSize,
      headerTableSize: opts.headerTableSize ?? 4096,
      maxHeaderBlock: opts.maxHeaderBlock ?? maxHeaderListSize + 16 * 1024,
      maxContinuations: opts.maxContinuations ?? 64,
      maxPendingControl: opts.maxPendingControl ?? 1000,
      maxIdleFrames: opts.maxIdleFrames ?? 10_000,
      initialPeerConcurrency: opts.initialPeerConcurrency ?? 100,
      huffman: opts.huffman ?? false,
    };
    this.#encoder = new HpackEncoder({ huffman: this.#o.huffman });
    this.#peerMaxConcurrent = this.#o.initialPeerConcurrency;
    this.#decoder = new HpackDecoder(this.#o.headerTableSize);
    this.#connRecvWindow = this.#o.connectionWindow;
    this.#write(CLIENT_PREFACE);
    const settings: Array<[number, number]> = [[SettingId.ENABLE_PUSH, 0]];
    if (this.#o.headerTableSize !== 4096) {
      settings.push([SettingId.HEADER_TABLE_SIZE, this.#o.headerTableSize]);
    }
    if (this.#o.streamWindow !== DEFAULT_WINDOW) {
      settings.push([SettingId.INITIAL_WINDOW_SIZE, this.#o.streamWindow]);
    }
    if (this.#o.maxFrameSize !== DEFAULT_MAX_FRAME) {
      settings.push([SettingId.MAX_FRAME_SIZE, this.#o.maxFrameSize]);
    }
    settings.push([SettingId.MAX_HEADER_LIST_SIZE, maxHeaderListSize]);
    this.#frameHeader(settings.length * 6, FrameType.SETTINGS, 0, 0);
    for (const [id, value] of settings) {
      this.#u16(id);
      this.#u32(value);
    }
    if (this.#o.connectionWindow > DEFAULT_WINDOW) {
      this.#windowUpdate(0, this.#o.connectionWindow - DEFAULT_WINDOW);
    }
  }

  // ---------------------------------------------------------------- state

  /** Streams open (counted against the peer's MAX_CONCURRENT_STREAMS). */
  get activeStreams(): number {
    return this.#streams.size;
  }

  /** The peer's current MAX_CONCURRENT_STREAMS (our assumption before its SETTINGS). */
  get peerMaxConcurrentStreams(): number {
    return this.#peerMaxConcurrent;
  }

  /** True once the connection may carry no new stream (GOAWAY either way, error, ids spent). */
  get closedForNewStreams(): boolean {
    return this.#dead || this.#goaway || this.#nextId > MAX_STREAM_ID;
  }

  /** True once a connection error ended it. */
  get dead(): boolean {
    return this.#dead;
  }

  /** Whether `stream` is still open here. */
  hasStream(stream: number): boolean {
    return this.#streams.has(stream);
  }

  /** Bytes `stream` may send now (the smaller of its window and the connection's). */
  sendCapacity(stream: number): number {
    const s = this.#streams.get(stream);
    if (s === undefined || s.localClosed || this.#dead) return 0;
    return Math.max(0, Math.min(s.sendWindow, this.#connSendWindow));
  }

  // ---------------------------------------------------------------- output

  /**
   * The bytes to write, or null when there are none. The view stays valid
   * until the next call: write it whole before taking more.
   */
  takeOutput(): Uint8Array | null {
    if (this.#outLen === 0) return null;
    const view = this.#out.subarray(0, this.#outLen);
    const spare = this.#spare;
    this.#spare = this.#out;
    this.#out = spare;
    this.#outLen = 0;
    this.#pendingControl = 0;
    return view;
  }

  /** Bytes queued for writing. */
  get pendingOutput(): number {
    return this.#outLen;
  }

  #ensure(n: number): void {
    const need = this.#outLen + n;
    if (need <= this.#out.length) return;
    const next = new Uint8Array(Math.max(need, this.#out.length * 2));
    next.set(this.#out.subarray(0, this.#outLen));
    this.#out = next;
  }

  #write(bytes: Uint8Array): void {
    this.#ensure(bytes.length);
    this.#out.set(bytes, this.#outLen);
    this.#outLen += bytes.length;
  }

  #u16(v: number): void {
    this.#ensure(2);
    const o = this.#out;
    o[this.#outLen++] = v >>> 8;
    o[this.#outLen++] = v & 0xff;
  }

  #u32(v: number): void {
    this.#ensure(4);
    const o = this.#out;
    o[this.#outLen++] = (v >>> 24) & 0xff;
    o[this.#outLen++] = (v >>> 16) & 0xff;
    o[this.#outLen++] = (v >>> 8) & 0xff;
    o[this.#outLen++] = v & 0xff;
  }

  #frameHeader(length: number, type: number, flags: number, stream: number): void {
    this.#ensure(9 + length);
    const o = this.#out;
    let p = this.#outLen;
    o[p++] = (length >>> 16) & 0xff;
    o[p++] = (length >>> 8) & 0xff;
    o[p++] = length & 0xff;
    o[p++] = type;
    o[p++] = flags;
    this.#outLen = p;
    this.#u32(stream & MAX_STREAM_ID);
  }

  #windowUpdate(stream: number, increment: number): void {
    this.#frameHeader(4, FrameType.WINDOW_UPDATE, 0, stream);
    this.#u32(increment);
  }

  #rst(stream: number, code: number): void {
    this.#frameHeader(4, FrameType.RST_STREAM, 0, stream);
    this.#u32(code);
  }

  #headerBlock(stream: number, block: Uint8Array, endStream: boolean): void {
    const max = this.#peerMaxFrame;
    let first = true;
    let at = 0;
    do {
      const n = Math.min(max, block.length - at);
      const last = at + n >= block.length;
      const flags = (last ? END_HEADERS : 0) | (first && endStream ? END_STREAM : 0);
      this.#frameHeader(n, first ? FrameType.HEADERS : FrameType.CONTINUATION, flags, stream);
      this.#write(block.subarray(at, at + n));
      at += n;
      first = false;
    } while (at < block.length);
  }

  // ---------------------------------------------------------------- calls

  /**
   * Opens a request stream with `fields` (pseudo-headers first, as given:
   * nothing is added or dropped). `endStream` sends no body; `head` marks a
   * HEAD request (its response has no body whatever it declares).
   */
  openStream(
    fields: ReadonlyArray<readonly [string, string]>,
    opts: { endStream: boolean; head?: boolean },
  ): OpenResult {
    if (this.closedForNewStreams) return { refused: "closed" };
    if (this.#streams.size >= this.#peerMaxConcurrent) return { refused: "busy" };
    if (Number.isFinite(this.#peerMaxHeaderList)) {
      let size = 0;
      for (const [n, v] of fields) size += n.length + v.length + HPACK_ENTRY_OVERHEAD;
      if (size > this.#peerMaxHeaderList) return { refused: "too-large" };
    }
    const id = this.#nextId;
    this.#nextId += 2;
    const block = this.#encoder.encode(fields);
    this.#headerBlock(id, block, opts.endStream);
    this.#streams.set(id, {
      id,
      sendWindow: this.#peerInitialWindow,
      recvWindow: this.#o.streamWindow,
      recvUnacked: 0,
      localClosed: opts.endStream,
      remoteClosed: false,
      phase: 0,
      answered: false,
      noBody: opts.head === true,
      headRequest: opts.head === true,
      contentLength: -1,
      received: 0,
    });
    return { id };
  }

  /**
   * Sends as much of `data` as the flow-control windows allow, in frames of
   * the peer's MAX_FRAME_SIZE; returns the number of bytes taken (the rest
   * waits for a `send-window` event). With `endStream`, END_STREAM goes with
   * the last byte once all of `data` is taken.
   */
  sendData(stream: number, data: Uint8Array, endStream: boolean): number {
    const s = this.#streams.get(stream);
    if (s === undefined || s.localClosed || this.#dead) return 0;
    let taken = 0;
    for (;;) {
      const room = Math.min(s.sendWindow, this.#connSendWindow, this.#peerMaxFrame);
      const n = Math.min(room, data.length - taken);
      const last = taken + n === data.length;
      if (n === 0 && !(last && endStream)) break;
      const flags = last && endStream ? END_STREAM : 0;
      this.#frameHeader(n, FrameType.DATA, flags, stream);
      this.#write(data.subarray(taken, taken + n));
      taken += n;
      s.sendWindow -= n;
      this.#connSendWindow -= n;
      if (last) {
        if (endStream) this.#closeLocal(s);
        break;
      }
    }
    return taken;
  }

  /** Ends the request with a trailer section (HEADERS with END_STREAM). */
  sendTrailers(stream: number, fields: ReadonlyArray<readonly [string, string]>): boolean {
    const s = this.#streams.get(stream);
    if (s === undefined || s.localClosed || this.#dead) return false;
    this.#headerBlock(stream, this.#encoder.encode(fields), true);
    this.#closeLocal(s);
    return true;
  }

  /** Cancels a stream (RST_STREAM, default CANCEL); nothing more is reported for it. */
  resetStream(stream: number, code: number = H2Code.CANCEL): void {
    if (!this.#streams.has(stream) || this.#dead) return;
    this.#streams.delete(stream);
    this.#rst(stream, code);
  }

  /**
   * Returns `n` bytes of a stream's received DATA to the peer's window once
   * the reader has taken them: the response body's backpressure.
   */
  consume(stream: number, n: number): void {
    const s = this.#streams.get(stream);
    if (s === undefined || s.remoteClosed || this.#dead) return;
    s.recvUnacked += n;
    if (s.recvUnacked >= this.#o.streamWindow >>> 1) {
      this.#windowUpdate(stream, s.recvUnacked);
      s.recvWindow += s.recvUnacked;
      s.recvUnacked = 0;
    }
  }

  /** Sends a PING (8 bytes of payload) for liveness; its ACK comes as `ping-ack`. */
  ping(payload: Uint8Array): void {
    if (this.#dead) return;
    this.#frameHeader(8, FrameType.PING, 0, 0);
    this.#write(payload.subarray(0, 8));
  }

  /** Ends the connection from our side (GOAWAY with `code`); open streams may finish. */
  goAway(code: number = H2Code.NO_ERROR, debug = ""): void {
    if (this.#dead) return;
    this.#goaway = true;
    const d = new TextEncoder().encode(debug);
    this.#frameHeader(8 + d.length, FrameType.GOAWAY, 0, 0);
    this.#u32(0); // we accept no server-initiated streams
    this.#u32(code);
    this.#write(d);
  }

  #closeLocal(s: Stream): void {
    s.localClosed = true;
    if (s.remoteClosed) this.#streams.delete(s.id);
  }

  #closeRemote(s: Stream): void {
    s.remoteClosed = true;
    if (s.localClosed) this.#streams.delete(s.id);
  }

  // ---------------------------------------------------------------- input

  /**
   * Feeds bytes read from the socket; returns what they meant. After a
   * `connection-error` event nothing more is accepted (returns []).
   */
  receive(chunk: Uint8Array): H2Event[] {
    const ev: H2Event[] = [];
    if (this.#dead) return ev;
    let buf: Uint8Array;
    let end: number;
    if (this.#inLen > 0) {
      const need = this.#inLen + chunk.length;
      if (this.#in.length < need) {
        const grown = new Uint8Array(Math.max(need, this.#in.length * 2));
        grown.set(this.#in.subarray(0, this.#inLen));
        this.#in = grown;
      }
      this.#in.set(chunk, this.#inLen);
      buf = this.#in;
      end = need;
    } else {
      buf = chunk;
      end = chunk.length;
    }
    let pos = 0;
    while (!this.#dead && end - pos >= 9) {
      const length = (buf[pos] << 16) | (buf[pos + 1] << 8) | buf[pos + 2];
      const type = buf[pos + 3];
      if (!this.#sawSettings && type !== FrameType.SETTINGS) {
        this.#connectionError(
          ev,
          H2Code.PROTOCOL_ERROR,
          "the server's preface is not a SETTINGS frame (not an HTTP/2 server?)",
        );
        break;
      }
      if (length > this.#o.maxFrameSize) {
        this.#connectionError(
          ev,
          H2Code.FRAME_SIZE_ERROR,
          `frame of ${length} bytes above our MAX_FRAME_SIZE ${this.#o.maxFrameSize}`,
        );
        break;
      }
      if (end - pos - 9 < length) break;
      const flags = buf[pos + 4];
      const stream = ((buf[pos + 5] & 0x7f) << 24 | (buf[pos + 6] << 16) | (buf[pos + 7] << 8) |
        buf[pos + 8]) >>> 0;
      const start = pos + 9;
      pos = start + length;
      this.#frame(ev, type, flags, stream, buf, start, pos);
    }
    if (this.#dead) {
      this.#inLen = 0;
      return ev;
    }
    const left = end - pos;
    if (left > 0) {
      // Keep the partial frame in the buffer not referenced by this call's views.
      let target = buf === this.#in ? this.#inAlt : this.#in;
      if (target.length < left) target = new Uint8Array(Math.max(left, 16 * 1024));
      target.set(buf.subarray(pos, end));
      if (buf === this.#in) {
        this.#inAlt = this.#in;
        this.#in = target;
      } else {
        this.#in = target;
      }
    }
    this.#inLen = left;
    return ev;
  }

  #connectionError(ev: H2Event[], code: number, message: string): void {
    if (this.#dead) return;
    this.goAway(code, message.slice(0, 200));
    this.#dead = true;
    this.#streams.clear();
    ev.push({ type: "connection-error", code, message, local: true });
  }

  #streamError(ev: H2Event[], s: Stream, code: number, message: string): void {
    this.#streams.delete(s.id);
    this.#rst(s.id, code);
    ev.push({
      type: "stream-error",
      stream: s.id,
      code,
      message,
      local: true,
      answered: s.answered,
    });
  }

  /** True for a stream id we never opened (server-initiated or above ours): RFC 9113 §5.1 idle. */
  #idle(stream: number): boolean {
    return (stream & 1) === 0 || stream >= this.#nextId;
  }

  #idleFrame(ev: H2Event[]): void {
    if (++this.#idleFrames > this.#o.maxIdleFrames) {
      this.#connectionError(
        ev,
        H2Code.ENHANCE_YOUR_CALM,
        `more than ${this.#o.maxIdleFrames} frames in a row that carry nothing`,
      );
    }
  }

  #controlAnswer(ev: H2Event[]): void {
    if (++this.#pendingControl > this.#o.maxPendingControl) {
      this.#connectionError(
        ev,
        H2Code.ENHANCE_YOUR_CALM,
        `more than ${this.#o.maxPendingControl} PING/SETTINGS answers queued unread`,
      );
    }
  }

  #frame(
    ev: H2Event[],
    type: number,
    flags: number,
    stream: number,
    b: Uint8Array,
    start: number,
    end: number,
  ): void {
    if (this.#blockStream !== 0 && type !== FrameType.CONTINUATION) {
      return this.#connectionError(
        ev,
        H2Code.PROTOCOL_ERROR,
        "a frame other than CONTINUATION inside a header block",
      );
    }
    switch (type) {
      case FrameType.DATA:
        return this.#data(ev, flags, stream, b, start, end);
      case FrameType.HEADERS:
        return this.#headers(ev, flags, stream, b, start, end);
      case FrameType.CONTINUATION:
        return this.#continuation(ev, flags, stream, b, start, end);
      case FrameType.PRIORITY:
        if (stream === 0) {
          return this.#connectionError(ev, H2Code.PROTOCOL_ERROR, "PRIORITY on stream 0");
        }
        if (end - start !== 5) {
          const s = this.#streams.get(stream);
          if (s !== undefined) {
            return this.#streamError(ev, s, H2Code.FRAME_SIZE_ERROR, "PRIORITY not 5 bytes");
          }
        }
        return this.#idleFrame(ev);
      case FrameType.RST_STREAM:
        return this.#rstStream(ev, stream, b, start, end);
      case FrameType.SETTINGS:
        return this.#settings(ev, flags, stream, b, start, end);
      case FrameType.PUSH_PROMISE:
        return this.#connectionError(
          ev,
          H2Code.PROTOCOL_ERROR,
          "PUSH_PROMISE although we sent SETTINGS_ENABLE_PUSH 0",
        );
      case FrameType.PING:
        if (stream !== 0) {
          return this.#connectionError(ev, H2Code.PROTOCOL_ERROR, "PING on a stream");
        }
        if (end - start !== 8) {
          return this.#connectionError(ev, H2Code.FRAME_SIZE_ERROR, "PING not 8 bytes");
        }
        if (flags & ACK) {
          ev.push({ type: "ping-ack", payload: b.slice(start, end) });
          return;
        }
        this.#frameHeader(8, FrameType.PING, ACK, 0);
        this.#write(b.subarray(start, end));
        this.#idleFrame(ev);
        return this.#controlAnswer(ev);
      case FrameType.GOAWAY:
        return this.#goawayFrame(ev, stream, b, start, end);
      case FrameType.WINDOW_UPDATE:
        return this.#windowUpdateFrame(ev, stream, b, start, end);
      default:
        // RFC 9113 §5.5: unknown frame types are ignored.
        return this.#idleFrame(ev);
    }
  }

  /** Strips padding (RFC 9113 §6.1); returns the payload end, or -1 after a connection error. */
  #unpad(ev: H2Event[], flags: number, b: Uint8Array, start: number, end: number): number {
    if ((flags & PADDED) === 0) return end;
    if (end - start < 1) {
      this.#connectionError(ev, H2Code.FRAME_SIZE_ERROR, "padded frame without a pad length");
      return -1;
    }
    const pad = b[start];
    if (pad >= end - start) {
      this.#connectionError(ev, H2Code.PROTOCOL_ERROR, "padding longer than the frame");
      return -1;
    }
    return end - pad;
  }

  #data(
    ev: H2Event[],
    flags: number,
    stream: number,
    b: Uint8Array,
    start: number,
    end: number,
  ): void {
    if (stream === 0) return this.#connectionError(ev, H2Code.PROTOCOL_ERROR, "DATA on stream 0");
    if (this.#idle(stream)) {
      return this.#connectionError(ev, H2Code.PROTOCOL_ERROR, `DATA on idle stream ${stream}`);
    }
    const flowLen = end - start;
    // Connection window first: it counts whatever the stream's state (§6.9).
    this.#connRecvWindow -= flowLen;
    if (this.#connRecvWindow < 0) {
      return this.#connectionError(ev, H2Code.FLOW_CONTROL_ERROR, "connection window overrun");
    }
    this.#connRecvUnacked += flowLen;
    if (this.#connRecvUnacked >= this.#o.connectionWindow >>> 1) {
      this.#windowUpdate(0, this.#connRecvUnacked);
      this.#connRecvWindow += this.#connRecvUnacked;
      this.#connRecvUnacked = 0;
    }
    const dataEnd = this.#unpad(ev, flags, b, start, end);
    if (dataEnd < 0) return;
    const dataStart = (flags & PADDED) ? start + 1 : start;
    const s = this.#streams.get(stream);
    if (s === undefined) return this.#idleFrame(ev); // closed or reset by us: ignored (§5.1)
    if (s.remoteClosed) {
      return this.#streamError(ev, s, H2Code.STREAM_CLOSED, "DATA after END_STREAM");
    }
    s.recvWindow -= flowLen;
    if (s.recvWindow < 0) {
      return this.#streamError(ev, s, H2Code.FLOW_CONTROL_ERROR, "stream window overrun");
    }
    // Padding is returned at once; the data when the reader takes it.
    s.recvUnacked += flowLen - (dataEnd - dataStart);
    if (s.phase !== 1) {
      return this.#streamError(
        ev,
        s,
        H2Code.PROTOCOL_ERROR,
        s.phase === 0 ? "DATA before the response head" : "DATA after trailers",
      );
    }
    const n = dataEnd - dataStart;
    s.received += n;
    if (n > 0 && s.noBody) {
      return this.#streamError(ev, s, H2Code.PROTOCOL_ERROR, "body on a response that has none");
    }
    if (s.contentLength >= 0 && !s.noBody && s.received > s.contentLength) {
      return this.#streamError(ev, s, H2Code.PROTOCOL_ERROR, "body longer than content-length");
    }
    const endStream = (flags & END_STREAM) !== 0;
    if (endStream && s.contentLength >= 0 && !s.noBody && s.received !== s.contentLength) {
      return this.#streamError(ev, s, H2Code.PROTOCOL_ERROR, "body shorter than content-length");
    }
    if (n === 0 && !endStream) this.#idleFrame(ev);
    else this.#idleFrames = 0;
    if (endStream) this.#closeRemote(s);
    ev.push({ type: "data", stream, data: b.subarray(dataStart, dataEnd), endStream });
  }

  #headers(
    ev: H2Event[],
    flags: number,
    stream: number,
    b: Uint8Array,
    start: number,
    end: number,
  ): void {
    if (stream === 0) {
      return this.#connectionError(ev, H2Code.PROTOCOL_ERROR, "HEADERS on stream 0");
    }
    if (this.#idle(stream)) {
      return this.#connectionError(ev, H2Code.PROTOCOL_ERROR, `HEADERS on idle stream ${stream}`);
    }
    let p = (flags & PADDED) ? start + 1 : start;
    const fragEnd = this.#unpad(ev, flags, b, start, end);
    if (fragEnd < 0) return;
    if (flags & PRIORITY_FLAG) p += 5;
    if (p > fragEnd) {
      return this.#connectionError(ev, H2Code.FRAME_SIZE_ERROR, "HEADERS too short");
    }
    this.#blockLen = 0;
    this.#continuations = 0;
    this.#blockEndStream = (flags & END_STREAM) !== 0;
    if (flags & END_HEADERS) {
      // The common case: the whole block in one frame, decoded in place.
      return this.#headerBlockDone(ev, stream, b.subarray(p, fragEnd));
    }
    this.#blockStream = stream;
    this.#appendBlock(ev, b, p, fragEnd);
  }

  #appendBlock(ev: H2Event[], b: Uint8Array, start: number, end: number): void {
    const n = end - start;
    if (this.#blockLen + n > this.#o.maxHeaderBlock) {
      return this.#connectionError(
        ev,
        H2Code.ENHANCE_YOUR_CALM,
        `header block above ${this.#o.maxHeaderBlock} bytes`,
      );
    }
    if (this.#block.length < this.#blockLen + n) {
      const grown = new Uint8Array(Math.max(this.#blockLen + n, this.#block.length * 2));
      grown.set(this.#block.subarray(0, this.#blockLen));
      this.#block = grown;
    }
    this.#block.set(b.subarray(start, end), this.#blockLen);
    this.#blockLen += n;
  }

  #continuation(
    ev: H2Event[],
    flags: number,
    stream: number,
    b: Uint8Array,
    start: number,
    end: number,
  ): void {
    if (this.#blockStream === 0 || stream !== this.#blockStream) {
      return this.#connectionError(ev, H2Code.PROTOCOL_ERROR, "unexpected CONTINUATION");
    }
    if (++this.#continuations > this.#o.maxContinuations) {
      return this.#connectionError(
        ev,
        H2Code.ENHANCE_YOUR_CALM,
        `more than ${this.#o.maxContinuations} CONTINUATION frames`,
      );
    }
    this.#appendBlock(ev, b, start, end);
    if (this.#dead) return;
    if (flags & END_HEADERS) {
      this.#blockStream = 0;
      this.#headerBlockDone(ev, stream, this.#block.subarray(0, this.#blockLen));
    }
  }

  #headerBlockDone(ev: H2Event[], stream: number, block: Uint8Array): void {
    // Decode whatever the stream's state: the HPACK table must stay in step.
    const fields = this.#decoder.decode(block, this.#o.maxHeaderListSize);
    const endStream = this.#blockEndStream;
    if (!Array.isArray(fields) && fields.kind === "compression") {
      return this.#connectionError(ev, H2Code.COMPRESSION_ERROR, `HPACK: ${fields.message}`);
    }
    const s = this.#streams.get(stream);
    if (s === undefined) return; // closed or reset by us: ignored (§5.1)
    if (!Array.isArray(fields)) {
      return this.#streamError(ev, s, H2Code.PROTOCOL_ERROR, fields.message);
    }
    if (s.remoteClosed || s.phase === 2) {
      return this.#streamError(ev, s, H2Code.STREAM_CLOSED, "HEADERS after END_STREAM");
    }
    this.#idleFrames = 0;
    s.answered = true;
    if (s.phase === 1) {
      if (!endStream) {
        return this.#streamError(ev, s, H2Code.PROTOCOL_ERROR, "trailers without END_STREAM");
      }
      const why = validateTrailers(fields);
      if (why !== null) return this.#streamError(ev, s, H2Code.PROTOCOL_ERROR, why);
      if (s.contentLength >= 0 && !s.noBody && s.received !== s.contentLength) {
        return this.#streamError(ev, s, H2Code.PROTOCOL_ERROR, "body shorter than content-length");
      }
      s.phase = 2;
      this.#closeRemote(s);
      ev.push({ type: "trailers", stream, headers: fields });
      return;
    }
    const head = validateResponseHead(fields);
    if (typeof head === "string") return this.#streamError(ev, s, H2Code.PROTOCOL_ERROR, head);
    if (head.status < 200) {
      // RFC 9113 §8.1: informational heads precede the final one; 101 is not HTTP/2 (§8.6).
      if (head.status === 101) {
        return this.#streamError(ev, s, H2Code.PROTOCOL_ERROR, ":status 101 in HTTP/2");
      }
      if (endStream) {
        return this.#streamError(ev, s, H2Code.PROTOCOL_ERROR, "1xx response with END_STREAM");
      }
      return;
    }
    s.phase = 1;
    s.contentLength = head.contentLength;
    if (head.status === 204 || head.status === 304 || s.headRequest) s.noBody = true;
    if (endStream && s.contentLength > 0 && !s.noBody) {
      return this.#streamError(ev, s, H2Code.PROTOCOL_ERROR, "body shorter than content-length");
    }
    if (endStream) this.#closeRemote(s);
    ev.push({
      type: "response",
      stream,
      status: head.status,
      headers: head.headers,
      contentLength: head.contentLength,
      endStream,
    });
  }

  #rstStream(ev: H2Event[], stream: number, b: Uint8Array, start: number, end: number): void {
    if (stream === 0) {
      return this.#connectionError(ev, H2Code.PROTOCOL_ERROR, "RST_STREAM on stream 0");
    }
    if (end - start !== 4) {
      return this.#connectionError(ev, H2Code.FRAME_SIZE_ERROR, "RST_STREAM not 4 bytes");
    }
    if (this.#idle(stream)) {
      return this.#connectionError(
        ev,
        H2Code.PROTOCOL_ERROR,
        `RST_STREAM on idle stream ${stream}`,
      );
    }
    const s = this.#streams.get(stream);
    if (s === undefined) return this.#idleFrame(ev);
    const code = readU32(b, start);
    this.#streams.delete(stream);
    ev.push({
      type: "stream-error",
      stream,
      code,
      message: "reset by the peer",
      local: false,
      answered: s.answered,
    });
  }

  #settings(
    ev: H2Event[],
    flags: number,
    stream: number,
    b: Uint8Array,
    start: number,
    end: number,
  ): void {
    if (stream !== 0) {
      return this.#connectionError(ev, H2Code.PROTOCOL_ERROR, "SETTINGS on a stream");
    }
    const len = end - start;
    if (flags & ACK) {
      if (len !== 0) {
        return this.#connectionError(ev, H2Code.FRAME_SIZE_ERROR, "SETTINGS ACK with a payload");
      }
      if (!this.#sawSettings) {
        return this.#connectionError(ev, H2Code.PROTOCOL_ERROR, "preface is a SETTINGS ACK");
      }
      return;
    }
    if (len % 6 !== 0) {
      return this.#connectionError(
        ev,
        H2Code.FRAME_SIZE_ERROR,
        "SETTINGS length not a multiple of 6",
      );
    }
    this.#sawSettings = true;
    let windowDelta = 0;
    for (let p = start; p < end; p += 6) {
      const id = (b[p] << 8) | b[p + 1];
      const value = readU32(b, p + 2);
      switch (id) {
        case SettingId.HEADER_TABLE_SIZE:
          // Our encoder never inserts into the peer's table: any size suits it.
          break;
        case SettingId.ENABLE_PUSH:
          if (value > 1) {
            return this.#connectionError(ev, H2Code.PROTOCOL_ERROR, "ENABLE_PUSH above 1");
          }
          if (value === 1) {
            return this.#connectionError(ev, H2Code.PROTOCOL_ERROR, "a server set ENABLE_PUSH 1");
          }
          break;
        case SettingId.MAX_CONCURRENT_STREAMS:
          this.#peerMaxConcurrent = value;
          break;
        case SettingId.INITIAL_WINDOW_SIZE:
          if (value > MAX_WINDOW) {
            return this.#connectionError(
              ev,
              H2Code.FLOW_CONTROL_ERROR,
              "INITIAL_WINDOW_SIZE above 2^31-1",
            );
          }
          windowDelta += value - this.#peerInitialWindow;
          this.#peerInitialWindow = value;
          break;
        case SettingId.MAX_FRAME_SIZE:
          if (value < DEFAULT_MAX_FRAME || value > MAX_MAX_FRAME) {
            return this.#connectionError(
              ev,
              H2Code.PROTOCOL_ERROR,
              `MAX_FRAME_SIZE ${value} outside 16384..16777215`,
            );
          }
          this.#peerMaxFrame = value;
          break;
        case SettingId.MAX_HEADER_LIST_SIZE:
          this.#peerMaxHeaderList = value;
          break;
        default:
          break; // §6.5.2: unknown settings are ignored
      }
    }
    if (windowDelta !== 0) {
      for (const s of this.#streams.values()) {
        s.sendWindow += windowDelta;
        if (s.sendWindow > MAX_WINDOW) {
          return this.#connectionError(
            ev,
            H2Code.FLOW_CONTROL_ERROR,
            "INITIAL_WINDOW_SIZE change overflows a stream window",
          );
        }
      }
    }
    this.#frameHeader(0, FrameType.SETTINGS, ACK, 0);
    this.#controlAnswer(ev);
    if (this.#dead) return;
    ev.push({ type: "settings" });
    if (windowDelta > 0) ev.push({ type: "send-window", stream: 0 });
  }

  #goawayFrame(ev: H2Event[], stream: number, b: Uint8Array, start: number, end: number): void {
    if (stream !== 0) {
      return this.#connectionError(ev, H2Code.PROTOCOL_ERROR, "GOAWAY on a stream");
    }
    if (end - start < 8) {
      return this.#connectionError(ev, H2Code.FRAME_SIZE_ERROR, "GOAWAY shorter than 8 bytes");
    }
    const last = readU32(b, start) & MAX_STREAM_ID;
    const code = readU32(b, start + 4);
    let debug = "";
    for (let i = start + 8; i < Math.min(end, start + 8 + 200); i++) {
      debug += String.fromCharCode(b[i]);
    }
    this.#goaway = true;
    for (const s of [...this.#streams.values()]) {
      if (s.id > last) {
        this.#streams.delete(s.id);
        ev.push({
          type: "stream-error",
          stream: s.id,
          code: H2Code.REFUSED_STREAM,
          message: `above GOAWAY's last stream ${last}`,
          local: false,
          answered: s.answered,
        });
      }
    }
    ev.push({ type: "goaway", lastStreamId: last, code, debug });
    if (code !== H2Code.NO_ERROR && this.#streams.size === 0) {
      this.#dead = true;
      ev.push({
        type: "connection-error",
        code,
        message: `peer GOAWAY: ${debug || "no reason given"}`,
        local: false,
      });
    }
  }

  #windowUpdateFrame(
    ev: H2Event[],
    stream: number,
    b: Uint8Array,
    start: number,
    end: number,
  ): void {
    if (end - start !== 4) {
      return this.#connectionError(ev, H2Code.FRAME_SIZE_ERROR, "WINDOW_UPDATE not 4 bytes");
    }
    const inc = readU32(b, start) & MAX_WINDOW;
    if (stream === 0) {
      if (inc === 0) {
        return this.#connectionError(ev, H2Code.PROTOCOL_ERROR, "WINDOW_UPDATE of 0");
      }
      this.#connSendWindow += inc;
      if (this.#connSendWindow > MAX_WINDOW) {
        return this.#connectionError(
          ev,
          H2Code.FLOW_CONTROL_ERROR,
          "connection window above 2^31-1",
        );
      }
      ev.push({ type: "send-window", stream: 0 });
      return;
    }
    if (this.#idle(stream)) {
      return this.#connectionError(
        ev,
        H2Code.PROTOCOL_ERROR,
        `WINDOW_UPDATE on idle stream ${stream}`,
      );
    }
    const s = this.#streams.get(stream);
    if (s === undefined) return this.#idleFrame(ev);
    if (inc === 0) return this.#streamError(ev, s, H2Code.PROTOCOL_ERROR, "WINDOW_UPDATE of 0");
    s.sendWindow += inc;
    if (s.sendWindow > MAX_WINDOW) {
      return this.#streamError(ev, s, H2Code.FLOW_CONTROL_ERROR, "stream window above 2^31-1");
    }
    ev.push({ type: "send-window", stream });
  }
}

function readU32(b: Uint8Array, p: number): number {
  return ((b[p] << 24) | (b[p + 1] << 16) | (b[p + 2] << 8) | b[p + 3]) >>> 0;
}

export type { FieldLine, H2ErrorValue };
