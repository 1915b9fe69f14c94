/**
 * The QUIC socket's receive buffer under a flood. A large buffer
 * (`limits.udp_receive_buffer`, 7 MiB) keeps a burst of legitimate Initials
 * from being dropped, but under a flood that outruns the QUIC thread it fills
 * and every legitimate Initial waits behind thousands of spoofed ones: at
 * 3,000 spoofed Initials/s on two busy cores, the median legitimate handshake
 * took 1.3 s with 8 MiB and 28 ms with 208 KiB (measured). So while the
 * admission limits shed or ignore Initials (the handshake table is full, or
 * Initials come faster than `limits.max_handshake_rate`), the buffer is
 * lowered to the kernel's default, and raised again once none has been shed
 * for `calmMs`. Under a flood the kernel then drops what the thread could not
 * have served in time, and a legitimate client retransmits.
 *
 * @module
 */

import type { RejectReason } from "./transport.ts";

/** The admission outcomes that mean a flood: Initials shed from a full table or ignored. */
const FLOOD_REASONS: ReadonlySet<RejectReason> = new Set<RejectReason>([
  "handshakes",
  "address_handshakes",
  "network_handshakes",
  "handshake_rate",
]);

/** Options of {@link FloodBufferGuard}. */
export interface FloodBufferGuardOptions {
  /** The buffer asked for outside a flood (what startup asked for), bytes. */
  calmBytes: number;
  /** The buffer's size now (what startup got), bytes. */
  bytesNow: number;
  /** The buffer during a flood (the kernel's default), bytes. */
  floodBytes: number;
  /** Sets the socket's buffer; returns the size it has now (`undefined`: unknown). */
  resize(bytes: number): number | undefined;
  /** No flood outcome for this long ends the flood (ms). */
  calmMs: number;
  /** Monotonic clock in ms. */
  now: () => number;
  /** Told when a flood starts or ends, with the buffer's size now (logs). */
  onChange?(flooding: boolean, bytes: number | undefined): void;
}

/**
 * Lowers the receive buffer while admission sheds Initials, raises it after.
 *
 * @example
 * ```ts
 * const guard = new FloodBufferGuard({
 *   calmBytes: 7 << 20,
 *   bytesNow: 8 << 20,
 *   floodBytes: 212992,
 *   resize: (bytes) => bytes,
 *   calmMs: 5000,
 *   now: () => performance.now(),
 * });
 * guard.rejected("handshake_rate"); // lowered until 5 s pass without another
 * guard.stop();
 * ```
 */
export class FloodBufferGuard {
  readonly #opts: FloodBufferGuardOptions;
  #flooding = false;
  #lastFlood = -Infinity;
  #bytes: number | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #stopped = false;

  /** A guard for a buffer now at `bytesNow`. */
  constructor(opts: FloodBufferGuardOptions) {
    this.#opts = opts;
    this.#bytes = opts.bytesNow;
  }

  /** Whether the buffer is lowered for a flood now. */
  get flooding(): boolean {
    return this.#flooding;
  }

  /** The buffer's size now, as last read back. */
  get bytes(): number | undefined {
    return this.#bytes;
  }

  /** An admission outcome (called for every one, so cheap unless a flood starts). */
  rejected(reason: RejectReason): void {
    if (this.#stopped || !FLOOD_REASONS.has(reason)) return;
    this.#lastFlood = this.#opts.now();
    if (this.#flooding) return;
    this.#flooding = true;
    this.#set(this.#opts.floodBytes);
    this.#arm(this.#opts.calmMs);
  }

  /** Stops the timer (the listener closed); the buffer stays as it is. */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }

  #set(bytes: number): void {
    this.#bytes = this.#opts.resize(bytes);
    this.#opts.onChange?.(this.#flooding, this.#bytes);
  }

  #arm(ms: number): void {
    this.#timer = setTimeout(() => this.#check(), ms);
    Deno.unrefTimer(this.#timer);
  }

  #check(): void {
    if (this.#stopped) return;
    const quiet = this.#opts.now() - this.#lastFlood;
    if (quiet < this.#opts.calmMs) return this.#arm(this.#opts.calmMs - quiet);
    this.#flooding = false;
    this.#set(this.#opts.calmBytes);
  }
}
