/**
 * A response body as a readable byte stream fed from buffers its producer
 * reuses: the HTTP/2 session's read buffer (`h2_response_body.ts`), the
 * HTTP/1.1 connection's (`h1_exchange.ts`). Bytes given to {@link ByteBody.push}
 * are copied at once, so the producer may overwrite its buffer as soon as
 * `push` returns:
 *
 * - into the reader's own buffer when it reads with a BYOB reader and a read
 *   is waiting (the HTTP/3 response writer does: `server/body_io.ts` reads
 *   into one buffer per response, with room for the DATA frame header). The
 *   read is answered once the producer's turn is over (a microtask), so the
 *   pieces of one socket read (HTTP/2 DATA frames of 16 KiB, chunks) fill
 *   it together: one HTTP/3 DATA frame and one QUIC write for them all;
 * - else into the body's {@link ByteQueue}, one ring buffer per body that
 *   grows by doubling to what the producer's flow control lets queue (a
 *   stream window; one socket read), and is reused for the body's life.
 *
 * So a long download allocates nothing per chunk on the way to a BYOB reader
 * (a 1 GiB body used to be 65,536 garbage buffers of 16 KiB). A reader with
 * a default reader (the TCP fallback's `Deno.serve`, tests) gets a fresh
 * copy per read, of up to {@link COPY_CHUNK_BYTES}: the chunk is its own.
 *
 * @module
 */

/** The most a default reader gets per read (bytes). */
export const COPY_CHUNK_BYTES = 64 * 1024;
/** First capacity of a body's queue (bytes): one HTTP/2 DATA frame of the default size. */
const QUEUE_START_BYTES = 16 * 1024;

/** A ring buffer of bytes that grows by doubling and is reused as it drains. */
export class ByteQueue {
  #buf = new Uint8Array(0);
  #head = 0;
  #length = 0;

  /** Bytes queued. */
  get length(): number {
    return this.#length;
  }

  /** Bytes the queue can hold before it grows (tests). */
  get capacity(): number {
    return this.#buf.length;
  }

