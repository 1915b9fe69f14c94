/**
 * The peer's frames, dispatched by type ({@link receiveFrame}), and those
 * that steer the connection or a stream rather than carry a response
 * (RFC 9113 §6.3-§6.9): PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING,
 * GOAWAY and WINDOW_UPDATE. Each handler pushes the events the frame means.
 *
 * @module
 */

import { H2Code } from "./errors.ts";
import { Flag, type Frame, FrameType, MAX_STREAM_ID, readU32 } from "./frames.ts";
import { MAX_WINDOW } from "./flow_control.ts";
import { receiveContinuation, receiveData, receiveHeaders } from "./receive_stream.ts";
import type { ConnectionState } from "./state.ts";
import type { H2Event } from "./types.ts";

/** A handler of one frame type. */
type Receive = (c: ConnectionState, ev: H2Event[], f: Frame) => void;

/** The handler of each frame type of RFC 9113 §6. */
const RECEIVE: Readonly<Record<number, Receive>> = {
  [FrameType.DATA]: receiveData,
  [FrameType.HEADERS]: receiveHeaders,
  [FrameType.PRIORITY]: receivePriority,
  [FrameType.RST_STREAM]: receiveRstStream,
  [FrameType.SETTINGS]: receiveSettings,
  [FrameType.PUSH_PROMISE]: receivePushPromise,
  [FrameType.PING]: receivePing,
  [FrameType.GOAWAY]: receiveGoaway,
  [FrameType.WINDOW_UPDATE]: receiveWindowUpdate,
  [FrameType.CONTINUATION]: receiveContinuation,
};

/** Handles one whole frame of the peer. */
export function receiveFrame(c: ConnectionState, ev: H2Event[], f: Frame): void {
  if (c.block.stream !== 0 && f.type !== FrameType.CONTINUATION) {
    return c.connectionError(
      ev,
      H2Code.PROTOCOL_ERROR,
      "a frame other than CONTINUATION inside a header block",
    );
  }
  // RFC 9113 §5.5: unknown frame types are ignored.
  const receive = RECEIVE[f.type];
  if (receive === undefined) c.idleFrame(ev);
  else receive(c, ev, f);
}

/** PUSH_PROMISE (RFC 9113 §6.6, §8.4): never allowed, push is disabled. */
function receivePushPromise(c: ConnectionState, ev: H2Event[]): void {
  c.connectionError(
    ev,
    H2Code.PROTOCOL_ERROR,
    "PUSH_PROMISE although we sent SETTINGS_ENABLE_PUSH 0",
  );
}

/** PRIORITY (RFC 9113 §6.3): deprecated, ignored once checked. */
function receivePriority(c: ConnectionState, ev: H2Event[], f: Frame): void {
  if (f.stream === 0) return c.connectionError(ev, H2Code.PROTOCOL_ERROR, "PRIORITY on stream 0");
  const s = c.streams.get(f.stream);
  if (f.end - f.start !== 5 && s !== undefined) {
    return c.streamError(ev, s, H2Code.FRAME_SIZE_ERROR, "PRIORITY not 5 bytes");
  }
  c.idleFrame(ev);
}

/** RST_STREAM (RFC 9113 §6.4): the peer ends a stream. */
function receiveRstStream(c: ConnectionState, ev: H2Event[], f: Frame): void {
  if (f.stream === 0) {
    return c.connectionError(ev, H2Code.PROTOCOL_ERROR, "RST_STREAM on stream 0");
  }
  if (f.end - f.start !== 4) {
    return c.connectionError(ev, H2Code.FRAME_SIZE_ERROR, "RST_STREAM not 4 bytes");
  }
  if (c.isIdle(f.stream)) {
    return c.connectionError(ev, H2Code.PROTOCOL_ERROR, `RST_STREAM on idle stream ${f.stream}`);
  }
  const s = c.streams.get(f.stream);
  if (s === undefined) return c.idleFrame(ev);
  c.forget(s);
  ev.push({
    type: "stream-error",
    stream: f.stream,
    code: readU32(f.buf, f.start),
    message: "reset by the peer",
    local: false,
    answered: s.answered,
    invalidHead: false,
  });
}

