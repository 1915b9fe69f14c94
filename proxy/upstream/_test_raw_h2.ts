/**
 * A raw HTTP/2 server for the transport tests: it reads the client's frames
 * (HPACK-decoding request heads) and lets each test script its answers
 * frame by frame (GOAWAY at a chosen point, silence, …); a test that keeps
 * to the client's windows sees every frame the client sends (`onFrame`).
 *
 * @module
 */

import { HpackDecoder } from "../h2/hpack.ts";
import { frame, goaway, headers, settings } from "../h2/_test_util.ts";
import { writeAll } from "../../shared/bytes.ts";

/** One accepted connection. */
export interface RawConn {
  /** Writes bytes whole, after those written before (errors ignored: the client may be gone). */
  write(bytes: Uint8Array): Promise<void>;
  /** A 200 with `body` and END_STREAM. */
  respond(stream: number, body?: string): Promise<void>;
  /** GOAWAY with `last` and `code`. */
  goaway(last: number, code?: number): Promise<void>;
  /** Stops answering anything (PINGs included), keeping the socket open. */
  silence(): void;
  close(): void;
}

/** A running raw server. */
export interface RawServer {
  readonly address: string;
  /** Connections accepted so far. */
  readonly conns: RawConn[];
  close(): Promise<void>;
}

/** A frame the client sent. */
export interface RawFrame {
  readonly type: number;
  readonly flags: number;
  readonly stream: number;
  readonly payload: Uint8Array;
}

/**
 * Starts the server; `onRequest` runs for each request head (stream id,
 * fields), `onFrame` for every frame the client sends, before the server's
 * own answer to it.
 */
export function startRawH2(
  onRequest: (conn: RawConn, stream: number, fields: Array<[string, string]>) => void,
  onFrame?: (conn: RawConn, frame: RawFrame) => void,
): RawServer {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns: RawConn[] = [];
  const sockets: Deno.Conn[] = [];
  (async () => {
    for await (const sock of listener) {
      sockets.push(sock);
      serve(sock).catch(() => {});
    }
  })().catch(() => {});

  async function serve(sock: Deno.Conn): Promise<void> {
    let quiet = false;
    let written = Promise.resolve();
    const c: RawConn = {
      write: (b) => written = written.then(() => writeAll(sock, b)).catch(() => {}),
      respond: (stream, body = "ok") =>
        c.write(
          new Uint8Array([
            ...headers(stream, [[":status", "200"], ["content-length", String(body.length)]]),
            ...frame(0, 1, stream, new TextEncoder().encode(body)),
          ]),
        ),
      goaway: (last, code = 0) => c.write(goaway(last, code)),
      silence: () => quiet = true,
      close: () => {
        try {
          sock.close();
        } catch { /* closed */ }
      },
    };
    conns.push(c);
    await c.write(settings());
    const decoder = new HpackDecoder();
    let buf = new Uint8Array(0);
    let prefaceLeft = 24;
    const chunk = new Uint8Array(65536);
    for (;;) {
      const n = await sock.read(chunk);
      if (n === null) return;
      const next = new Uint8Array(buf.length + n);
      next.set(buf);
      next.set(chunk.subarray(0, n), buf.length);
      buf = next;
      if (prefaceLeft > 0) {
        const take = Math.min(prefaceLeft, buf.length);
        prefaceLeft -= take;
        buf = buf.subarray(take);
      }
      while (buf.length >= 9) {
        const len = (buf[0] << 16) | (buf[1] << 8) | buf[2];
        if (buf.length < 9 + len) break;
        const type = buf[3];
        const flags = buf[4];
        const stream = new DataView(buf.buffer, buf.byteOffset).getUint32(5) & 0x7fffffff;
        const payload = buf.slice(9, 9 + len);
        buf = buf.subarray(9 + len);
        if (quiet) continue;
        onFrame?.(c, { type, flags, stream, payload });
        if (type === 4 && (flags & 1) === 0) await c.write(settings([], true));
        else if (type === 6 && (flags & 1) === 0) await c.write(frame(6, 1, 0, payload));
        else if (type === 1) {
          const fields = decoder.decode(payload);
          if (Array.isArray(fields)) onRequest(c, stream, fields);
        }
      }
    }
  }

  return {
    address: `127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    conns,
    close: async () => {
      listener.close();
      for (const s of sockets) {
        try {
          s.close();
        } catch { /* closed */ }
      }
      await Promise.resolve();
    },
  };
}
