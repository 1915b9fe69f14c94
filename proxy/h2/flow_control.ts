/**
 * HTTP/2 flow control (RFC 9113 §5.2, §6.9): the windows the client sends
 * against ({@link SendWindow}), the windows it grants the peer
 * ({@link ReceiveWindow}) and when the connection's credit is returned
 * ({@link ConnectionReceiveFlow}).
 *
 * @example
 * ```ts
 * import { ReceiveWindow } from "./flow_control.ts";
 * const w = new ReceiveWindow(100);
 * w.receive(60); // true: within the window
 * w.release(60); // 60: the WINDOW_UPDATE increment to send now (half the window is owed)
 * ```
 *
 * @module
 */

/** Largest flow-control window (RFC 9113 §6.9.1). */
export const MAX_WINDOW = 0x7fffffff;
/** The initial window every stream and the connection start with (RFC 9113 §6.9.2). */
export const DEFAULT_WINDOW = 65_535;

/** Credit the peer gave: how many DATA octets may be sent (RFC 9113 §6.9.1). */
export class SendWindow {
  /** Octets that may be sent now; negative after the peer shrank the initial window (§6.9.2). */
  size: number;

  /** A window of `size` octets. */
  constructor(size: number) {
    this.size = size;
  }

  /** Adds the peer's credit; false when the window passes 2^31-1 (FLOW_CONTROL_ERROR). */
  grow(increment: number): boolean {
    this.size += increment;
    return this.size <= MAX_WINDOW;
  }
}

/**
 * Credit granted to the peer: what it may still send, and what was taken
 * and is owed back. Credit is returned in one WINDOW_UPDATE once half the
 * window is owed, so a reader that keeps up costs one frame per half window.
 */
export class ReceiveWindow {
  readonly #size: number;
  #open: number;
  #owed = 0;

  /** A window of `size` octets, all granted. */
  constructor(size: number) {
    this.#size = size;
    this.#open = size;
  }

  /** Counts `n` received octets; false when they overran the window (FLOW_CONTROL_ERROR). */
  receive(n: number): boolean {
    this.#open -= n;
    return this.#open >= 0;
  }

  /** Returns `n` octets of credit; the increment to send with WINDOW_UPDATE now, or 0. */
  release(n: number): number {
    this.#owed += n;
    if (this.#owed < this.#size >>> 1) return 0;
    const increment = this.#owed;
    this.#open += increment;
    this.#owed = 0;
    return increment;
  }
}

/**
 * When the connection's receive credit returns (RFC 9113 §6.9):
 * - `on-arrival`: as DATA arrives; only the stream windows bound what
 *   readers hold, the connection window never fills.
 * - `on-consume`: as the readers take the octets (`consume`), so the
 *   connection window bounds what all the streams of a connection hold
 *   unread together: many stalled readers cannot each hold a stream window.
 */
export type ConnectionCredit = "on-arrival" | "on-consume";

/**
 * The connection's receive window and the octets each stream's reader holds
 * unread. Every method returns the WINDOW_UPDATE increment for stream 0 to
 * send now, or 0.
 */
export class ConnectionReceiveFlow {
  readonly #window: ReceiveWindow;
  readonly #onConsume: boolean;
  /** Per stream: octets handed to its reader and not yet taken (`on-consume` only). */
  readonly #held = new Map<number, number>();
  #heldTotal = 0;

  /** A connection window of `size` octets, its credit returned `credit`. */
  constructor(size: number, credit: ConnectionCredit) {
    this.#window = new ReceiveWindow(size);
    this.#onConsume = credit === "on-consume";
  }

  /** Octets handed to readers and not yet taken, all streams together. */
  get held(): number {
    return this.#heldTotal;
  }

  /** Counts `n` received DATA octets (padding included); false on an overrun. */
  receive(n: number): boolean {
    return this.#window.receive(n);
  }

  /** `n` received octets that reach no reader (padding, a closed or failed stream's DATA). */
  discard(n: number): number {
    return n > 0 ? this.#window.release(n) : 0;
  }

  /** `n` octets handed to the reader of `stream`. */
  deliver(stream: number, n: number): number {
    if (!this.#onConsume) return this.discard(n);
    if (n > 0) {
      this.#held.set(stream, (this.#held.get(stream) ?? 0) + n);
      this.#heldTotal += n;
    }
    return 0;
  }

  /** The reader of `stream` took `n` octets (never more than it was handed). */
  consume(stream: number, n: number): number {
    const held = this.#held.get(stream);
    if (held === undefined) return 0;
    const taken = Math.min(n, held);
    if (taken === held) this.#held.delete(stream);
    else this.#held.set(stream, held - taken);
    this.#heldTotal -= taken;
    return this.discard(taken);
  }

  /** The reader of `stream` is gone: what it held unread returns. */
  drop(stream: number): number {
    return this.consume(stream, Infinity);
  }
}
