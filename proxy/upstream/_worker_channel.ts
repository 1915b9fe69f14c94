/**
 * The message protocol between the QUIC thread and the upstream workers
 * (`worker_transport.ts`, `upstream_worker.ts`), and the pieces both sides
 * share: an outbox that sends one `postMessage` per event-loop turn, and body
 * streams with bounded credit in both directions.
 *
 * A body crosses as `data` messages whose buffers are transferred. The
 * sender keeps at most {@link WINDOW} bytes unacknowledged; the receiver
 * returns `credit` as its reader takes each chunk, and `cancel` when its
 * reader gives up. `end` and `error` finish a body.
 *
 * @module
 */

import { setImmediate } from "node:timers";
import { UpstreamError, type UpstreamFailureKind } from "./transport.ts";

/** Bytes a body sender may have in flight, unacknowledged, per exchange and direction. */
export const WINDOW = 256 * 1024;

/** A message on the channel, in either direction (`id` names the exchange). */
export type Msg =
  // main → worker
  | {
    t: "req";
    id: number;
    address: string;
    /** The backend's `tls` setting, if any. */
    tls?: { ca?: string; server_name?: string };
    method: string;
    path: string;
    authority: string | undefined;
    /** Flat `[name, value, ...]`. */
    headers: string[];
    /** Whole bytes, `true` for a body streamed in `data` messages, or none. */
    body: ArrayBuffer | true | null;
    /** A whole body's trailers, flat (a streamed body's come with its `end`). */
    trailers?: string[];
    timeoutMs: number;
  }
  | { t: "abort"; id: number }
  | { t: "release"; address: string }
  | { t: "close" }
  /** Are you alive? (answered with `pong`; sent only while the worker carries exchanges) */
  | { t: "ping" }
  // worker → main
  | {
    t: "head";
    id: number;
    status: number;
    headers: string[];
    /** Whole bytes, `true` for a body streamed in `data` messages, or none. */
    body: ArrayBuffer | true | null;
    /** A whole body's trailers, flat (a streamed body's come with its `end`). */
    trailers?: string[];
  }
  /** `kind` `null`: not an {@link UpstreamError} (a bug in the worker: outcome `internal`). */
  | { t: "fail"; id: number; kind: UpstreamFailureKind | null; message: string }
  | { t: "closed" }
  | { t: "pong" }
  /**
   * The worker listens: its first message. Deno dispatches a worker's
   * messages while its module graph still evaluates (top-level await) and
   * drops those that find no listener, so the main thread holds its
   * messages until this one.
   */
  | { t: "ready" }
  // body streams, both directions (request body main → worker, response body worker → main)
  | { t: "data"; id: number; buf: ArrayBuffer }
  /** The body ended; `trailers` (flat): the trailer section that followed it, if any. */
  | { t: "end"; id: number; trailers?: string[] }
  | { t: "error"; id: number; kind: UpstreamFailureKind | null; message: string }
  | { t: "credit"; id: number; n: number }
  | { t: "cancel"; id: number };

/** Collects messages and posts them as one array per event-loop turn. */
export class Outbox {
  #msgs: Msg[] = [];
  #transfer = new Set<ArrayBuffer>();
  #scheduled = false;
  readonly #post: (msgs: Msg[], transfer: ArrayBuffer[]) => void;

  constructor(post: (msgs: Msg[], transfer: ArrayBuffer[]) => void) {
    this.#post = post;
  }

  /** Queues `msg` (and the buffer to transfer with it) for this turn's batch. */
  send(msg: Msg, transfer?: ArrayBuffer): void {
    this.#msgs.push(msg);
    if (transfer !== undefined) this.#transfer.add(transfer);
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(this.flush);
    }
  }

  /** Posts the pending batch now (also run once per turn). */
  readonly flush = (): void => {
    this.#scheduled = false;
    if (this.#msgs.length === 0) return;
    const msgs = this.#msgs;
    const transfer = [...this.#transfer];
    this.#msgs = [];
    this.#transfer.clear();
    this.#post(msgs, transfer);
  };
}

/**
 * The bytes of `chunk` as an ArrayBuffer this side may give away: its own
 * buffer when the view covers all of it, else a copy.
 */
export function ownBuffer(chunk: Uint8Array): ArrayBuffer {
  const b = chunk.buffer;
  if (b instanceof ArrayBuffer && chunk.byteOffset === 0 && chunk.byteLength === b.byteLength) {
    return b;
  }
  return chunk.slice().buffer as ArrayBuffer;
}

/** `[[n, v], ...]` as `[n, v, ...]`. */
export function flatFields(fields: ReadonlyArray<readonly [string, string]>): string[] {
  const out: string[] = new Array(fields.length * 2);
  let i = 0;
  for (const [n, v] of fields) {
    out[i++] = n;
    out[i++] = v;
  }
  return out;
}

/** `[n, v, ...]` as `[[n, v], ...]`. */
export function pairFields(flat: readonly string[]): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (let i = 0; i < flat.length; i += 2) out.push([flat[i], flat[i + 1]]);
  return out;
}

