/**
 * One HTTP/1.1 connection to a backend: the socket's byte streams, held for
 * the connection's life (one reader, one writer), and its idle watch. A
 * connection carries one exchange at a time. While it is idle in its pool a
 * read is kept pending on it: whatever that read returns (bytes the backend
 * sent outside any response, or the end of the stream) makes the connection
 * unfit, and it is closed at once, before any request could be written on it.
 * A connection idle for its pool's idle time is closed too, before the
 * backend's own keep-alive timeout can race a new request.
 *
 * The socket is read into one buffer per connection, reused by every read:
 * the bytes a read returns are valid until the next read, so whoever keeps
 * them copies them first (the exchange copies body bytes into the reader's
 * buffer or its body's queue, `byte_body.ts`). Reads and writes go to the
 * socket's own `read` and `write`, not its web streams: a stream of the
 * socket's default reader allocated a fresh 64 KiB buffer per read, and the
 * BYOB reader and the stream writer cost a promise chain per call (about 4%
 * of the CPU of a request, measured).
 *
 * @module
 */

import { writeAll } from "../../shared/bytes.ts";
import type { UpstreamCloseReason } from "./connection_stats.ts";

/** A read of the socket: bytes, or the end of the stream. */
export type ReadResult = ReadableStreamReadResult<Uint8Array>;

/** Size of a connection's read buffer (bytes). */
export const H1_READ_BUFFER_BYTES = 64 * 1024;

/** An open HTTP/1.1 connection; see the module docs. */
export class H1Connection {
  /** Exchanges it has carried (a new connection carries its first one with `uses` 0). */
  uses = 0;
  readonly #conn: Deno.Conn;
  /** The read buffer, reused by every read. */
  readonly #buffer = new Uint8Array(H1_READ_BUFFER_BYTES);
  /** The read left pending while idle, handed to the next exchange as its first read. */
  #pending: Promise<ReadResult> | null = null;
  #idleTimer: ReturnType<typeof setTimeout> | undefined;
  #parked = false;
  #closed = false;

  constructor(conn: Deno.Conn) {
    this.#conn = conn;
  }

  /** Whether it has been closed (by us, or found dead while idle). */
  get closed(): boolean {
    return this.#closed;
  }

  /**
   * The next bytes from the backend (`done` at the end of its stream): a
   * view into the connection's read buffer, valid until the next read.
   */
  read(): Promise<ReadResult> {
    const p = this.#pending;
    if (p !== null) {
      this.#pending = null;
      return p;
    }
    return this.#readSocket();
  }

  async #readSocket(): Promise<ReadResult> {
    const n = await this.#conn.read(this.#buffer);
    return n === null
      ? { done: true, value: undefined }
      : { done: false, value: this.#buffer.subarray(0, n) };
  }

  /** Writes `bytes` whole; resolves once the socket took them (backpressure). */
  write(bytes: Uint8Array): Promise<void> {
    return writeAll(this.#conn, bytes);
  }

  /**
   * Parks the connection idle: a read is left pending (anything it returns
   * calls `dead` with why), and `dead` is called after `idleMs` as well.
   */
  park(idleMs: number, dead: (why: UpstreamCloseReason) => void): void {
    this.#parked = true;
    const read = this.read();
    this.#pending = read;
    read.then(
      (r) => {
        if (this.#parked && this.#pending === read) {
          // Closed by the backend while idle, or bytes outside any response.
          dead(r.done ? "peer_closed" : "protocol_error");
        }
      },
      () => {
        if (this.#parked && this.#pending === read) dead("error");
      },
    );
    this.#idleTimer = setTimeout(() => dead("idle"), idleMs);
  }

  /** Takes the connection out of idleness for an exchange. */
  unpark(): void {
    this.#parked = false;
    clearTimeout(this.#idleTimer);
    this.#idleTimer = undefined;
  }

  /** Closes the socket (idempotent); pending reads and writes fail. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.unpark();
    this.#pending?.catch(() => {});
    this.#pending = null;
    try {
      this.#conn.close();
    } catch { /* closed already */ }
  }
}
