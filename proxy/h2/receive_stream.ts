/**
 * The peer's frames that carry a response (RFC 9113 §6.1, §6.2, §6.10,
 * §8.1): DATA, HEADERS and CONTINUATION, checked against the stream's state
 * and windows, and the response's head, body and trailers against the rules
 * of `proxy/http/`. Each handler pushes the events the frame means.
 *
 * @module
 */

import { parseResponseSection, statusHasNoBody, trailerSectionError } from "../http/mod.ts";
import { H2Code, type H2ErrorValue } from "./errors.ts";
import { Flag, type Frame } from "./frames.ts";
import type { FieldLine } from "./hpack.ts";
import type { ConnectionState } from "./state.ts";
import type { H2Stream } from "./stream.ts";
import type { H2Event } from "./types.ts";

/** Strips padding (RFC 9113 §6.1); returns the payload's end, or -1 after a connection error. */
function unpad(c: ConnectionState, ev: H2Event[], f: Frame): number {
  if ((f.flags & Flag.PADDED) === 0) return f.end;
  if (f.end - f.start < 1) {
    c.connectionError(ev, H2Code.FRAME_SIZE_ERROR, "padded frame without a pad length");
    return -1;
  }
  const pad = f.buf[f.start];
  if (pad >= f.end - f.start) {
    c.connectionError(ev, H2Code.PROTOCOL_ERROR, "padding longer than the frame");
    return -1;
  }
  return f.end - pad;
}

/** The peer's frames on stream 0 or on a stream we never opened: connection errors (§5.1). */
function misplaced(c: ConnectionState, ev: H2Event[], f: Frame, name: string): boolean {
  if (f.stream === 0) c.connectionError(ev, H2Code.PROTOCOL_ERROR, `${name} on stream 0`);
  else if (c.isIdle(f.stream)) {
    c.connectionError(ev, H2Code.PROTOCOL_ERROR, `${name} on idle stream ${f.stream}`);
  }
  return c.dead;
}

/** DATA (RFC 9113 §6.1): flow control first, then the stream's state and the body's framing. */
export function receiveData(c: ConnectionState, ev: H2Event[], f: Frame): void {
  if (misplaced(c, ev, f, "DATA")) return;
  const flowLen = f.end - f.start;
  // The connection window counts every DATA octet, whatever the stream's state (§6.9).
  if (!c.connRecv.receive(flowLen)) {
    return c.connectionError(ev, H2Code.FLOW_CONTROL_ERROR, "connection window overrun");
  }
  const dataEnd = unpad(c, ev, f);
  if (dataEnd < 0) return;
  const dataStart = (f.flags & Flag.PADDED) ? f.start + 1 : f.start;
  const n = dataEnd - dataStart;
  const s = c.streams.get(f.stream);
  const why = s === undefined ? null : dataError(s, flowLen, n, f.flags);
  if (s === undefined || why !== null) {
    // No reader gets these octets: the connection's credit returns now.
    c.creditConnection(c.connRecv.discard(flowLen));
    // A stream closed or reset by us: its late frames are ignored (§5.1).
    if (s === undefined) return c.idleFrame(ev);
    return c.streamError(ev, s, why!.code, why!.message);
  }
  const endStream = (f.flags & Flag.END_STREAM) !== 0;
  if (n === 0 && !endStream) c.idleFrame(ev);
  else c.idleFrames = 0;
  // Padding returns at once; the data when its reader takes it.
  c.creditConnection(c.connRecv.discard(flowLen - n) + c.connRecv.deliver(f.stream, n));
  const padCredit = s.recv.release(flowLen - n);
  if (endStream) c.closeRemote(s);
  else if (padCredit > 0) c.out.windowUpdate(f.stream, padCredit);
  ev.push({ type: "data", stream: f.stream, data: f.buf.subarray(dataStart, dataEnd), endStream });
}

/** Why a DATA frame may not be on `s` (the stream error), or null; counts it in `s`'s window. */
function dataError(s: H2Stream, flowLen: number, n: number, flags: number): H2ErrorValue | null {
  if (!s.canReceive) return { code: H2Code.STREAM_CLOSED, message: "DATA after END_STREAM" };
  if (!s.recv.receive(flowLen)) {
    return { code: H2Code.FLOW_CONTROL_ERROR, message: "stream window overrun" };
  }
  if (s.progress === "head") {
    return { code: H2Code.PROTOCOL_ERROR, message: "DATA before the response head" };
  }
  const why = s.bodyError(n, (flags & Flag.END_STREAM) !== 0);
  return why === null ? null : { code: H2Code.PROTOCOL_ERROR, message: why };
}