  /** Copies `src` in (the caller may reuse `src` at once). */
  write(src: Uint8Array): void {
    const need = this.#length + src.length;
    if (need > this.#buf.length) this.#grow(need);
    const cap = this.#buf.length;
    const tail = (this.#head + this.#length) % cap;
    const first = Math.min(src.length, cap - tail);
    this.#buf.set(first === src.length ? src : src.subarray(0, first), tail);
    if (first < src.length) this.#buf.set(src.subarray(first), 0);
    this.#length = need;
  }

  /** Moves up to `dst.length` bytes into `dst`; returns how many. */
  readInto(dst: Uint8Array): number {
    const n = Math.min(dst.length, this.#length);
    const cap = this.#buf.length;
    const first = Math.min(n, cap - this.#head);
    dst.set(this.#buf.subarray(this.#head, this.#head + first), 0);
    if (first < n) dst.set(this.#buf.subarray(0, n - first), first);
    this.#head = (this.#head + n) % cap;
    this.#length -= n;
    if (this.#length === 0) this.#head = 0;
    return n;
  }

  /** Up to `max` bytes, moved out into a new buffer. */
  take(max: number): Uint8Array<ArrayBuffer> {
    const out = new Uint8Array(Math.min(max, this.#length));
    this.readInto(out);
    return out;
  }

  /** Drops everything queued and the buffer with it. */
  clear(): void {
    this.#buf = new Uint8Array(0);
    this.#head = 0;
    this.#length = 0;
  }

  #grow(need: number): void {
    let cap = Math.max(this.#buf.length, QUEUE_START_BYTES);
    while (cap < need) cap *= 2;
    const next = new Uint8Array(cap);
    const n = this.#length;
    this.readInto(next);
    this.#buf = next;
    this.#head = 0;
    this.#length = n;
  }
}

/** What a {@link ByteBody} asks of its producer. */
export interface ByteBodySource {
  /**
   * A read waits and nothing is queued: produce (the HTTP/1.1 exchange reads
   * its socket until it pushed something or ended the body). Absent: the
   * producer pushes on its own (HTTP/2).
   */
  pull?(): Promise<void> | void;
  /** `n` bytes were handed to the reader (HTTP/2: the backend gets its credit back). */
  taken?(n: number): void;
  /** The reader will take nothing more; `queued` bytes it had not read were dropped. */
  cancel(queued: number): void;
}

/** A body stream fed by `push`; see the module docs. */
export class ByteBody {
  /** The body as the reader sees it: a byte stream (BYOB readers welcome). */
  readonly stream: ReadableStream<Uint8Array>;
  readonly #source: ByteBodySource;
  readonly #queue = new ByteQueue();
  #controller!: ReadableByteStreamController;
  /** A read waits on the producer (pull found nothing queued). */
  #wanted = false;
  /** Bytes copied into the waiting BYOB read's buffer, not yet handed over (`respond`). */
  #filled = 0;
  /** A microtask will hand over what {@link #filled} holds. */
  #handOverQueued = false;
  /** The producer's body is complete: the stream closes once the queue has drained. */
  #ending = false;
  /** Closed, errored or cancelled: nothing more is queued or delivered. */
  #over = false;

  constructor(source: ByteBodySource) {
    this.#source = source;
    this.stream = new ReadableStream({
      type: "bytes",
      start: (c) => {
        this.#controller = c;
      },
      pull: () => this.#pull(),
      cancel: () => {
        if (this.#over) return;
        this.#over = true;
        this.#filled = 0;
        const queued = this.#queue.length;
        this.#queue.clear();
        this.#source.cancel(queued);
      },
    });
  }

  /** Bytes queued, not yet read. */
  get queued(): number {
    return this.#queue.length;
  }

  /** Whether a read waits on the producer and has got nothing yet. */
  get waiting(): boolean {
    return this.#wanted && this.#filled === 0;
  }

  /** Whether the body is over (closed, errored or cancelled). */
  get over(): boolean {
    return this.#over;
  }

  /** Body bytes, copied before this returns (into the waiting reader's buffer, or queued). */
  push(data: Uint8Array): void {
    if (this.#over || data.length === 0) return;
    if (!this.#wanted || this.#queue.length > 0) return this.#queue.write(data);
    const req = this.#controller.byobRequest;
    const view = req?.view;
    if (req == null || view == null) {
      this.#wanted = false;
      const n = Math.min(data.length, COPY_CHUNK_BYTES);
      if (n < data.length) this.#queue.write(data.subarray(n));
      this.#source.taken?.(n);
      return this.#controller.enqueue(data.slice(0, n));
    }
    const room = view.byteLength - this.#filled;
    const n = Math.min(data.length, room);
    new Uint8Array(view.buffer, view.byteOffset + this.#filled, n).set(data.subarray(0, n));
    this.#filled += n;
    if (n < data.length) this.#queue.write(data.subarray(n));
    this.#source.taken?.(n);
    if (n === room) return this.#handOver();
    if (!this.#handOverQueued) {
      this.#handOverQueued = true;
      queueMicrotask(() => {
        this.#handOverQueued = false;
        if (this.#filled > 0 && !this.#over) this.#handOver();
      });
    }
  }

  /** Answers the waiting BYOB read with what was copied into it. */
  #handOver(): void {
    const n = this.#filled;
    this.#filled = 0;
    this.#wanted = false;
    // `respond` may call `pull` again at once: the state is settled before.
    this.#controller.byobRequest!.respond(n);
  }

  /** The producer's body is complete: the reader gets the end once it has read the rest. */
  end(): void {
    if (this.#over) return;
    this.#ending = true;
    if (this.#queue.length === 0) this.#close();
  }

  /** The body broke: the reader gets `err` (what it had not read is dropped). */
  error(err: Error): void {
    if (this.#over) return;
    this.#over = true;
    this.#queue.clear();
    try {
      this.#controller.error(err);
    } catch { /* closed */ }
  }

  #pull(): Promise<void> | void {
    if (this.#over || this.#filled > 0) return; // a read being filled is answered by its microtask
    if (this.#queue.length > 0) return this.#deliverQueued();
    if (this.#ending) return this.#close();
    this.#wanted = true;
    return this.#source.pull?.();
  }

  /** Hands queued bytes to the waiting read: into its buffer, or as a copy. */
  #deliverQueued(): void {
    const c = this.#controller;
    const req = c.byobRequest;
    const view = req?.view;
    let n: number;
    if (req == null || view == null) {
      const chunk = this.#queue.take(COPY_CHUNK_BYTES);
      n = chunk.length;
      this.#source.taken?.(n);
      c.enqueue(chunk);
    } else {
      n = this.#queue.readInto(new Uint8Array(view.buffer, view.byteOffset, view.byteLength));
      this.#source.taken?.(n);
      req.respond(n);
    }
    if (this.#ending && this.#queue.length === 0) this.#close();
  }

  #close(): void {
    if (this.#over) return;
    if (this.#filled > 0) {
      this.#handOver();
      if (this.#over) return; // closed by the `pull` that answer called
    }
    this.#over = true;
    this.#wanted = false;
    const c = this.#controller;
    c.close();
    // A BYOB read still waiting gets the end (the spec's way to release it).
    c.byobRequest?.respond(0);
  }
}
