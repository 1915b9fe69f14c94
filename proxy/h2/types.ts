/**
 * What the HTTP/2 client codec takes and reports: its options, its events
 * and the answer to opening a stream.
 *
 * @module
 */

import type { ConnectionCredit } from "./flow_control.ts";
import type { FieldLine } from "./hpack.ts";

/** Options of `H2ClientConnection`; every field has a default. */
export interface H2ConnectionOptions {
  /** Our SETTINGS_INITIAL_WINDOW_SIZE: receive window of each stream (default 256 KiB). */
  streamWindow?: number;
  /** Receive window of the connection (default 1 MiB; never less than 65,535, RFC 9113 §6.9.2). */
  connectionWindow?: number;
  /**
   * When the connection window's credit returns (default `on-arrival`): as
   * DATA arrives, or (`on-consume`) as the readers `consume` it, so that the
   * connection window bounds what all the streams hold unread together.
   */
  connectionCredit?: ConnectionCredit;
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
   * whatever a later REFUSED_STREAM claims (RFC 9113 §8.7). `invalidHead`:
   * the response head failed `proxy/http/`'s response check (RFC 9113
   * §8.2, §8.3, RFC 9110 §15): the peer answered with a head no client may
   * be given.
   */
  | {
    type: "stream-error";
    stream: number;
    code: number;
    message: string;
    local: boolean;
    answered: boolean;
    invalidHead: boolean;
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

/** Why `H2ClientConnection.openStream` could not open a stream. */
export type OpenRefusal =
  /** The peer's MAX_CONCURRENT_STREAMS is reached: wait for a stream to close. */
  | "busy"
  /** The connection cannot take new streams (GOAWAY, error, ids exhausted). */
  | "closed"
  /** The header list is larger than the peer's MAX_HEADER_LIST_SIZE. */
  | "too-large"
  /**
   * An extended CONNECT (`:protocol`) to a peer that has not sent
   * SETTINGS_ENABLE_CONNECT_PROTOCOL = 1 (RFC 8441 §4: the client must not).
   */
  | "no-extended-connect";

/** Result of `H2ClientConnection.openStream`. */
export type OpenResult = { id: number } | { refused: OpenRefusal };
