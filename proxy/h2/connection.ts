/**
 * The client side of one HTTP/2 connection (RFC 9113), sans-IO: bytes in
 * ({@link H2ClientConnection.receive}) become events, calls out
 * ({@link H2ClientConnection.openStream}, `sendData`, …) become bytes to
 * write ({@link H2ClientConnection.takeOutput}). No sockets, no timers, no
 * `Deno.*`; nothing a peer sends makes it throw: every violation comes back
 * as a `connection-error` or `stream-error` event carrying the RFC 9113 §7
 * code of §5.4 (and the GOAWAY or RST_STREAM it calls for is queued).
 *
 * The pieces: `frames.ts` (the wire format), `settings.ts`,
 * `flow_control.ts` (windows, and when the connection's credit returns),
 * `stream.ts` (the §5.1 state machine of each stream), `header_block.ts`
 * (HEADERS + CONTINUATION), `state.ts` (what a connection keeps), and the
 * handlers of the peer's frames, `receive_stream.ts` and
 * `receive_control.ts`; the response's rules are `proxy/http/`'s.
 *
 * What it holds for a peer is bounded: one header block (HEADERS +
 * CONTINUATION) up to `maxHeaderBlock` octets and `maxContinuations` frames,
 * one partial frame, and control answers (PING and SETTINGS acknowledgements)
 * not yet taken by the transport; past `maxPendingControl` of those, or a
 * run of more than `maxIdleFrames` frames that carry nothing, the connection
 * ends with ENHANCE_YOUR_CALM. With `connectionCredit: "on-consume"` the
 * connection window also bounds the response octets all of its streams'
 * readers hold unread together.
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
import { CLIENT_PREFACE, FrameReader, FrameType, MAX_STREAM_ID } from "./frames.ts";
import { type ConnectionCredit, DEFAULT_WINDOW } from "./flow_control.ts";
import { type FieldLine, HPACK_ENTRY_OVERHEAD } from "./hpack.ts";
import { receiveFrame } from "./receive_control.ts";
import { localSettings } from "./settings.ts";
import { ConnectionState } from "./state.ts";
import { H2Stream } from "./stream.ts";
import type { H2ConnectionOptions, H2Event, OpenResult } from "./types.ts";

/**
 * One HTTP/2 client connection's protocol state. See the module docs.
 */
export class H2ClientConnection {
  readonly #c: ConnectionState;
  readonly #in = new FrameReader();

  /** Opens the connection: queues the preface, our SETTINGS and the connection window. */
  constructor(opts: H2ConnectionOptions = {}) {
    const c = this.#c = new ConnectionState(opts);
    c.out.bytes(CLIENT_PREFACE);
    c.out.settings(localSettings(c.o));
    if (c.o.connectionWindow > DEFAULT_WINDOW) {
      c.out.windowUpdate(0, c.o.connectionWindow - DEFAULT_WINDOW);
    }
  }

  // ---------------------------------------------------------------- state

  /** Streams open (counted against the peer's MAX_CONCURRENT_STREAMS). */
  get activeStreams(): number {
    return this.#c.streams.size;
  }

  /** Whether the peer sent SETTINGS_ENABLE_CONNECT_PROTOCOL = 1 (RFC 8441 §3). */
  get peerEnablesConnectProtocol(): boolean {
    return this.#c.peer.enableConnectProtocol;
  }

  /** The peer's current MAX_CONCURRENT_STREAMS (our assumption before its SETTINGS). */
  get peerMaxConcurrentStreams(): number {
    return this.#c.peer.maxConcurrentStreams;
  }

  /** True once the connection may carry no new stream (GOAWAY either way, error, ids spent). */
  get closedForNewStreams(): boolean {
    const c = this.#c;
    return c.dead || c.goaway || c.nextId > MAX_STREAM_ID;
  }

  /** True once a connection error ended it. */
  get dead(): boolean {
    return this.#c.dead;
  }

