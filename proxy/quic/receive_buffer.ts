/**
 * The QUIC socket's receive buffer over the proxy's life: raised at startup
 * (`udp_buffer.ts`), reported (the size obtained in the log, a warning with
 * the cause when it falls short: `udp_stats.ts`), lowered during a flood and
 * raised again after it (`flood_buffer.ts`).
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import { FloodBufferGuard } from "./flood_buffer.ts";
import type { RejectReason } from "./transport.ts";
import { raiseReceiveBuffer, receiveBufferResizer } from "./udp_buffer.ts";
import { readReceiveBufferSysctl, receiveBufferReport, receiveBufferWarning } from "./udp_stats.ts";

const log = getLogger(["proxy", "quic"]);

/** A flood ends after this long without an Initial shed or ignored (ms). */
const CALM_MS = 5000;

/** Options of {@link QuicReceiveBuffer}. */
export interface ReceiveBufferOptions {
  /** Bytes asked for (`limits.udp_receive_buffer`; 0: the kernel's default, left alone). */
  wanted: number;
  /** The listener is on a loopback address only: a shortfall is not worth a warning. */
  loopbackOnly: boolean;
}

/**
 * The receive buffer as the proxy runs it: created before the socket is
 * bound (admission outcomes may arrive as soon as it is), raised by
 * {@link raise} once it is.
 *
 * @example
 * ```ts
 * const buffer = new QuicReceiveBuffer({ wanted: 7 << 20, loopbackOnly: false });
 * buffer.raise(9889); // once the QUIC socket is bound
 * buffer.rejected("handshake_rate"); // from the transport's onRejected
 * buffer.bytes; // e.g. 212992 during a flood, 8388608 after it
 * buffer.stop();
 * ```
 */
export class QuicReceiveBuffer {
  readonly #opts: ReceiveBufferOptions;
  #bytes: number | undefined;
  #guard: FloodBufferGuard | undefined;

  /** Nothing happens before {@link raise}. */
  constructor(opts: ReceiveBufferOptions) {
    this.#opts = opts;
  }

  /** Its size now (`getsockopt`), bytes, or `undefined` when unknown. */
  get bytes(): number | undefined {
    return this.#guard?.bytes ?? this.#bytes;
  }

  /**
   * Raises the buffer of the socket on `port`, logs the size obtained (warns
   * with the cause and the fix when it fell short, at info level on a
   * loopback-only listener, which bursts from the network cannot reach), and
   * from then on lowers it during floods. Never throws.
   */
  raise(port: number): void {
    const raised = raiseReceiveBuffer(port, this.#opts.wanted);
    log.info(receiveBufferReport(raised));
    const sysctl = readReceiveBufferSysctl();
    const warning = receiveBufferWarning(raised, sysctl);
    if (warning && this.#opts.loopbackOnly) log.info(warning);
    else if (warning) log.warn(warning);
    this.#bytes = raised.bytes ?? sysctl.rmemDefault;
    const floodBytes = raised.before ?? sysctl.rmemDefault;
    const resize = receiveBufferResizer(port);
    // Nothing raised, so nothing to lower during a flood.
    if (raised.bytes === undefined || floodBytes === undefined || !resize) return;
    if (floodBytes >= raised.bytes) return;
    this.#guard = new FloodBufferGuard({
      calmBytes: raised.wanted,
      bytesNow: raised.bytes,
      floodBytes,
      resize,
      calmMs: CALM_MS,
      now: () => performance.now(),
      onChange: reportFlood,
    });
  }

  /** Every admission outcome: a flood lowers the buffer for its duration. */
  rejected(reason: RejectReason): void {
    this.#guard?.rejected(reason);
  }

  /** Stops watching for floods. */
  stop(): void {
    this.#guard?.stop();
  }
}

function reportFlood(flooding: boolean, bytes: number | undefined): void {
  const size = bytes === undefined ? "of unknown size" : `${Math.round(bytes / 1024)} KiB`;
  if (flooding) {
    log.warn(
      "Initials are shed or ignored (a flood, or more than the handshake table holds): " +
        "the QUIC socket's receive buffer is {size} while it lasts, so that a legitimate " +
        "Initial does not queue behind the flood",
      { size },
    );
  } else {
    log.info("no Initial shed for {s} s: the QUIC socket's receive buffer is {size} again", {
      s: CALM_MS / 1000,
      size,
    });
  }
}