/** HEADERS (RFC 9113 §6.2): a header block starts, and ends here unless CONTINUATION follows. */
export function receiveHeaders(c: ConnectionState, ev: H2Event[], f: Frame): void {
  if (misplaced(c, ev, f, "HEADERS")) return;
  let p = (f.flags & Flag.PADDED) ? f.start + 1 : f.start;
  const fragEnd = unpad(c, ev, f);
  if (fragEnd < 0) return;
  if (f.flags & Flag.PRIORITY) p += 5;
  if (p > fragEnd) return c.connectionError(ev, H2Code.FRAME_SIZE_ERROR, "HEADERS too short");
  c.block.begin(f.stream, (f.flags & Flag.END_STREAM) !== 0);
  if (f.flags & Flag.END_HEADERS) {
    // The common case: the whole block in one frame, decoded in place.
    c.block.finish();
    return headerBlockDone(c, ev, f.stream, f.buf.subarray(p, fragEnd));
  }
  const why = c.block.append(f.buf, p, fragEnd);
  if (why !== null) c.connectionError(ev, H2Code.ENHANCE_YOUR_CALM, why);
}

/** CONTINUATION (RFC 9113 §6.10): only right after its stream's HEADERS, bounded. */
export function receiveContinuation(c: ConnectionState, ev: H2Event[], f: Frame): void {
  if (c.block.stream === 0 || f.stream !== c.block.stream) {
    return c.connectionError(ev, H2Code.PROTOCOL_ERROR, "unexpected CONTINUATION");
  }
  const why = c.block.continuation() ?? c.block.append(f.buf, f.start, f.end);
  if (why !== null) return c.connectionError(ev, H2Code.ENHANCE_YOUR_CALM, why);
  if (f.flags & Flag.END_HEADERS) headerBlockDone(c, ev, f.stream, c.block.finish());
}

function headerBlockDone(c: ConnectionState, ev: H2Event[], stream: number, block: Uint8Array) {
  // Decode whatever the stream's state: the HPACK table must stay in step.
  const fields = c.decoder.decode(block, c.o.maxHeaderListSize);
  if (!Array.isArray(fields) && fields.kind === "compression") {
    return c.connectionError(ev, H2Code.COMPRESSION_ERROR, `HPACK: ${fields.message}`);
  }
  const s = c.streams.get(stream);
  if (s === undefined) return; // closed or reset by us: ignored (§5.1)
  if (!Array.isArray(fields)) return c.streamError(ev, s, H2Code.PROTOCOL_ERROR, fields.message);
  if (!s.canReceive) {
    return c.streamError(ev, s, H2Code.STREAM_CLOSED, "HEADERS after END_STREAM");
  }
  c.idleFrames = 0;
  s.answered = true;
  if (s.progress === "body") trailers(c, ev, s, fields);
  else responseHead(c, ev, s, fields);
}

/** A trailer section (RFC 9113 §8.1): it ends the stream and the body. */
function trailers(c: ConnectionState, ev: H2Event[], s: H2Stream, fields: FieldLine[]): void {
  const why = !c.block.endStream
    ? "trailers without END_STREAM"
    : trailerSectionError(fields) ?? (s.shortOfLength ? "body shorter than content-length" : null);
  if (why !== null) return c.streamError(ev, s, H2Code.PROTOCOL_ERROR, why);
  c.closeRemote(s);
  ev.push({ type: "trailers", stream: s.id, headers: fields });
}

/** A response head: informational ones are passed over, the final one is the `response` event. */
function responseHead(c: ConnectionState, ev: H2Event[], s: H2Stream, fields: FieldLine[]): void {
  const endStream = c.block.endStream;
  // A head that fails the response check is malformed (§8.1.1) and a head no
  // client may be given: the event says so (`invalidHead`).
  const head = parseResponseSection(fields);
  if (typeof head === "string") return c.streamError(ev, s, H2Code.PROTOCOL_ERROR, head, true);
  if (head.status < 200) {
    // RFC 9113 §8.1: informational heads precede the final one; 101 is not HTTP/2 (§8.6).
    if (head.status === 101) {
      c.streamError(ev, s, H2Code.PROTOCOL_ERROR, ":status 101 in HTTP/2", true);
    } else if (endStream) {
      c.streamError(ev, s, H2Code.PROTOCOL_ERROR, "1xx response with END_STREAM");
    }
    return;
  }
  s.progress = "body";
  s.contentLength = head.contentLength;
  if (statusHasNoBody(head.status)) s.noBody = true;
  if (endStream && s.shortOfLength) {
    return c.streamError(ev, s, H2Code.PROTOCOL_ERROR, "body shorter than content-length");
  }
  if (endStream) c.closeRemote(s);
  ev.push({
    type: "response",
    stream: s.id,
    status: head.status,
    headers: head.fields,
    contentLength: head.contentLength,
    endStream,
  });
}
