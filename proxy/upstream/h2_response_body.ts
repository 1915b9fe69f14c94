/**
 * A streamed response body of one HTTP/2 stream, with the backend's
 * flow-control credit returned as the reader takes the bytes, not as they
 * arrive: the octets queued in the body and not yet read are the octets the
 * codec holds unread (`H2ClientConnection.heldOctets`), and they count
 * against the stream's window and the connection's (`connectionCredit:
 * "on-consume"`). So a reader that stalls stops its backend stream at one
 * stream window, and stalled readers together stop the whole session at the
 * connection window: what a session holds for slow clients is bounded by
 * its connection window, however many streams stall.
 *
 * The bytes of each DATA frame (a view into the session's read buffer) are
 * copied once, into the reader's own buffer when a BYOB read waits, else
 * into the body's reused queue (`byte_body.ts`): nothing is allocated per
 * frame. They are credited when handed to the reader; a body cancelled or
 * errored with octets unread gives them back to the connection (`discard`).
 *
 * @module
 */

import type { H2ClientConnection } from "../h2/mod.ts";
import { ByteBody } from "./byte_body.ts";

/** What a body needs of its session: the codec to credit, and a way to send what that queued. */
export interface BodySession {
  readonly codec: H2ClientConnection;
  flush(): void;
}

/** A response body streamed to its reader; see the module docs. */
export class ResponseBody {
  /** The body as the reader sees it (a byte stream). */
  readonly stream: ReadableStream<Uint8Array>;
  readonly #session: BodySession;
  readonly #id: number;
  readonly #body: ByteBody;

  /**
   * The body of stream `id` on `session`; `onCancel` runs when the reader
   * cancels it (after its unread octets were given back).
   */
  constructor(session: BodySession, id: number, onCancel: () => void) {
    this.#session = session;
    this.#id = id;
    this.#body = new ByteBody({
      taken: (n) => this.#credit(n),
      cancel: (queued) => {
        this.#discard(queued);
        onCancel();
      },
    });
    this.stream = this.#body.stream;
  }

  /** Body bytes of one DATA frame (a view into the session's buffer: copied before this returns). */
  push(data: Uint8Array): void {
    this.#body.push(data);
  }

  /** The backend's body is complete: the reader gets the end once it has read the rest. */
  end(): void {
    this.#body.end();
  }

  /** The response broke: the reader gets `err`, and what it had not read is given back. */
  error(err: Error): void {
    if (this.#body.over) return;
    const queued = this.#body.queued;
    this.#body.error(err);
    this.#discard(queued);
  }

  /** Credits `n` octets the reader took. */
  #credit(n: number): void {
    const s = this.#session;
    s.codec.consume(this.#id, n);
    if (s.codec.pendingOutput > 0) s.flush();
  }

  /** The reader will take nothing more: the `queued` octets it held return to the connection. */
  #discard(queued: number): void {
    if (queued === 0) return;
    const s = this.#session;
    s.codec.discard(this.#id);
    if (s.codec.pendingOutput > 0) s.flush();
  }
}