/** SETTINGS (RFC 9113 §6.5): applied, then acknowledged. */
function receiveSettings(c: ConnectionState, ev: H2Event[], f: Frame): void {
  if (f.stream !== 0) return c.connectionError(ev, H2Code.PROTOCOL_ERROR, "SETTINGS on a stream");
  const len = f.end - f.start;
  if (f.flags & Flag.ACK) {
    if (len !== 0) {
      return c.connectionError(ev, H2Code.FRAME_SIZE_ERROR, "SETTINGS ACK with a payload");
    }
    if (!c.sawSettings) {
      return c.connectionError(ev, H2Code.PROTOCOL_ERROR, "preface is a SETTINGS ACK");
    }
    return;
  }
  if (len % 6 !== 0) {
    return c.connectionError(ev, H2Code.FRAME_SIZE_ERROR, "SETTINGS length not a multiple of 6");
  }
  c.sawSettings = true;
  const delta = c.peer.apply(f.buf, f.start, f.end);
  if (typeof delta !== "number") return c.connectionError(ev, delta.code, delta.message);
  if (delta !== 0 && !shiftSendWindows(c, delta)) {
    return c.connectionError(
      ev,
      H2Code.FLOW_CONTROL_ERROR,
      "INITIAL_WINDOW_SIZE change overflows a stream window",
    );
  }
  c.out.settingsAck();
  c.controlAnswer(ev);
  if (c.dead) return;
  ev.push({ type: "settings" });
  if (delta > 0) ev.push({ type: "send-window", stream: 0 });
}

/** Applies a change of the initial window to every open stream (§6.9.2); false on overflow. */
function shiftSendWindows(c: ConnectionState, delta: number): boolean {
  for (const s of c.streams.values()) {
    if (!s.send.grow(delta)) return false;
  }
  return true;
}

/** PING (RFC 9113 §6.7): answered; an answer to ours is reported. */
function receivePing(c: ConnectionState, ev: H2Event[], f: Frame): void {
  if (f.stream !== 0) return c.connectionError(ev, H2Code.PROTOCOL_ERROR, "PING on a stream");
  if (f.end - f.start !== 8) {
    return c.connectionError(ev, H2Code.FRAME_SIZE_ERROR, "PING not 8 bytes");
  }
  if (f.flags & Flag.ACK) {
    ev.push({ type: "ping-ack", payload: f.buf.slice(f.start, f.end) });
    return;
  }
  c.out.ping(f.buf.subarray(f.start, f.end), true);
  c.idleFrame(ev);
  c.controlAnswer(ev);
}

/** GOAWAY (RFC 9113 §6.8): streams above its last id are refused; an error with none left ends it. */
function receiveGoaway(c: ConnectionState, ev: H2Event[], f: Frame): void {
  if (f.stream !== 0) return c.connectionError(ev, H2Code.PROTOCOL_ERROR, "GOAWAY on a stream");
  if (f.end - f.start < 8) {
    return c.connectionError(ev, H2Code.FRAME_SIZE_ERROR, "GOAWAY shorter than 8 bytes");
  }
  const last = readU32(f.buf, f.start) & MAX_STREAM_ID;
  const code = readU32(f.buf, f.start + 4);
  let debug = "";
  for (let i = f.start + 8; i < Math.min(f.end, f.start + 8 + 200); i++) {
    debug += String.fromCharCode(f.buf[i]);
  }
  c.goaway = true;
  for (const s of [...c.streams.values()]) {
    if (s.id <= last) continue;
    c.forget(s);
    ev.push({
      type: "stream-error",
      stream: s.id,
      code: H2Code.REFUSED_STREAM,
      message: `above GOAWAY's last stream ${last}`,
      local: false,
      answered: s.answered,
      invalidHead: false,
    });
  }
  ev.push({ type: "goaway", lastStreamId: last, code, debug });
  if (code !== H2Code.NO_ERROR && c.streams.size === 0) {
    c.dead = true;
    const message = `peer GOAWAY: ${debug || "no reason given"}`;
    ev.push({ type: "connection-error", code, message, local: false });
  }
}

/** WINDOW_UPDATE (RFC 9113 §6.9): credit for the connection or a stream. */
function receiveWindowUpdate(c: ConnectionState, ev: H2Event[], f: Frame): void {
  if (f.end - f.start !== 4) {
    return c.connectionError(ev, H2Code.FRAME_SIZE_ERROR, "WINDOW_UPDATE not 4 bytes");
  }
  const inc = readU32(f.buf, f.start) & MAX_WINDOW;
  if (f.stream === 0) {
    if (inc === 0) return c.connectionError(ev, H2Code.PROTOCOL_ERROR, "WINDOW_UPDATE of 0");
    if (!c.connSend.grow(inc)) {
      return c.connectionError(ev, H2Code.FLOW_CONTROL_ERROR, "connection window above 2^31-1");
    }
    ev.push({ type: "send-window", stream: 0 });
    return;
  }
  if (c.isIdle(f.stream)) {
    return c.connectionError(
      ev,
      H2Code.PROTOCOL_ERROR,
      `WINDOW_UPDATE on idle stream ${f.stream}`,
    );
  }
  const s = c.streams.get(f.stream);
  if (s === undefined) return c.idleFrame(ev);
  if (inc === 0) return c.streamError(ev, s, H2Code.PROTOCOL_ERROR, "WINDOW_UPDATE of 0");
  if (!s.send.grow(inc)) {
    return c.streamError(ev, s, H2Code.FLOW_CONTROL_ERROR, "stream window above 2^31-1");
  }
  ev.push({ type: "send-window", stream: f.stream });
}