/** The error a body or exchange failure becomes on the other side. */
export function reviveError(kind: UpstreamFailureKind | null, message: string): Error {
  return kind === null ? new Error(message) : new UpstreamError(kind, message);
}

/** The `fail` message of exchange `id` for `err` (kind `null` for an error that is not an {@link UpstreamError}). */
export function failMessage(id: number, err: unknown): Msg {
  const kind = err instanceof UpstreamError ? err.kind : null;
  return { t: "fail", id, kind, message: (err as Error)?.message ?? String(err) };
}

/**
 * Sends a body stream as `data` messages, never more than {@link WINDOW}
 * bytes ahead of the receiver's credit. `done` runs once when the body
 * ended, failed or was cancelled; `trailers`, if given, is asked once the
 * body ended, and what it returns goes with the `end` message.
 */
export class BodySender {
  #outstanding = 0;
  #wake: (() => void) | null = null;
  #stopped = false;
  #reader: ReadableStreamDefaultReader<Uint8Array> | null = null;

  constructor(
    private readonly out: Outbox,
    private readonly id: number,
    private readonly done: () => void,
    private readonly trailers?: () => ReadonlyArray<readonly [string, string]> | null | undefined,
  ) {}

  /** Pumps `body` until it ends, fails or {@link cancel} is called. */
  async run(body: ReadableStream<Uint8Array>): Promise<void> {
    const reader = this.#reader = body.getReader();
    try {
      for (;;) {
        while (this.#outstanding >= WINDOW && !this.#stopped) {
          await new Promise<void>((resolve) => this.#wake = resolve);
        }
        if (this.#stopped) return;
        const r = await reader.read();
        if (this.#stopped) return;
        if (r.done) {
          const trailers = this.trailers?.();
          this.out.send(
            trailers == null
              ? { t: "end", id: this.id }
              : { t: "end", id: this.id, trailers: flatFields(trailers) },
          );
          return;
        }
        if (r.value.byteLength === 0) continue;
        const buf = ownBuffer(r.value);
        this.#outstanding += buf.byteLength;
        this.out.send({ t: "data", id: this.id, buf }, buf);
      }
    } catch (err) {
      if (this.#stopped) return;
      const kind = err instanceof UpstreamError ? err.kind : null;
      this.out.send({ t: "error", id: this.id, kind, message: (err as Error)?.message ?? "" });
    } finally {
      this.#stopped = true;
      this.done();
    }
  }

  /** The receiver took `n` more bytes. */
  credit(n: number): void {
    this.#outstanding -= n;
    const wake = this.#wake;
    this.#wake = null;
    wake?.();
  }

  /** Stops sending and cancels the source (the receiver is gone). */
  cancel(reason?: unknown): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#reader?.cancel(reason).catch(() => {});
    this.credit(0);
  }
}

/**
 * The receiving end of a {@link BodySender}: a stream fed by `data`
 * messages that returns credit as its reader takes each chunk.
 */
export class BodyReceiver {
  #queue: Uint8Array[] = [];
  #ended = false;
  #finished = false;
  #ctrl!: ReadableStreamDefaultController<Uint8Array>;
  #wake: (() => void) | null = null;
  /** The trailers that came with `end`, flat, if any. */
  trailers: string[] | undefined = undefined;
  /** The body as the consumer sees it. */
  readonly stream: ReadableStream<Uint8Array>;

  constructor(
    private readonly out: Outbox,
    private readonly id: number,
    private readonly done: () => void,
  ) {
    this.stream = new ReadableStream<Uint8Array>({
      start: (c) => void (this.#ctrl = c),
      pull: (c) => {
        const chunk = this.#queue.shift();
        if (chunk !== undefined) return this.#hand(c, chunk);
        if (this.#ended) return this.#close();
        return new Promise<void>((resolve) => this.#wake = resolve);
      },
      cancel: () => {
        if (this.#finished) return;
        this.out.send({ t: "cancel", id: this.id });
        this.#finish();
      },
    }, { highWaterMark: 0 });
  }

  #hand(c: ReadableStreamDefaultController<Uint8Array>, chunk: Uint8Array): void {
    c.enqueue(chunk);
    this.out.send({ t: "credit", id: this.id, n: chunk.byteLength });
  }

  #close(): void {
    this.#finish();
    this.#ctrl.close();
  }

  #finish(): void {
    this.#finished = true;
    this.#queue = [];
    const wake = this.#wake;
    this.#wake = null;
    wake?.();
    this.done();
  }

  /** A `data` message arrived. */
  data(buf: ArrayBuffer): void {
    if (this.#finished) return;
    const chunk = new Uint8Array(buf);
    const wake = this.#wake;
    if (wake === null) return void this.#queue.push(chunk);
    this.#wake = null;
    this.#hand(this.#ctrl, chunk);
    wake();
  }

  /** The body ended, followed by `trailers` (flat), if any. */
  end(trailers?: string[]): void {
    if (this.#finished) return;
    this.#ended = true;
    this.trailers = trailers;
    if (this.#wake !== null && this.#queue.length === 0) this.#close();
  }

  /** The body failed: the reader sees `err` at once. */
  error(err: unknown): void {
    if (this.#finished) return;
    this.#finish();
    this.#ctrl.error(err);
  }
}
