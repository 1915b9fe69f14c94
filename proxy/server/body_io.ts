/**
 * Body I/O of a request stream: reading the QUIC stream in buffers of our
 * size, the request body as a pull-driven stream, and the response body as
 * DATA frames written with backpressure, cut (and marked malformed) when it
 * breaks, stalls or the client goes away.
 *
 * @example
 * ```ts
 * declare const stream: { readable: ReadableStream<Uint8Array> };
 * const reader = chunkReader(stream.readable);
 * const first = await reader.read();
 * ```
 *
 * @module
 */

import { type IdleWatch, idleWatch } from "../../shared/deadline.ts";
import { FrameType, varintLength, writeVarint } from "../h3/mod.ts";

/** Size of the first read of a request stream: room for a typical HEADERS frame. */
const FIRST_READ_BYTES = 2048;
/** Largest read (request bodies arriving fast). */
export const BODY_READ_BYTES = 64 * 1024;

/** The reads a request stream is consumed with. */
export interface ChunkReader {
  /** The next chunk of the stream. */
  read(): Promise<ReadableStreamReadResult<Uint8Array>>;
  /** Stops receiving (STOP_SENDING). */
  cancel(reason?: unknown): Promise<void>;
  /**
   * Nothing refers to the last chunk's bytes any more (no view of it is
   * kept anywhere): the next read goes into its buffer instead of a new
   * one. Absent on streams read with the default reader.
   */
  recycle?(): void;
}

/**
 * Reads a request stream into buffers of our size. The runtime's default
 * reader of a QUIC stream allocates 64 KiB for every read, so each GET (a few
 * dozen bytes) cost 64 KiB of short-lived external memory, which drives V8's
 * garbage collector. Reads start at 2 KiB and grow (×4, up to 64 KiB) only
 * while each one comes back full, so a GET's reads (its HEADERS, then its
 * FIN) stay small and an upload soon reads in large pieces. Each read takes
 * a new buffer unless the caller gave the last one back (`recycle`): an
 * upload whose body is copied out (`request_body.ts`) reads into one buffer
 * throughout. A buffer handed on by transfer (detached) is never reused.
 * Streams that are not byte streams (the in-memory test transport) get the
 * default reader.
 */
export function chunkReader(readable: ReadableStream<Uint8Array>): ChunkReader {
  let byob: ReadableStreamBYOBReader;
  try {
    byob = readable.getReader({ mode: "byob" });
  } catch {
    return readable.getReader();
  }
  let size = FIRST_READ_BYTES;
  /** The buffer of the last chunk read (null once recycled or while a read holds it). */
  let last: ArrayBuffer | null = null;
  /** A buffer given back by `recycle`, read into next. */
  let spare: ArrayBuffer | null = null;
  return {
    async read() {
      // A spare that was detached meanwhile (handed on by transfer) has no bytes left.
      const buffer = spare !== null && spare.byteLength === size ? spare : new ArrayBuffer(size);
      spare = null;
      last = null;
      const r = await byob.read(new Uint8Array(buffer));
      if (r.value?.length === size) size = Math.min(size * 4, BODY_READ_BYTES);
      if (r.done || r.value === undefined) return { done: true, value: undefined };
      last = r.value.buffer as ArrayBuffer;
      return { done: false, value: r.value };
    },
    recycle() {
      spare = last;
      last = null;
    },
    cancel: (reason) => byob.cancel(reason),
  };
}

/** Thrown inside a request body stream when the body exceeds the configured limit. */
export class RequestBodyTooLarge extends Error {
  constructor() {
    super("request body exceeds the limit");
    this.name = "RequestBodyTooLarge";
  }
}

/** No next part of a request (its HEADERS, or more of its body) arrived in time: 408. */
export class RequestIdleTimeout extends Error {
  /** Creates the error; `ms` is the idle timeout that passed. */
  constructor(ms: number) {
    super(`no part of the request arrived within ${ms} ms`);
    this.name = "RequestIdleTimeout";
  }
}

/** The backend's response body stopped arriving for longer than the idle timeout. */
export class ResponseIdleTimeout extends Error {
  /** Creates the error; `ms` is the idle timeout that passed. */
  constructor(ms: number) {
    super(`the response body stalled for ${ms} ms`);
    this.name = "ResponseIdleTimeout";
  }
}

/** The client accepted none of the response body for longer than the idle timeout. */
export class ResponseWriteStall extends Error {
  /** Creates the error; `ms` is the idle timeout that passed. */
  constructor(ms: number) {
    super(`the client accepted no response data for ${ms} ms`);
    this.name = "ResponseWriteStall";
  }
}

/** Room kept in front of each read for the DATA frame header (type + length varints). */
const FRAME_HEADER_ROOM = 8;
/**
 * Size of the buffer a response body is read into: 64 KiB of payload behind
 * the header's room, so one 64 KiB read of the backend's socket (the
 * HTTP/1.1 client's) fits one DATA frame whole.
 */
