/**
 * WebSocket frames (RFC 6455 §5) for tests and the bench: the proxy itself
 * relays WebSocket bytes without parsing them, so a client on the proxy's
 * own tunnels (`H3TestClient.connectWebSocket`, a raw TLS socket) frames
 * its messages here. Clients mask (§5.3), servers do not.
 *
 * @example
 * ```ts
 * const frame = encodeWsFrame(WsOpcode.TEXT, new TextEncoder().encode("hi")); // masked
 * const reader = new WsFrameReader();
 * reader.push(frame); // [{ fin: true, opcode: 1, payload: … "hi" }]
 * ```
 *
 * @module
 */

/** Opcodes (RFC 6455 §5.2). */
export const WsOpcode = {
  CONTINUATION: 0x0,
  TEXT: 0x1,
  BINARY: 0x2,
  CLOSE: 0x8,
  PING: 0x9,
  PONG: 0xa,
} as const;

/** One decoded frame. */
export interface WsFrame {
  fin: boolean;
  opcode: number;
  /** The payload, unmasked. */
  payload: Uint8Array;
  /** Whether it came masked. */
  masked: boolean;
}

/** One frame: `mask` for a client's (a random key), `fin` false for a fragment. */
export function encodeWsFrame(
  opcode: number,
  payload: Uint8Array,
  mask = true,
  fin = true,
): Uint8Array {
  const n = payload.length;
  const lengthBytes = n < 126 ? 0 : n < 65536 ? 2 : 8;
  const out = new Uint8Array(2 + lengthBytes + (mask ? 4 : 0) + n);
  out[0] = (fin ? 0x80 : 0) | opcode;
  out[1] = (mask ? 0x80 : 0) | (n < 126 ? n : n < 65536 ? 126 : 127);
  const view = new DataView(out.buffer);
  if (lengthBytes === 2) view.setUint16(2, n);
  if (lengthBytes === 8) view.setBigUint64(2, BigInt(n));
  let at = 2 + lengthBytes;
  if (!mask) {
    out.set(payload, at);
    return out;
  }
  const key = crypto.getRandomValues(new Uint8Array(4));
  out.set(key, at);
  at += 4;
  for (let i = 0; i < n; i++) out[at + i] = payload[i] ^ key[i & 3];
  return out;
}

/** A text message in one masked frame. */
export function wsText(text: string, mask = true): Uint8Array {
  return encodeWsFrame(WsOpcode.TEXT, new TextEncoder().encode(text), mask);
}

/** A close frame with `code` and `reason` (RFC 6455 §5.5.1). */
export function wsClose(code = 1000, reason = "", mask = true): Uint8Array {
  const r = new TextEncoder().encode(reason);
  const payload = new Uint8Array(2 + r.length);
  new DataView(payload.buffer).setUint16(0, code);
  payload.set(r, 2);
  return encodeWsFrame(WsOpcode.CLOSE, payload, mask);
}

/** The close code of a close frame's payload (1005 when it has none). */
export function closeCode(frame: WsFrame): number {
  return frame.payload.length >= 2 ? new DataView(frame.payload.buffer).getUint16(0) : 1005;
}

/** Decodes frames from bytes as they arrive. */
export class WsFrameReader {
  #buf = new Uint8Array(0);

  /** Adds bytes; returns the frames now complete. */
  push(bytes: Uint8Array): WsFrame[] {
    const joined = new Uint8Array(this.#buf.length + bytes.length);
    joined.set(this.#buf);
    joined.set(bytes, this.#buf.length);
    this.#buf = joined;
    const frames: WsFrame[] = [];
    for (;;) {
      const f = this.#next();
      if (f === null) return frames;
      frames.push(f);
    }
  }

  #next(): WsFrame | null {
    const b = this.#buf;
    if (b.length < 2) return null;
    const masked = (b[1] & 0x80) !== 0;
    let n = b[1] & 0x7f;
    let at = 2;
    if (n === 126) {
      if (b.length < 4) return null;
      n = new DataView(b.buffer, b.byteOffset).getUint16(2);
      at = 4;
    } else if (n === 127) {
      if (b.length < 10) return null;
      n = Number(new DataView(b.buffer, b.byteOffset).getBigUint64(2));
      at = 10;
    }
    const keyAt = at;
    if (masked) at += 4;
    if (b.length < at + n) return null;
    const payload = b.slice(at, at + n);
    if (masked) { for (let i = 0; i < n; i++) payload[i] ^= b[keyAt + (i & 3)]; }
    this.#buf = b.slice(at + n);
    return { fin: (b[0] & 0x80) !== 0, opcode: b[0] & 0x0f, payload, masked };
  }
}
