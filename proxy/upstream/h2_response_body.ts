/**
 * A streamed response body of one HTTP/2 stream, with the backend's
 * flow-control credit returned as the reader takes the bytes, not as they
 * arrive: the octets queued in the body's stream and not yet read are the
 * octets the codec holds unread (`H2ClientConnection.heldOctets`), and they
 * count against the stream's window and the connection's
 * (`connectionCredit: "on-consume"`). So a reader that stalls stops its
 * backend stream at one stream window, and stalled readers together stop
 * the whole session at the connection window: what a session holds for
 * slow clients is bounded by its connection window, however many streams
 * stall.
 *
 * What was taken is counted without a per-chunk record: the queue's size is
 * the high-water mark less `desiredSize` (chunks are sized in bytes), so the
 * octets taken are those delivered less those still queued. The body closes
 * only once its queue has drained, so its last octets are credited too; a
 * body cancelled or errored with octets unread gives them back to the
 * connection (`discard`).
 *
 * @module
 */

import { type H2ClientConnection, MAX_WINDOW } from "../h2/mod.ts";

/**
 * The body stream's high-water mark: above any stream window, so that what
 * is queued (at most a stream window) is always below it and the stream
 * calls `pull` after every read: credit follows each read. Nothing is read
 * ahead of the window: the mark only schedules `pull`.
 */
const PULL_MARK = MAX_WINDOW;

/** What a body needs of its session: the codec to credit, and a way to send what that queued. */
export interface BodySession {
  readonly codec: H2ClientConnection;
  flush(): void;
}

/** A response body streamed to its reader; see the module docs. */
export class ResponseBody {
  /** The body as the reader sees it. */
  readonly stream: ReadableStream<Uint8Array>;
  readonly #session: BodySession;
  readonly #id: number;
  #controller: ReadableStreamDefaultController<Uint8Array> | null = null;
  /** Octets delivered and not yet credited back: queued, or taken since the last credit. */
  #owed = 0;
  /** The backend's body ended: the stream closes once its queue has drained. */
  #ending = false;
  /** Closed, errored or cancelled: nothing more is queued or credited. */
  #over = false;

  /**
   * The body of stream `id` on `session`; `onCancel` runs when the reader
   * cancels it (after its unread octets were given back).
   */
  constructor(session: BodySession, id: number, onCancel: () => void) {
    this.#session = session;
    this.#id = id;
    this.stream = new ReadableStream<Uint8Array>({
      start: (c) => {
        this.#controller = c;
      },
      pull: () => this.#credit(),
      cancel: () => {
        this.#drop();
        onCancel();
      },
    }, { highWaterMark: PULL_MARK, size: (chunk) => chunk.byteLength });
  }

  /** Body bytes of one DATA frame (a view into the session's buffer: copied). */
  push(data: Uint8Array): void {
    if (this.#over || data.length === 0) return;
    // Counted before the enqueue: it may hand the chunk to a waiting read
    // and call `pull` at once.
    this.#owed += data.length;
    this.#controller!.enqueue(data.slice());
  }

  /** The backend's body is complete: the reader gets the end once it has read the rest. */
  end(): void {
    if (this.#over) return;
    this.#ending = true;
    this.#credit();
  }

  /** The response broke: the reader gets `err`, and what it had not read is given back. */
  error(err: Error): void {
    if (this.#over) return;
    try {
      this.#controller!.error(err);
    } catch { /* closed */ }
    this.#drop();
  }

  /** Credits what the reader took since the last credit; closes a drained, ended body. */
  #credit(): void {
    const c = this.#controller;
    if (this.#over || c === null) return;
    const queued = PULL_MARK - (c.desiredSize ?? PULL_MARK);
    const taken = this.#owed - queued;
    if (taken > 0) {
      this.#owed = queued;
      const s = this.#session;
      s.codec.consume(this.#id, taken);
      if (s.codec.pendingOutput > 0) s.flush();
    }
    if (this.#ending && queued === 0) {
      this.#over = true;
      c.close();
    }
  }

  /** The reader will take nothing more: the octets it held return to the connection. */
  #drop(): void {
    this.#over = true;
    if (this.#owed === 0) return;
    this.#owed = 0;
    const s = this.#session;
    s.codec.discard(this.#id);
    if (s.codec.pendingOutput > 0) s.flush();
  }
}