const BODY_BUFFER_BYTES = 64 * 1024 + FRAME_HEADER_ROOM;

/** Reads a response body as ready-to-send DATA frames. */
interface DataFrameReader {
  /** The next DATA frame (header + payload), or `null` at the end. */
  next(): Promise<Uint8Array | null>;
  /** The payload length of the last frame `next` gave. */
  payload: number;
  /** Tells the reader the last frame has been written (its buffer may be reused). */
  written(): void;
  cancel(reason: unknown): void;
}

/**
 * The DATA frame whose `length` bytes of payload sit at
 * {@link FRAME_HEADER_ROOM} in `buffer`: its header is written in place just
 * before them (nothing allocated but the view).
 */
function dataFrameAround(buffer: ArrayBuffer, length: number): Uint8Array {
  const headerLength = varintLength(FrameType.DATA) + varintLength(length);
  const frame = new Uint8Array(buffer, FRAME_HEADER_ROOM - headerLength, headerLength + length);
  writeVarint(frame, writeVarint(frame, 0, FrameType.DATA), length);
  return frame;
}

/**
 * Turns a body into DATA frames. A byte stream is read with a BYOB reader
 * into one buffer per response, reused after each write, with room in front
 * for the frame header: no allocation and no copy per chunk, which keeps a
 * long download's memory flat. Other streams get the default reader and a
 * copy behind the header into such a buffer.
 */
function dataFrameReader(body: ReadableStream<Uint8Array>): DataFrameReader {
  let byob: ReadableStreamBYOBReader | undefined;
  try {
    byob = body.getReader({ mode: "byob" });
  } catch {
    // not a byte stream
  }
  if (byob === undefined) return copyingFrameReader(body.getReader());
  const reader = byob;
  let buffer: ArrayBuffer | null = new ArrayBuffer(BODY_BUFFER_BYTES);
  let pending: ArrayBuffer | null = null;
  return {
    payload: 0,
    async next() {
      for (;;) {
        // A buffer still held by an unfinished write is never reused.
        const buf = buffer ?? new ArrayBuffer(BODY_BUFFER_BYTES);
        buffer = null;
        const r = await reader.read(
          new Uint8Array(buf, FRAME_HEADER_ROOM, BODY_BUFFER_BYTES - FRAME_HEADER_ROOM),
        );
        if (r.done || r.value === undefined) return null;
        const payload = r.value;
        if (payload.length === 0) {
          buffer = payload.buffer as ArrayBuffer;
          continue;
        }
        const frame = dataFrameAround(payload.buffer as ArrayBuffer, payload.length);
        pending = payload.buffer as ArrayBuffer;
        this.payload = payload.length;
        return frame;
      }
    },
    written() {
      buffer = pending;
      pending = null;
    },
    cancel: (reason) => void reader.cancel(reason).catch(() => {}),
  };
}

/**
 * DATA frames from a stream that is not a byte stream (the upstream
 * transports' bodies): each chunk is copied behind the frame header into one
 * buffer per response, reused after each write, as the BYOB path reads into
 * it. A copy per chunk is needed either way (the header goes in front); a
 * fresh buffer per chunk made a 1 GiB download 1 GiB of garbage. A chunk
 * larger than the buffer goes out in several frames.
 */
function copyingFrameReader(reader: ReadableStreamDefaultReader<Uint8Array>): DataFrameReader {
  let buffer: Uint8Array<ArrayBuffer> | null = new Uint8Array(BODY_BUFFER_BYTES);
  let pending: Uint8Array<ArrayBuffer> | null = null;
  let rest: Uint8Array | null = null;
  const room = BODY_BUFFER_BYTES - FRAME_HEADER_ROOM;
  return {
    payload: 0,
    async next() {
      let chunk = rest;
      rest = null;
      while (chunk === null || chunk.length === 0) {
        const r = await reader.read();
        if (r.done) return null;
        chunk = r.value;
      }
      if (chunk.length > room) {
        rest = chunk.subarray(room);
        chunk = chunk.subarray(0, room);
      }
      // A buffer still held by an unfinished write is never reused.
      const buf = buffer ?? new Uint8Array(BODY_BUFFER_BYTES);
      buffer = null;
      buf.set(chunk, FRAME_HEADER_ROOM);
      pending = buf;
      this.payload = chunk.length;
      return dataFrameAround(buf.buffer, chunk.length);
    },
    written() {
      buffer = pending;
      pending = null;
    },
    cancel: (reason) => void reader.cancel(reason).catch(() => {}),
  };
}