  /** Response octets handed over in `data` events and not yet `consume`d (`on-consume` only). */
  get heldOctets(): number {
    return this.#c.connRecv.held;
  }

  /** Whether `stream` is still open here. */
  hasStream(stream: number): boolean {
    return this.#c.streams.has(stream);
  }

  /** Bytes `stream` may send now (the smaller of its window and the connection's). */
  sendCapacity(stream: number): number {
    const s = this.#c.streams.get(stream);
    if (s === undefined || !s.canSend || this.#c.dead) return 0;
    return Math.max(0, Math.min(s.send.size, this.#c.connSend.size));
  }

  /**
   * The bytes to write, or null when there are none. The view stays valid
   * until the next call: write it whole before taking more.
   */
  takeOutput(): Uint8Array | null {
    this.#c.pendingControl = 0;
    return this.#c.out.take();
  }

  /** Bytes queued for writing. */
  get pendingOutput(): number {
    return this.#c.out.pending;
  }

  // ---------------------------------------------------------------- calls

  /**
   * Opens a request stream with `fields` (pseudo-headers first, as given:
   * nothing is added or dropped). `endStream` sends no body; `head` marks a
   * HEAD request (its response has no body whatever it declares). An
   * extended CONNECT (a `:protocol` pseudo-header, RFC 8441 §4) is refused
   * unless the peer enabled it; its stream then stays open both ways as a
   * tunnel of DATA frames until either side ends or resets it.
   */
  openStream(
    fields: ReadonlyArray<readonly [string, string]>,
    opts: { endStream: boolean; head?: boolean },
  ): OpenResult {
    const c = this.#c;
    if (this.closedForNewStreams) return { refused: "closed" };
    if (c.streams.size >= c.peer.maxConcurrentStreams) return { refused: "busy" };
    if (!c.peer.enableConnectProtocol && fields.some((f) => f[0] === ":protocol")) {
      return { refused: "no-extended-connect" };
    }
    const maxList = c.peer.maxHeaderListSize;
    if (Number.isFinite(maxList) && listSize(fields) > maxList) return { refused: "too-large" };
    const id = c.nextId;
    c.nextId += 2;
    c.out.headerBlock(id, c.encoder.encode(fields), opts.endStream, c.peer.maxFrameSize);
    const s = new H2Stream(id, {
      endStream: opts.endStream,
      head: opts.head === true,
      sendWindow: c.peer.initialWindow,
      recvWindow: c.o.streamWindow,
    });
    c.streams.set(id, s);
    return { id };
  }

  /**
   * Sends as much of `data` as the flow-control windows allow, in frames of
   * the peer's MAX_FRAME_SIZE; returns the number of bytes taken (the rest
   * waits for a `send-window` event). With `endStream`, END_STREAM goes with
   * the last byte once all of `data` is taken.
   */
  sendData(stream: number, data: Uint8Array, endStream: boolean): number {
    const c = this.#c;
    const s = c.streams.get(stream);
    if (s === undefined || !s.canSend || c.dead) return 0;
    let taken = 0;
    for (;;) {
      // Every frame fits both windows, the stream's and the connection's (RFC 9113 §6.9.1).
      const room = Math.min(s.send.size, c.connSend.size, c.peer.maxFrameSize);
      const n = Math.min(room, data.length - taken);
      const last = taken + n === data.length;
      if (n === 0 && !(last && endStream)) break;
      c.out.data(stream, data.subarray(taken, taken + n), last && endStream);
      taken += n;
      s.send.size -= n;
      c.connSend.size -= n;
      if (last) {
        if (endStream) c.closeLocal(s);
        break;
      }
    }
    return taken;
  }

  /** Ends the request with a trailer section (HEADERS with END_STREAM). */
  sendTrailers(stream: number, fields: ReadonlyArray<readonly [string, string]>): boolean {
    const c = this.#c;
    const s = c.streams.get(stream);
    if (s === undefined || !s.canSend || c.dead) return false;
    c.out.headerBlock(stream, c.encoder.encode(fields), true, c.peer.maxFrameSize);
    c.closeLocal(s);
    return true;
  }

  /**
   * Cancels a stream (RST_STREAM, default CANCEL); nothing more is reported
   * for it, and what its reader held unread returns to the connection window.
   */
  resetStream(stream: number, code: number = H2Code.CANCEL): void {
    const c = this.#c;
    const s = c.streams.get(stream);
    if (s === undefined || c.dead) return;
    c.forget(s);
    c.out.rstStream(stream, code);
  }

  /**
   * Returns `n` octets of a stream's received DATA to the peer's windows
   * once the reader has taken them: the response body's backpressure. The
   * stream's window always; the connection's too with `connectionCredit:
   * "on-consume"`, where the reader must call this for every octet of every
   * `data` event, or {@link discard} what it drops unread.
   */
  consume(stream: number, n: number): void {
    const c = this.#c;
    if (c.dead) return;
    c.creditConnection(c.connRecv.consume(stream, n));
    const s = c.streams.get(stream);
    if (s === undefined || !s.canReceive) return;
    const increment = s.recv.release(n);
    if (increment > 0) c.out.windowUpdate(stream, increment);
  }

  /**
   * The reader of `stream` dropped what it was handed and had not taken (a
   * body cancelled after the stream ended): with `connectionCredit:
   * "on-consume"` those octets return to the connection window, else there
   * is nothing to do. A stream reset either way, refused or failed returns
   * its octets by itself.
   */
  discard(stream: number): void {
    const c = this.#c;
    if (!c.dead) c.creditConnection(c.connRecv.drop(stream));
  }

  /** Sends a PING (8 bytes of payload) for liveness; its ACK comes as `ping-ack`. */
  ping(payload: Uint8Array): void {
    if (!this.#c.dead) this.#c.out.ping(payload, false);
  }

  /** Ends the connection from our side (GOAWAY with `code`); open streams may finish. */
  goAway(code: number = H2Code.NO_ERROR, debug = ""): void {
    if (!this.#c.dead) this.#c.goAway(code, debug);
  }

  // ---------------------------------------------------------------- input

  /**
   * Feeds bytes read from the socket; returns what they meant. After a
   * `connection-error` event nothing more is accepted (returns []).
   */
  receive(chunk: Uint8Array): H2Event[] {
    const ev: H2Event[] = [];
    const c = this.#c;
    if (c.dead) return ev;
    const r = this.#in;
    r.begin(chunk);
    while (!c.dead && r.header()) {
      const refused = this.#refuseFrame(r.type, r.end - r.start);
      if (refused !== null) {
        c.connectionError(ev, refused.code, refused.message);
        break;
      }
      if (!r.whole) break;
      r.advance();
      receiveFrame(c, ev, r);
    }
    if (c.dead) r.clear();
    else r.keepRest();
    return ev;
  }

  /** A frame header that ends the connection before its payload is read, or null. */
  #refuseFrame(type: number, length: number): H2ErrorValue | null {
    const c = this.#c;
    if (!c.sawSettings && type !== FrameType.SETTINGS) {
      return {
        code: H2Code.PROTOCOL_ERROR,
        message: "the server's preface is not a SETTINGS frame (not an HTTP/2 server?)",
      };
    }
    if (length <= c.o.maxFrameSize) return null;
    return {
      code: H2Code.FRAME_SIZE_ERROR,
      message: `frame of ${length} bytes above our MAX_FRAME_SIZE ${c.o.maxFrameSize}`,
    };
  }
}

/** The size of a header list as SETTINGS_MAX_HEADER_LIST_SIZE counts it (RFC 9113 §6.5.2). */
function listSize(fields: ReadonlyArray<readonly [string, string]>): number {
  let size = 0;
  for (const [n, v] of fields) size += n.length + v.length + HPACK_ENTRY_OVERHEAD;
  return size;
}

export type { ConnectionCredit, FieldLine, H2ConnectionOptions, H2Event, OpenResult };
export type { OpenRefusal } from "./types.ts";
