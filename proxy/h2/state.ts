/**
 * The state one HTTP/2 client connection keeps, shared by the public face
 * (`connection.ts`) and the handlers of the peer's frames
 * (`receive_stream.ts`, `receive_control.ts`): the streams, both sides'
 * settings and windows, the output, and the ways a connection or a stream
 * ends on a violation. Internal to `proxy/h2/`.
 *
 * @module
 */

import { H2Code } from "./errors.ts";
import { DEFAULT_MAX_FRAME, FrameWriter } from "./frames.ts";
import { ConnectionReceiveFlow, DEFAULT_WINDOW, SendWindow } from "./flow_control.ts";
import { HeaderBlock } from "./header_block.ts";
import { HpackDecoder, HpackEncoder } from "./hpack.ts";
import { PeerSettings } from "./settings.ts";
import type { H2Stream } from "./stream.ts";
import type { H2ConnectionOptions, H2Event } from "./types.ts";

/** Every option filled in. */
export type Options = Required<H2ConnectionOptions>;

/** The options with their defaults. */
export function withDefaults(opts: H2ConnectionOptions): Options {
  const maxHeaderListSize = opts.maxHeaderListSize ?? 64 * 1024;
  return {
    streamWindow: opts.streamWindow ?? 256 * 1024,
    // The connection window starts at 65,535 and can only grow (RFC 9113 §6.9.2).
    connectionWindow: Math.max(DEFAULT_WINDOW, opts.connectionWindow ?? 1024 * 1024),
    connectionCredit: opts.connectionCredit ?? "on-arrival",
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
}

/** One connection's protocol state (see the module docs). */
export class ConnectionState {
  /** The options, defaults filled in. */
  readonly o: Options;
  /** Decodes the peer's header blocks. */
  readonly decoder: HpackDecoder;
  /** Encodes our requests and trailers. */
  readonly encoder: HpackEncoder;
  /** The streams not closed yet, by id. */
  readonly streams = new Map<number, H2Stream>();
  /** The frames to write. */
  readonly out = new FrameWriter();
  /** The header block being assembled. */
  readonly block: HeaderBlock;
  /** What the peer's SETTINGS said. */
  readonly peer: PeerSettings;
  /** The connection's send window (RFC 9113 §6.9). */
  readonly connSend = new SendWindow(DEFAULT_WINDOW);
  /** The connection's receive window and its credit. */
  readonly connRecv: ConnectionReceiveFlow;

  /** PING and SETTINGS answers queued since the transport last took the output. */
  pendingControl = 0;
  /** Frames in a row that carried nothing. */
  idleFrames = 0;
  /** The peer's preface (its first SETTINGS) has arrived. */
  sawSettings = false;
  /** A connection error ended the connection. */
  dead = false;
  /** GOAWAY went either way: no new stream. */
  goaway = false;
  /** The id the next stream gets. */
  nextId = 1;

  /** A connection's state before anything was sent. */
  constructor(opts: H2ConnectionOptions) {
    this.o = withDefaults(opts);
    this.encoder = new HpackEncoder({ huffman: this.o.huffman });
    this.decoder = new HpackDecoder(this.o.headerTableSize);
    this.peer = new PeerSettings(this.o.initialPeerConcurrency);
    this.block = new HeaderBlock({
      maxOctets: this.o.maxHeaderBlock,
      maxContinuations: this.o.maxContinuations,
    });
    this.connRecv = new ConnectionReceiveFlow(this.o.connectionWindow, this.o.connectionCredit);
  }

  /** True for a stream id we never opened (server-initiated or above ours): RFC 9113 §5.1 idle. */
  isIdle(stream: number): boolean {
    return (stream & 1) === 0 || stream >= this.nextId;
  }

  /** Queues our GOAWAY (last stream 0: we accept no server-initiated streams). */
  goAway(code: number, debug: string): void {
    this.goaway = true;
    this.out.goaway(0, code, new TextEncoder().encode(debug));
  }

  /** The peer broke the protocol: GOAWAY with `code`, every stream gone, nothing more read. */
  connectionError(ev: H2Event[], code: number, message: string): void {
    if (this.dead) return;
    this.goAway(code, message.slice(0, 200));
    this.dead = true;
    this.streams.clear();
    ev.push({ type: "connection-error", code, message, local: true });
  }

  /**
   * The peer broke the protocol on `s` alone: RST_STREAM with `code`;
   * `invalidHead` when it is the response head that failed the response check.
   */
  streamError(
    ev: H2Event[],
    s: H2Stream,
    code: number,
    message: string,
    invalidHead = false,
  ): void {
    this.forget(s);
    this.out.rstStream(s.id, code);
    ev.push({
      type: "stream-error",
      stream: s.id,
      code,
      message,
      local: true,
      answered: s.answered,
      invalidHead,
    });
  }

  /** Counts a frame that carried nothing; past `maxIdleFrames` in a row the peer is flooding. */
  idleFrame(ev: H2Event[]): void {
    if (++this.idleFrames > this.o.maxIdleFrames) {
      this.connectionError(
        ev,
        H2Code.ENHANCE_YOUR_CALM,
        `more than ${this.o.maxIdleFrames} frames in a row that carry nothing`,
      );
    }
  }

  /** Counts a PING or SETTINGS answer queued; past `maxPendingControl` unread the peer is flooding. */
  controlAnswer(ev: H2Event[]): void {
    if (++this.pendingControl > this.o.maxPendingControl) {
      this.connectionError(
        ev,
        H2Code.ENHANCE_YOUR_CALM,
        `more than ${this.o.maxPendingControl} PING/SETTINGS answers queued unread`,
      );
    }
  }

  /** We sent END_STREAM on `s`. */
  closeLocal(s: H2Stream): void {
    s.sendEnd();
    if (s.closed) this.streams.delete(s.id);
  }

  /** The peer sent END_STREAM on `s`. */
  closeRemote(s: H2Stream): void {
    s.receiveEnd();
    if (s.closed) this.streams.delete(s.id);
  }

  /** `s` ended abnormally (reset either way, refused): it is gone, its reader's octets return. */
  forget(s: H2Stream): void {
    s.reset();
    this.streams.delete(s.id);
    this.creditConnection(this.connRecv.drop(s.id));
  }

  /** Sends the connection's WINDOW_UPDATE of `increment`, if any. */
  creditConnection(increment: number): void {
    if (increment > 0) this.out.windowUpdate(0, increment);
  }
}