/** How a streamed response body ended. */
export type BodyOutcome =
  /** Complete: the caller closes the stream cleanly. */
  | { kind: "complete"; bytes: number }
  /** The body broke or stalled: the caller must end the response as malformed. */
  | { kind: "broken"; bytes: number; error: unknown }
  /**
   * The client took none of it for `idleMs` (flow control): the source is
   * cancelled (its backend stream reset); a write is stuck, so nothing more
   * can be sent on the stream and the caller must drop it.
   */
  | { kind: "stalled"; bytes: number; error: ResponseWriteStall };

/** What {@link pipeBody} tells while it waits on the source (see `cancel_probe.ts`). */
export interface SourceWait {
  /** Writing to the client: not waiting on the source. */
  pause(): void;
  /** Waiting on the source again. */
  resume(): void;
}

/**
 * The stall bound of one body's pipe: one deadline for the body, re-armed at
 * each wait (for the next chunk, or for a write to be taken), instead of a
 * deadline per wait. A deadline per chunk cost a promise, its callbacks and
 * an entry in the deadline sweeper (whose timer stopped and started again
 * between chunks): about half the garbage of a long download's pipe. A read
 * that stalls is ended by cancelling the source (`onReadStall`), which
 * settles it; only a write, which nothing else can end, is wrapped.
 */
class StallBound {
  readonly #watch: IdleWatch | null = null;
  #reading = true;
  #rejectWrite: ((err: Error) => void) | null = null;
  /** Why the pipe stalled, once it did. */
  error: ResponseIdleTimeout | ResponseWriteStall | null = null;

  /** `onReadStall` ends a pending read (cancels the source) when the source stalled. */
  constructor(idleMs: number, onReadStall: (err: ResponseIdleTimeout) => void) {
    if (!Number.isFinite(idleMs)) return;
    this.#watch = idleWatch(idleMs, () => {
      if (this.#reading) {
        const err = new ResponseIdleTimeout(idleMs);
        this.error = err;
        onReadStall(err);
      } else {
        const err = new ResponseWriteStall(idleMs);
        this.error = err;
        this.#rejectWrite?.(err);
      }
    });
  }

  /** Waiting for the next chunk: `next` itself (a stall ends it through `onReadStall`). */
  read<T>(next: Promise<T>): Promise<T> {
    this.#reading = true;
    this.#watch?.touch();
    return next;
  }

  /** `write`, or a {@link ResponseWriteStall} once it took longer than the bound. */
  write(write: Promise<void>): Promise<void> {
    this.#reading = false;
    if (this.#watch === null) return write;
    this.#watch.touch();
    return new Promise<void>((resolve, reject) => {
      this.#rejectWrite = reject;
      write.then(resolve, reject);
    });
  }

  /** The pipe is over: no more deadline. */
  stop(): void {
    this.#watch?.cancel();
    this.#rejectWrite = null;
  }
}

/**
 * Writes a streamed body as DATA frames, each after the previous one was
 * taken by the QUIC stream (backpressure). Stops at once when `signal`
 * aborts (the client or the connection went away: the write side is dead,
 * so this rejects), and reports the body as broken when the source fails or
 * sends nothing for `idleMs`: the caller then marks the response malformed
 * rather than letting a truncated body look complete. A write the client
 * does not take within `idleMs` (it grants no flow-control credit) ends it
 * as stalled and cancels the source, so that a client that never reads
 * holds neither a backend stream nor its buffers past that bound.
 * `waiting`, if given, is resumed while the next chunk is awaited from the
 * source and paused while writing.
 */
export async function pipeBody(
  writer: WritableStreamDefaultWriter<Uint8Array>,
  body: ReadableStream<Uint8Array>,
  signal: AbortSignal,
  idleMs: number,
  waiting?: SourceWait,
): Promise<BodyOutcome> {
  const reader = dataFrameReader(body);
  const bound = new StallBound(idleMs, (err) => reader.cancel(err));
  let bytes = 0;
  // An abort cancels the source, which ends a pending read: checked below so
  // that a cancelled body never reads as complete.
  const onAbort = () => reader.cancel(signal.reason);
  signal.addEventListener("abort", onAbort, { once: true });
  try {
    for (;;) {
      let frame: Uint8Array | null;
      waiting?.resume();
      try {
        frame = await bound.read(reader.next());
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        reader.cancel(error);
        return { kind: "broken", bytes, error: bound.error ?? error };
      } finally {
        waiting?.pause();
      }
      if (signal.aborted) throw signal.reason;
      // The source stalled: the read was ended by cancelling it.
      if (bound.error !== null) return { kind: "broken", bytes, error: bound.error };
      if (frame === null) return { kind: "complete", bytes };
      try {
        await bound.write(writer.write(frame));
      } catch (error) {
        if (!(error instanceof ResponseWriteStall) || signal.aborted) throw error;
        reader.cancel(error);
        return { kind: "stalled", bytes, error };
      }
      bytes += reader.payload;
      reader.written();
    }
  } catch (err) {
    reader.cancel(err);
    throw err;
  } finally {
    bound.stop();
    signal.removeEventListener("abort", onAbort);
  }
}
