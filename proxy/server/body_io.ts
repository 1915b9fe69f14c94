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

import { deadline } from "../../shared/deadline.ts";
import { encodeFrameHeader, FrameType } from "../h3/mod.ts";

/** Size of the first read of a request stream: room for a typical HEADERS frame. */
const FIRST_READ_BYTES = 2048;
/** Largest read (request bodies arriving fast). */
const BODY_READ_BYTES = 64 * 1024;

/** The reads a request stream is consumed with. */
export interface ChunkReader {
  /** The next chunk of the stream. */
  read(): Promise<ReadableStreamReadResult<Uint8Array>>;
  /** Stops receiving (STOP_SENDING). */
  cancel(reason?: unknown): Promise<void>;
}

/**
 * Reads a request stream into buffers of our size. The runtime's default
 * reader of a QUIC stream allocates 64 KiB for every read, so each GET (a few
 * dozen bytes) cost 64 KiB of short-lived external memory, which drives V8's
 * garbage collector. Reads start at 2 KiB and grow (×4, up to 64 KiB) only
 * while each one comes back full, so a GET's reads (its HEADERS, then its
 * FIN) stay small and an upload soon reads in large pieces. Streams that
 * are not byte streams (the in-memory test transport) get the default reader.
 */
export function chunkReader(readable: ReadableStream<Uint8Array>): ChunkReader {
  let byob: ReadableStreamBYOBReader;
  try {
    byob = readable.getReader({ mode: "byob" });
  } catch {
    return readable.getReader();
  }
  let size = FIRST_READ_BYTES;
  return {
    async read() {
      const r = await byob.read(new Uint8Array(size));
      if (r.value?.length === size) size = Math.min(size * 4, BODY_READ_BYTES);
      return r.done || r.value === undefined
        ? { done: true, value: undefined }
        : { done: false, value: r.value };
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
/** Size of the buffer a response body is read into. */
const BODY_BUFFER_BYTES = 64 * 1024;

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
        const header = encodeFrameHeader(FrameType.DATA, payload.length);
        const start = FRAME_HEADER_ROOM - header.length;
        const frame = new Uint8Array(payload.buffer, start, header.length + payload.length);
        frame.set(header, 0);
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
  let buffer: Uint8Array | null = new Uint8Array(BODY_BUFFER_BYTES);
  let pending: Uint8Array | null = null;
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
      const header = encodeFrameHeader(FrameType.DATA, chunk.length);
      const start = FRAME_HEADER_ROOM - header.length;
      buf.set(header, start);
      buf.set(chunk, FRAME_HEADER_ROOM);
      pending = buf;
      this.payload = chunk.length;
      return buf.subarray(start, FRAME_HEADER_ROOM + chunk.length);
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
        frame = await deadline(reader.next(), idleMs, () => new ResponseIdleTimeout(idleMs));
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        reader.cancel(error);
        return { kind: "broken", bytes, error };
      } finally {
        waiting?.pause();
      }
      if (signal.aborted) throw signal.reason;
      if (frame === null) return { kind: "complete", bytes };
      try {
        await deadline(writer.write(frame), idleMs, () => new ResponseWriteStall(idleMs));
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
    signal.removeEventListener("abort", onAbort);
  }
}
