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
 * @module
 */

/** A read of the socket: bytes, or the end of the stream. */
export type ReadResult = ReadableStreamReadResult<Uint8Array>;

/** An open HTTP/1.1 connection; see the module docs. */
export class H1Connection {
  /** Exchanges it has carried (a new connection carries its first one with `uses` 0). */
  uses = 0;
  readonly #conn: Deno.Conn;
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  /** The read left pending while idle, handed to the next exchange as its first read. */
  #pending: Promise<ReadResult> | null = null;
  #idleTimer: ReturnType<typeof setTimeout> | undefined;
  #parked = false;
  #closed = false;

  constructor(conn: Deno.Conn) {
    this.#conn = conn;
    this.#reader = conn.readable.getReader();
    this.#writer = conn.writable.getWriter();
  }

  /** Whether it has been closed (by us, or found dead while idle). */
  get closed(): boolean {
    return this.#closed;
  }

  /** The next bytes from the backend (`done` at the end of its stream). */
  read(): Promise<ReadResult> {
    const p = this.#pending;
    if (p !== null) {
      this.#pending = null;
      return p;
    }
    return this.#reader.read();
  }

  /** Writes `bytes` whole; resolves once the socket took them (backpressure). */
  write(bytes: Uint8Array): Promise<void> {
    return this.#writer.write(bytes);
  }

  /**
   * Parks the connection idle: a read is left pending (anything it returns
   * calls `dead`), and `dead` is called after `idleMs` as well.
   */
  park(idleMs: number, dead: (why: string) => void): void {
    this.#parked = true;
    const read = this.read();
    this.#pending = read;
    read.then(
      (r) => {
        if (this.#parked && this.#pending === read) {
          dead(r.done ? "closed by the backend while idle" : "bytes outside a response while idle");
        }
      },
      () => {
        if (this.#parked && this.#pending === read) dead("read failed while idle");
      },
    );
    this.#idleTimer = setTimeout(() => dead(`idle for ${idleMs} ms`), idleMs);
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
    this.#reader.cancel().catch(() => {});
    this.#writer.abort().catch(() => {});
    try {
      this.#conn.close();
    } catch { /* closed already */ }
  }
}
