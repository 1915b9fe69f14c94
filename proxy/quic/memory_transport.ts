/**
 * An in-memory {@link QuicConnection} pair for unit tests of the HTTP/3 layer:
 * streams are byte pipes, ids follow QUIC's numbering (RFC 9000 §2.1), and
 * closing either side settles both sides' `closed`.
 *
 * @module
 */

import type {
  BidiStream,
  CloseInfo,
  PeerAddr,
  QuicConnection,
  ReceiveStream,
  SendStream,
} from "./transport.ts";

function pipe(id: bigint): { send: SendStream; receive: ReceiveStream } {
  // Buffer like a QUIC stream's flow-control window: writes do not wait for the reader.
  const t = new TransformStream<Uint8Array, Uint8Array>(
    {},
    { highWaterMark: 256 },
    { highWaterMark: 256 },
  );
  return {
    send: Object.assign(t.writable, { id }) as SendStream,
    receive: Object.assign(t.readable, { id }) as ReceiveStream,
  };
}

/** One end of an in-memory connection. */
export class MemoryConnection implements QuicConnection {
  readonly remoteAddr: PeerAddr;
  readonly incomingBidirectionalStreams: ReadableStream<BidiStream>;
  readonly incomingUnidirectionalStreams: ReadableStream<ReceiveStream>;
  readonly closed: Promise<CloseInfo>;
  /** Set by {@link memoryConnectionPair}. */
  peer!: MemoryConnection;
  #bidiIn!: ReadableStreamDefaultController<BidiStream>;
  #uniIn!: ReadableStreamDefaultController<ReceiveStream>;
  #resolveClosed!: (info: CloseInfo) => void;
  #nextBidi: bigint;
  #nextUni: bigint;
  #isClosed = false;
  /** The close info, once closed. */
  closeInfo: CloseInfo | null = null;

  constructor(isClient: boolean, remote: PeerAddr) {
    this.remoteAddr = remote;
    this.#nextBidi = isClient ? 0n : 1n;
    this.#nextUni = isClient ? 2n : 3n;
    this.incomingBidirectionalStreams = new ReadableStream({ start: (c) => (this.#bidiIn = c) });
    this.incomingUnidirectionalStreams = new ReadableStream({ start: (c) => (this.#uniIn = c) });
    this.closed = new Promise((resolve) => (this.#resolveClosed = resolve));
  }

  /** Opens a bidirectional stream to the peer. */
  createBidirectionalStream(): Promise<BidiStream> {
    if (this.#isClosed) return Promise.reject(new Error("connection closed"));
    const id = this.#nextBidi;
    this.#nextBidi += 4n;
    const up = pipe(id);
    const down = pipe(id);
    this.peer.#bidiIn.enqueue({ readable: up.receive, writable: down.send });
    return Promise.resolve({ readable: down.receive, writable: up.send });
  }

  /** Opens a unidirectional stream to the peer. */
  createUnidirectionalStream(): Promise<SendStream> {
    if (this.#isClosed) return Promise.reject(new Error("connection closed"));
    const id = this.#nextUni;
    this.#nextUni += 4n;
    const p = pipe(id);
    this.peer.#uniIn.enqueue(p.receive);
    return Promise.resolve(p.send);
  }

  /** Closes both ends with the same code and reason. */
  close(info: CloseInfo = { closeCode: 0, reason: "" }): void {
    this.#shut(info);
    this.peer.#shut(info);
  }

  #shut(info: CloseInfo): void {
    if (this.#isClosed) return;
    this.#isClosed = true;
    this.closeInfo = info;
    try {
      this.#bidiIn.close();
      this.#uniIn.close();
    } catch {
      // already closed
    }
    this.#resolveClosed(info);
  }
}

/**
 * A connected client/server pair.
 *
 * @example
 * ```ts
 * import { type ConnectionOptions, H3Connection } from "../server/mod.ts";
 * declare const opts: ConnectionOptions;
 *
 * const { client, server } = memoryConnectionPair();
 * const h3 = new H3Connection(server, opts);
 * h3.serve();
 * const s = await client.createBidirectionalStream();
 * ```
 */
export function memoryConnectionPair(): { client: MemoryConnection; server: MemoryConnection } {
  const client = new MemoryConnection(true, { hostname: "127.0.0.1", port: 4433 });
  const server = new MemoryConnection(false, { hostname: "127.0.0.1", port: 50000 });
  client.peer = server;
  server.peer = client;
  return { client, server };
}
