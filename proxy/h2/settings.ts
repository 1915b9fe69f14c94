/**
 * HTTP/2 SETTINGS (RFC 9113 §6.5): the client's own, sent in its preface,
 * and the peer's, applied frame by frame with the checks of §6.5.2.
 *
 * @example
 * ```ts
 * import { PeerSettings, SettingId } from "./settings.ts";
 * const peer = new PeerSettings(100);
 * peer.apply(new Uint8Array([0, SettingId.MAX_CONCURRENT_STREAMS, 0, 0, 0, 7]), 0, 6); // 0
 * peer.maxConcurrentStreams; // 7
 * ```
 *
 * @module
 */

import { H2Code } from "./errors.ts";
import { DEFAULT_MAX_FRAME, MAX_MAX_FRAME, readU32, SettingId } from "./frames.ts";
import { DEFAULT_WINDOW, MAX_WINDOW } from "./flow_control.ts";

export { SettingId };

/** What the client announces of itself. */
export interface LocalSettings {
  /** HPACK table the peer may use. */
  headerTableSize: number;
  /** Receive window of each stream. */
  streamWindow: number;
  /** Largest frame the peer may send. */
  maxFrameSize: number;
  /** Largest header list the peer may send. */
  maxHeaderListSize: number;
}

/**
 * The client's SETTINGS (RFC 9113 §3.4): push disabled, the header list
 * size, and whatever else differs from the protocol's defaults.
 */
export function localSettings(s: LocalSettings): Array<[number, number]> {
  const pairs: Array<[number, number]> = [[SettingId.ENABLE_PUSH, 0]];
  if (s.headerTableSize !== 4096) pairs.push([SettingId.HEADER_TABLE_SIZE, s.headerTableSize]);
  if (s.streamWindow !== DEFAULT_WINDOW) {
    pairs.push([SettingId.INITIAL_WINDOW_SIZE, s.streamWindow]);
  }
  if (s.maxFrameSize !== DEFAULT_MAX_FRAME) {
    pairs.push([SettingId.MAX_FRAME_SIZE, s.maxFrameSize]);
  }
  pairs.push([SettingId.MAX_HEADER_LIST_SIZE, s.maxHeaderListSize]);
  return pairs;
}

/** A SETTINGS frame that is a connection error (RFC 9113 §6.5.2). */
export interface SettingsError {
  /** The RFC 9113 §7 code. */
  readonly code: number;
  /** Why. */
  readonly message: string;
}

/** The peer's settings as its SETTINGS frames said them so far (RFC 9113 §6.5.2). */
export class PeerSettings {
  /** SETTINGS_MAX_CONCURRENT_STREAMS (the assumption until the peer says it). */
  maxConcurrentStreams: number;
  /** SETTINGS_INITIAL_WINDOW_SIZE: the send window of each new stream. */
  initialWindow = DEFAULT_WINDOW;
  /** SETTINGS_MAX_FRAME_SIZE: the largest frame the peer takes. */
  maxFrameSize = DEFAULT_MAX_FRAME;
  /** SETTINGS_MAX_HEADER_LIST_SIZE (no limit until the peer sets one). */
  maxHeaderListSize = Infinity;
  /** SETTINGS_ENABLE_CONNECT_PROTOCOL = 1 received: extended CONNECT may be sent (RFC 8441 §3). */
  enableConnectProtocol = false;

  /** Settings before any SETTINGS frame, assuming `assumedConcurrency` streams. */
  constructor(assumedConcurrency: number) {
    this.maxConcurrentStreams = assumedConcurrency;
  }

  /**
   * Applies the settings of one SETTINGS payload (`b[start, end)`, a
   * multiple of 6 octets); returns how much the initial stream window
   * changed (every open stream's send window changes as much, §6.9.2), or
   * the connection error.
   */
  apply(b: Uint8Array, start: number, end: number): number | SettingsError {
    let windowDelta = 0;
    for (let p = start; p < end; p += 6) {
      const id = (b[p] << 8) | b[p + 1];
      const value = readU32(b, p + 2);
      const error = this.#applyOne(id, value);
      if (error !== null) return error;
      if (id === SettingId.INITIAL_WINDOW_SIZE) {
        windowDelta += value - this.initialWindow;
        this.initialWindow = value;
      }
    }
    return windowDelta;
  }

  #applyOne(id: number, value: number): SettingsError | null {
    switch (id) {
      case SettingId.ENABLE_PUSH:
        if (value > 1) return { code: H2Code.PROTOCOL_ERROR, message: "ENABLE_PUSH above 1" };
        if (value === 1) {
          return { code: H2Code.PROTOCOL_ERROR, message: "a server set ENABLE_PUSH 1" };
        }
        return null;
      case SettingId.MAX_CONCURRENT_STREAMS:
        this.maxConcurrentStreams = value;
        return null;
      case SettingId.INITIAL_WINDOW_SIZE:
        if (value <= MAX_WINDOW) return null;
        return { code: H2Code.FLOW_CONTROL_ERROR, message: "INITIAL_WINDOW_SIZE above 2^31-1" };
      case SettingId.MAX_FRAME_SIZE:
        if (value < DEFAULT_MAX_FRAME || value > MAX_MAX_FRAME) {
          return {
            code: H2Code.PROTOCOL_ERROR,
            message: `MAX_FRAME_SIZE ${value} outside 16384..16777215`,
          };
        }
        this.maxFrameSize = value;
        return null;
      case SettingId.MAX_HEADER_LIST_SIZE:
        this.maxHeaderListSize = value;
        return null;
      case SettingId.ENABLE_CONNECT_PROTOCOL:
        return this.#connectProtocol(value);
      default:
        // HEADER_TABLE_SIZE: our encoder never inserts into the peer's table,
        // any size suits it. Unknown settings are ignored (§6.5.2).
        return null;
    }
  }

  /**
   * SETTINGS_ENABLE_CONNECT_PROTOCOL (RFC 8441 §3): 0 or 1, and never 0
   * again once it was 1 (a connection error PROTOCOL_ERROR either way).
   */
  #connectProtocol(value: number): SettingsError | null {
    if (value > 1) {
      return { code: H2Code.PROTOCOL_ERROR, message: `ENABLE_CONNECT_PROTOCOL ${value} above 1` };
    }
    if (value === 0 && this.enableConnectProtocol) {
      return { code: H2Code.PROTOCOL_ERROR, message: "ENABLE_CONNECT_PROTOCOL back to 0 after 1" };
    }
    this.enableConnectProtocol = value === 1;
    return null;
  }
}
