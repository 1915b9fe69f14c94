/**
 * A request body as the upstream transports send it: read into one buffer
 * per exchange, reused by every read, instead of taking whatever buffer the
 * body's producer made for each chunk. A byte stream (the HTTP/3 server's
 * request body, `server/request_body.ts`; `Deno.serve`'s) is read with a
 * BYOB reader straight into that buffer: its producer copies into it and can
 * read its own input into one buffer again, so a long upload allocates
 * nothing per chunk on either side. Any other stream is read with the
 * default reader: its chunks are handed on as they are, or copied into the
 * buffer when the caller wants room around them for framing.
 *
 * The bytes {@link RequestBodyReader.next} returns stay valid until the next
 * call: the caller sends them (the HTTP/1.1 socket took them, the HTTP/2
 * codec copied them into its output) before it asks for more.
 *
 * @example
 * ```ts
 * declare const body: ReadableStream<Uint8Array>;
 * declare function send(bytes: Uint8Array): Promise<void>;
 * const reader = new RequestBodyReader(body);
 * for (let chunk = await reader.next(); chunk !== null; chunk = await reader.next()) {
 *   await send(chunk); // before the next read: the buffer is read into again
 * }
 * ```
 *
 * @module
 */

/** The most bytes one read returns (the size of the reused buffer's payload). */
export const REQUEST_READ_BYTES = 64 * 1024;

/** Free bytes wanted around each chunk in its buffer, for framing written in place. */
export interface FramingRoom {
  /** Bytes before the chunk. */
  readonly head: number;
  /** Bytes after it. */
  readonly tail: number;
}

/** No room: the chunk alone. */
const NO_ROOM: FramingRoom = { head: 0, tail: 0 };

/** Reads a request body into one reused buffer; see the module docs. */
export class RequestBodyReader {
  readonly #byob: ReadableStreamBYOBReader | null;
  readonly #default: ReadableStreamDefaultReader<Uint8Array> | null;
  readonly #room: FramingRoom;
  /** The buffer, between reads (null while a read holds it, or before the first). */
  #buffer: ArrayBuffer | null = null;
  /** What is left of a default reader's chunk larger than the buffer. */
  #rest: Uint8Array | null = null;

  /** Reads `body` (which it locks), with `room` kept free around each chunk. */
  constructor(body: ReadableStream<Uint8Array>, room: FramingRoom = NO_ROOM) {
    this.#room = room;
    let byob: ReadableStreamBYOBReader | null = null;
    try {
      byob = body.getReader({ mode: "byob" });
    } catch {
      // not a byte stream
    }
    this.#byob = byob;
    this.#default = byob === null ? body.getReader() : null;
  }

  /**
   * The next bytes of the body (never empty), or null at its end: valid
   * until the next call, with {@link FramingRoom} free around them in their
   * `buffer` when room was asked for.
   */
  next(): Promise<Uint8Array | null> {
    return this.#byob !== null ? this.#readInto(this.#byob) : this.#readChunk(this.#default!);
  }

  /** Cancels the body (its producer stops); pending reads end. */
  cancel(reason?: unknown): Promise<void> {
    return (this.#byob ?? this.#default!).cancel(reason);
  }

  /** Unlocks the body (throws while a read is pending). */
  releaseLock(): void {
    (this.#byob ?? this.#default!).releaseLock();
  }

  async #readInto(reader: ReadableStreamBYOBReader): Promise<Uint8Array | null> {
    const { head } = this.#room;
    for (;;) {
      // A read that failed kept the buffer: a new one (the body is over anyway).
      const buffer = this.#buffer ?? this.#newBuffer();
      this.#buffer = null;
      const r = await reader.read(new Uint8Array(buffer, head, REQUEST_READ_BYTES));
      if (r.value !== undefined) this.#buffer = r.value.buffer as ArrayBuffer;
      if (r.done) return null;
      if (r.value.length > 0) return r.value;
    }
  }

  async #readChunk(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<Uint8Array | null> {
    let chunk = this.#rest;
    this.#rest = null;
    while (chunk === null || chunk.length === 0) {
      const r = await reader.read();
      if (r.done) return null;
      chunk = r.value;
    }
    const { head, tail } = this.#room;
    // The chunk itself when no room is wanted: nothing copied.
    if (head === 0 && tail === 0) return chunk;
    if (chunk.length > REQUEST_READ_BYTES) {
      this.#rest = chunk.subarray(REQUEST_READ_BYTES);
      chunk = chunk.subarray(0, REQUEST_READ_BYTES);
    }
    const buffer = this.#buffer ?? this.#newBuffer();
    this.#buffer = buffer;
    const view = new Uint8Array(buffer, head, chunk.length);
    view.set(chunk);
    return view;
  }

  #newBuffer(): ArrayBuffer {
    return new ArrayBuffer(this.#room.head + REQUEST_READ_BYTES + this.#room.tail);
  }
}
