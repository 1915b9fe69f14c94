/**
 * One HTTP/2 stream of the client (RFC 9113 §5.1): its state machine, its
 * two windows and the progress of the response it carries.
 *
 * The states a client stream goes through:
 *
 * ```
 *                        send HEADERS
 *   idle ───────────────────────────────────────────► open
 *    │ send HEADERS + END_STREAM                        │ │
 *    ▼                        send END_STREAM           │ │ recv END_STREAM
 *   half-closed (local) ◄───────────────────────────────┘ ▼
 *    │ recv END_STREAM                         half-closed (remote)
 *    ▼                                                    │ send END_STREAM
 *   closed ◄─────────────────────────────────────────────┘
 *   (and from every state: send or recv RST_STREAM)
 * ```
 *
 * The reserved states of §5.1 follow a PUSH_PROMISE only. This client sends
 * SETTINGS_ENABLE_PUSH 0 and treats a PUSH_PROMISE as a connection error
 * (§8.4), so no stream is ever reserved.
 *
 * @module
 */

import { ReceiveWindow, SendWindow } from "./flow_control.ts";

/** The states of a stream (RFC 9113 §5.1); the reserved ones never occur here. */
export type StreamState =
  | "idle"
  | "open"
  | "half-closed (local)"
  | "half-closed (remote)"
  | "closed";

/** What moves a stream from one state to the next. */
export type StreamEvent = "send headers" | "send end" | "recv end" | "reset";

/** The transitions of RFC 9113 §5.1 for a client that disables push; absent: not allowed. */
const TRANSITIONS: Readonly<
  Record<StreamState, Readonly<Partial<Record<StreamEvent, StreamState>>>>
> = {
  idle: { "send headers": "open" },
  open: {
    "send end": "half-closed (local)",
    "recv end": "half-closed (remote)",
    reset: "closed",
  },
  "half-closed (local)": { "recv end": "closed", reset: "closed" },
  "half-closed (remote)": { "send end": "closed", reset: "closed" },
  closed: {},
};

/**
 * The state after `event` in `state`. A transition the table does not have
 * is a bug of the caller (which checks {@link H2Stream.canSend} and
 * {@link H2Stream.canReceive} first), never a peer's doing: it throws.
 */
export function nextState(state: StreamState, event: StreamEvent): StreamState {
  const next = TRANSITIONS[state][event];
  if (next === undefined) throw new Error(`HTTP/2 stream: no "${event}" in state ${state}`);
  return next;
}

/** What the stream's response has reached. */
export type ResponseProgress = "head" | "body";

/** One request stream: state, windows, and its response's framing so far. */
export class H2Stream {
  /** The stream id (odd: the client opened it). */
  readonly id: number;
  /** Where the stream stands (RFC 9113 §5.1). */
  state: StreamState = "idle";
  /** Credit the peer gave this stream. */
  readonly send: SendWindow;
  /** Credit this stream grants the peer. */
  readonly recv: ReceiveWindow;
  /** `head` until the final response head, then `body` (trailers end the stream). */
  progress: ResponseProgress = "head";
  /** A response head arrived (1xx included): the peer processed the request (RFC 9113 §8.7). */
  answered = false;
  /** The response carries no content whatever it declares (HEAD, 204, 304). */
  noBody: boolean;
  /** The final head's Content-Length, or -1. */
  contentLength = -1;
  /** Content octets received. */
  received = 0;

  /**
   * A stream whose request HEADERS are being sent (idle → open, then
   * half-closed (local) at once with `endStream`); `head` for a HEAD request.
   */
  constructor(id: number, opts: {
    endStream: boolean;
    head: boolean;
    sendWindow: number;
    recvWindow: number;
  }) {
    this.id = id;
    this.send = new SendWindow(opts.sendWindow);
    this.recv = new ReceiveWindow(opts.recvWindow);
    this.noBody = opts.head;
    this.#to("send headers");
    if (opts.endStream) this.#to("send end");
  }

  /** Whether the client may still send DATA or trailers on it. */
  get canSend(): boolean {
    return this.state === "open" || this.state === "half-closed (remote)";
  }

  /** Whether the peer may still send frames carrying the response on it. */
  get canReceive(): boolean {
    return this.state === "open" || this.state === "half-closed (local)";
  }

  /** The client sent END_STREAM. */
  sendEnd(): void {
    this.#to("send end");
  }

  /** The peer sent END_STREAM. */
  receiveEnd(): void {
    this.#to("recv end");
  }

  /** RST_STREAM, sent or received. */
  reset(): void {
    this.#to("reset");
  }

  /** True once closed: the stream can be forgotten. */
  get closed(): boolean {
    return this.state === "closed";
  }

  /**
   * Counts `n` content octets of a DATA frame; why the body breaks the
   * framing its head declared (RFC 9113 §8.1.1), or null.
   */
  bodyError(n: number, endStream: boolean): string | null {
    this.received += n;
    if (n > 0 && this.noBody) return "body on a response that has none";
    if (this.noBody || this.contentLength < 0) return null;
    if (this.received > this.contentLength) return "body longer than content-length";
    if (endStream && this.received !== this.contentLength) {
      return "body shorter than content-length";
    }
    return null;
  }

  /** Whether the body ended (END_STREAM) short of its declared Content-Length. */
  get shortOfLength(): boolean {
    return !this.noBody && this.contentLength >= 0 && this.received !== this.contentLength;
  }

  #to(event: StreamEvent): void {
    this.state = nextState(this.state, event);
  }
}
