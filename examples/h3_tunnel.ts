/**
 * An extended CONNECT tunnel (RFC 9220) on one request stream of the
 * project's HTTP/3 client (`h3_client.ts`, `H3TestClient.connectTunnel`):
 * the answer's head, then the stream's DATA payloads both ways. A WebSocket
 * over HTTP/3 is such a tunnel with `:protocol websocket`, carrying the
 * WebSocket frames of RFC 6455 as its bytes (RFC 9220 §3; framing them is
 * the caller's business).
 *
 * @example
 * ```ts
 * import { H3TestClient } from "./h3_client.ts";
 * declare const client: H3TestClient;
 *
 * const ws = await client.connectWebSocket({ authority: "localhost:9889", path: "/chat" });
 * if (ws.status === 200) {
 *   await ws.send(new Uint8Array([0x81, 0x80, 0, 0, 0, 0])); // an empty, masked text frame
 *   const reader = ws.readable.getReader();
 *   await reader.read(); // the server's bytes
 *   await ws.end();
 * }
 * ```
 *
 * @module
 */

import {
  concatBytes,
  encodeFrame,
  encodeFrameHeader,
  FrameDecoder,
  FrameType,
  NEED_MORE,
} from "../proxy/h3/mod.ts";

/** What opening a tunnel asks for. */
export interface TunnelRequest {
  /** `:protocol` (`websocket`, …). */
  protocol: string;
  /** `:authority`, e.g. `localhost:9889`. */
  authority: string;
  /** `:path`, query included. */
  path: string;
  /** Regular fields after the pseudo-headers. */
  headers?: Array<[string, string]>;
  /**
   * Bytes sent in a DATA frame right after the HEADERS, before any answer
   * (an eager client: servers must not pass them on before they accept).
   */
  early?: Uint8Array;
}

/** An extended CONNECT's answer and, when it is a 2xx, the tunnel. */
export interface H3Tunnel {
  /** The answer's status: a 2xx opened the tunnel. */
  readonly status: number;
  /** The answer's regular fields. */
  readonly headers: Array<[string, string]>;
  /**
   * The server's bytes: the tunnel's DATA payloads as they arrive (or, for
   * a refusal, its body). Ends at the server's FIN; errors when the stream
   * is reset, or when a frame other than DATA arrives after the answer.
   */
  readonly readable: ReadableStream<Uint8Array>;
  /** Sends `bytes` as one DATA frame. */
  send(bytes: Uint8Array): Promise<void>;
  /** Ends our side (FIN). */
  end(): Promise<void>;
  /** Writes `bytes` as they are, frame headers included (tests of a misbehaving client). */
  raw(bytes: Uint8Array): Promise<void>;
  /** Gives up both sides (our send side and the server's, STOP_SENDING). */
  abort(): void;
}

/** Decodes a HEADERS payload into fields (the client's QPACK decoder). */
export type SectionDecoder = (payload: Uint8Array) => Array<[string, string]>;

/**
 * Opens the tunnel on `stream`: writes the extended CONNECT (`encode`d by
 * the caller's QPACK encoder) and resolves with the answer once its head
 * has arrived.
 */
export async function openTunnel(
  stream: Deno.QuicBidirectionalStream,
  req: TunnelRequest,
  encode: (fields: Array<[string, string]>) => Uint8Array,
  decode: SectionDecoder,
): Promise<H3Tunnel> {
  const writer = stream.writable.getWriter();
  const head: Array<[string, string]> = [
    [":method", "CONNECT"],
    [":protocol", req.protocol],
    [":scheme", "https"],
    [":authority", req.authority],
    [":path", req.path],
    ...(req.headers ?? []),
  ];
  const parts = [encodeFrame(FrameType.HEADERS, encode(head))];
  if (req.early !== undefined) parts.push(dataFrame(req.early));
  await writer.write(concatBytes(...parts));
  const answer = await readAnswer(stream.readable, decode);
  return {
    ...answer,
    send: (bytes) => writer.write(dataFrame(bytes)),
    end: () => writer.close(),
    raw: (bytes) => writer.write(bytes),
    abort: () => {
      writer.abort().catch(() => {});
      answer.readable.cancel().catch(() => {});
    },
  };
}

function dataFrame(bytes: Uint8Array): Uint8Array {
  return concatBytes(encodeFrameHeader(FrameType.DATA, bytes.length), bytes);
}

/**
 * Reads the answer's head from `readable`; the rest of the stream becomes
 * the answer's `readable` (DATA payloads; any other known frame after the
 * head errors it, RFC 9114 §4.4; unknown and reserved frames are skipped).
 */
async function readAnswer(
  readable: ReadableStream<Uint8Array>,
  decode: SectionDecoder,
): Promise<Pick<H3Tunnel, "status" | "headers" | "readable">> {
  const reader = readable.getReader();
  const frames = new FrameDecoder({ maxFrameSize: 1 << 20 });
  const early: Uint8Array[] = [];
  let fields: Array<[string, string]> | null = null;
  while (fields === null) {
    const r = await reader.read();
    if (r.done) throw new Error("the stream ended before the answer's head");
    frames.push(r.value);
    for (let ev = frames.next(); ev !== NEED_MORE; ev = frames.next()) {
      if (ev.kind === "data") {
        if (fields === null) throw new Error("DATA before the answer's head");
        early.push(ev.chunk.slice());
      } else if (ev.kind === "frame" && ev.type === FrameType.HEADERS) {
        if (fields !== null) throw new Error("HEADERS after the answer's head");
        fields = decode(ev.payload);
      }
    }
  }
  const status = Number(fields.find(([n]) => n === ":status")?.[1] ?? 0);
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      for (const chunk of early) c.enqueue(chunk);
    },
    async pull(c) {
      for (;;) {
        const r = await reader.read();
        if (r.done) return c.close();
        frames.push(r.value);
        let queued = false;
        for (let ev = frames.next(); ev !== NEED_MORE; ev = frames.next()) {
          if (ev.kind === "data" && ev.chunk.length > 0) {
            c.enqueue(ev.chunk.slice());
            queued = true;
          } else if (ev.kind === "frame" && ev.type === FrameType.HEADERS) {
            throw new Error("HEADERS on a tunnel after its answer (RFC 9114 §4.4)");
          }
        }
        if (queued) return;
      }
    },
    cancel: (reason) => reader.cancel(reason),
  }, { highWaterMark: 0 });
  return { status, headers: fields.filter(([n]) => !n.startsWith(":")), readable: body };
}
