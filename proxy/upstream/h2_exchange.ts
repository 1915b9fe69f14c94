/**
 * One request and its response on an HTTP/2 session to a backend: the
 * stream opened with the request head, the request body pumped as the
 * backend's window and the socket take it (then the client's trailers), and
 * the stream's events turned into the {@link UpstreamResponse}: a small
 * complete body whole, a larger one as a stream with backpressure tied to
 * flow control, trailers on the response. A refusal the backend provably
 * did not process is replayed; every other end settles the exchange once.
 *
 * An exchange is driven from above (its pool opens it on a session) and
 * from below (its session's events, by kind); what it needs of the
 * transport (to be queued again, taken out of a queue, forgotten when
 * over) is the {@link ExchangeHooks} it is created with.
 *
 * @module
 */

import type { IdleWatch } from "../../shared/deadline.ts";
import { H2Code, h2CodeName } from "../h2/mod.ts";
import { responseHasNoBody } from "../http/mod.ts";
import { ResponseBody } from "./h2_response_body.ts";
import type { H2Session, StreamErrorEvent, StreamEvent } from "./h2_session.ts";
import { mayReplay, outcomeOfError } from "./outcome.ts";
import { RequestBodyReader } from "./request_body_reader.ts";
import {
  type Trailers,
  UpstreamError,
  type UpstreamRequest,
  type UpstreamResponse,
  WebSocketUnsupported,
} from "./transport.ts";
import { h2WebSocketFields, requestFields } from "./h2_request_head.ts";

/** Bodies with a declared length up to this are collected and returned whole. */
export const WHOLE_BODY_LIMIT = 64 * 1024;
/** Times a request refused unprocessed (REFUSED_STREAM, GOAWAY) is tried again. */
const MAX_REPLAYS = 2;

/** What an exchange needs of the transport that carries it. */
export interface ExchangeHooks {
  /** Queue the exchange again for a stream (it lost the race for a slot, or is replayed). */
  requeue(x: Exchange): void;
  /** Take the exchange out of the queue it waits in, if any. */
  unqueue(x: Exchange): void;
  /** The exchange is over. */
  done(x: Exchange): void;
}

/** A response head, body bytes or trailers, by kind. */
type ResponseEvent = Extract<StreamEvent, { type: "response" }>;
type DataEvent = Extract<StreamEvent, { type: "data" }>;
type TrailersEvent = Extract<StreamEvent, { type: "trailers" }>;

/** One exchange: its request, where it is, and what has come back. */
export class Exchange {
  readonly req: UpstreamRequest;
  /** Queued, open on a session, or done. */
  state: "queued" | "open" | "done" = "queued";
  /** The session it was given to (waiting for its SETTINGS, or open on it). */
  session: H2Session<Exchange> | null = null;
  /** Times it moved to a new session after the one it waited on timed out connecting. */
  moves = 0;
  /** When waiting for a stream runs out (`performance.now()` ms): never opened past it. */
  readonly deadline: number;
  /** request_timeout_ms: waiting on the backend for body credit or the head. */
  watch: IdleWatch | null = null;
  /** Listens for the request's signal. */
  onAbort: (() => void) | null = null;
  readonly #resolve: (res: UpstreamResponse) => void;
  readonly #reject: (err: UpstreamError) => void;
  readonly #hooks: ExchangeHooks;
  #stream = 0;
  /** When its stream opened (`performance.now()` ms). */
  #openedAt = 0;
  #settled = false;
  #replays = 0;
  // Response side.
  #status = 0;
  #headers: Array<[string, string]> = [];
  /** A small body being collected whole: its bytes so far. */
  #collected: Uint8Array | null = null;
  #collectedLength = 0;
  /** A streamed body the backend is still sending (null once it ended, or none). */
  #body: ResponseBody | null = null;
  /** The backend's trailers, when they came before the response was handed over. */
  #trailers: Array<[string, string]> | undefined = undefined;
  /** The response handed over (a streamed body's trailers are set on it). */
  #response: UpstreamResponse | null = null;
  /** The backend's response is complete (END_STREAM seen). */
  #responseEnded = false;
  // Request side.
  /** The whole body still to send (Uint8Array bodies), or a chunk of a streamed one. */
  #pending: Uint8Array | null = null;
  #pendingEnd = false;
  /** The client's trailers, sent after the last body byte (asked once the body ended). */
  #trailersOut: Trailers | null = null;
  #reader: RequestBodyReader | null = null;
  /** A streamed body has been read from: it cannot be replayed. */
  #bodyTouched = false;
  /** Waiting for flow-control credit: resolved by {@link writable}. */
  #wake: (() => void) | null = null;

  /**
   * `tunnel`: the request opens a WebSocket (RFC 8441 extended CONNECT): its
   * body is the client's side of the tunnel, sent only once a 2xx opened it.
   */
  constructor(
    req: UpstreamRequest,
    resolve: (res: UpstreamResponse) => void,
    reject: (err: UpstreamError) => void,
    hooks: ExchangeHooks,
    readonly tunnel = false,
  ) {
    this.req = req;
    this.#resolve = resolve;
    this.#reject = reject;
    this.#hooks = hooks;
    this.deadline = performance.now() + req.timeoutMs;
  }

  get #replayable(): boolean {
    return !(this.req.body instanceof ReadableStream) || !this.#bodyTouched;
  }

  /** Opens the exchange's stream on `s` (whose SETTINGS are in) and starts its body. */
  open(s: H2Session<Exchange>): void {
    if (this.state !== "queued") return;
    const req = this.req;
    if (performance.now() >= this.deadline - Math.min(100, req.timeoutMs * 0.05)) {
      // Its timeout is due or all but (the sweeper runs it a little late): a
      // slot freed meanwhile must not open a stream nobody will wait for.
      return this.fail(
        new UpstreamError("timeout", `backend did not answer within ${req.timeoutMs} ms`),
      );
    }
    const fields = this.tunnel ? h2WebSocketFields(req, s.scheme) : requestFields(req, s.scheme);
    const r = s.codec.openStream(fields, {
      endStream: req.body === null && !this.tunnel,
      head: req.method === "HEAD",
    });
    if ("refused" in r) {
      if (r.refused === "no-extended-connect") {
        return this.fail(new WebSocketUnsupported(req.address));
      }
      if (r.refused === "too-large") {
        return this.fail(
          new UpstreamError("local", "request header list above the backend's limit"),
        );
      }
      // Lost the race for a slot: queue again.
      this.session = null;
      return this.#hooks.requeue(this);
    }
    this.state = "open";
    this.#openedAt = performance.now();
    this.#stream = r.id;
    s.streams.set(r.id, this);
    if (!this.tunnel) this.#startBody();
    s.flush();
  }

  /** Sends the request body, if any (a tunnel's once it is open). */
  #startBody(): void {
    if (this.req.body === null) {
      if (this.tunnel) this.#endOurSide(this.session!);
      return;
    }
    this.#sendBody().catch((err) => {
      this.fail(
        err instanceof UpstreamError
          ? err
          : new UpstreamError("aborted", "client request body failed", { cause: err }),
      );
    });
  }

  /** Flow-control credit arrived: a body waiting for it goes on. */
  writable(): void {
    this.#wake?.();
  }

  /**
   * Sends the request body: a whole body as the windows allow, a streamed
   * one chunk by chunk, reading the next chunk from the client only once the
   * previous one is taken and the socket has caught up.
   */
  async #sendBody(): Promise<void> {
    const body = this.req.body;
    if (body instanceof Uint8Array) {
      this.#pending = body;
      this.#pendingEnd = true;
      this.#trailersOut = this.req.trailers?.() ?? null;
      await this.#sendPendingAll();
      return this.#maybeDone();
    }
    const reader = new RequestBodyReader(body as ReadableStream<Uint8Array>);
    this.#reader = reader;
    try {
      await this.#sendChunks(reader);
    } finally {
      this.#reader = null;
      try {
        reader.releaseLock();
      } catch { /* pending read */ }
    }
  }

  /**
   * The chunks are read into one buffer reused for every chunk
   * (`request_body_reader.ts`): the next one is read only once the codec has
   * copied all of the previous one into its output (`#sendPendingAll`).
   */
  async #sendChunks(reader: RequestBodyReader): Promise<void> {
    for (;;) {
      // Waiting on the client, not the backend: the client's own idle
      // timeout bounds this wait (a stalled upload is 408, not 503).
      if (!this.#responseEnded) this.watch?.pause();
      const chunk = await reader.next();
      this.#bodyTouched = true;
      if (this.state !== "open") return;
      if (!this.#responseEnded) this.watch?.touch();
      const s = this.session!;
      if (!s.codec.hasStream(this.#stream)) return;
      const done = chunk === null;
      this.#pending = chunk ?? new Uint8Array(0);
      this.#pendingEnd = done;
      if (done) this.#trailersOut = this.req.trailers?.() ?? null;
      await this.#sendPendingAll();
      if (done || this.state !== "open") return this.#maybeDone();
      await s.drained();
      if (!this.#responseEnded) this.watch?.touch();
    }
  }

  async #sendPendingAll(): Promise<void> {
    while (this.state === "open" && !this.#sendPendingOnce()) {
      await new Promise<void>((resolve) => this.#wake = resolve);
      this.#wake = null;
    }
  }

  /** Sends what the windows allow of the pending bytes; true once they are all out. */
  #sendPendingOnce(): boolean {
    const s = this.session!;
    if (!s.codec.hasStream(this.#stream)) {
      this.#pending = null;
      return true;
    }
    const data = this.#pending!;
    const trailers = this.#pendingEnd ? this.#trailersOut : null;
    const n = s.codec.sendData(this.#stream, data, this.#pendingEnd && trailers === null);
    if (n > 0) this.watch?.touch();
    if (n === data.length) {
      // The trailers end the stream (RFC 9113 §8.1).
      if (trailers !== null) s.codec.sendTrailers(this.#stream, trailers);
      s.flush();
      this.#pending = null;
      return true;
    }
    s.flush();
    this.#pending = data.subarray(n);
    return false;
  }

  /** Both directions are over once the stream left the codec and the response ended. */
  #maybeDone(): void {
    const s = this.session;
    if (s === null || this.state !== "open" || !this.#responseEnded) return;
    if (s.codec.hasStream(this.#stream)) return;
    this.#leave(s);
  }

  /** A response head, body bytes or trailers on the exchange's stream. */
  onStreamEvent(ev: StreamEvent): void {
    switch (ev.type) {
      case "response":
        return this.#onResponse(ev);
      case "data":
        return this.#onData(ev);
      case "trailers":
        return this.#onTrailers(ev);
    }
  }

  /** The head: hand over now without a body, collect a small one, or stream a larger one. */
  #onResponse(ev: ResponseEvent): void {
    this.#status = ev.status;
    this.#headers = ev.headers;
    this.watch?.touch();
    if (this.tunnel && this.#openedTunnel(ev)) return;
    if (ev.endStream || responseHasNoBody(this.req.method, ev.status) || ev.contentLength === 0) {
      if (ev.endStream) this.#ended();
      return this.#settle(null);
    }
    if (ev.contentLength > 0 && ev.contentLength <= WHOLE_BODY_LIMIT) {
      this.#collected = new Uint8Array(ev.contentLength);
      this.#collectedLength = 0;
      return;
    }
    this.watch?.cancel();
    this.watch = null;
    // The backend's window is credited as the reader takes the bytes.
    this.#body = new ResponseBody(this.session!, this.#stream, () => this.#bodyCancelled());
    this.#settle(this.#body.stream);
  }

  /**
   * A tunnel's answer: a 2xx opens it (the backend's side streams, then the
   * client's is sent: true); anything else refuses it, and our side ends
   * with nothing of the client's sent (false: the answer is a response).
   */
  #openedTunnel(ev: ResponseEvent): boolean {
    const s = this.session!;
    if (ev.status < 200 || ev.status > 299 || ev.endStream) {
      this.#endOurSide(s);
      return false;
    }
    this.watch?.cancel();
    this.watch = null;
    this.#body = new ResponseBody(s, this.#stream, () => this.#bodyCancelled());
    this.#settle(this.#body.stream);
    this.#startBody();
    return true;
  }

  /** Ends our side of an open tunnel stream with nothing (more) sent: an empty END_STREAM. */
  #endOurSide(s: H2Session<Exchange>): void {
    s.codec.sendData(this.#stream, new Uint8Array(0), true);
    s.flush();
  }

  /** The reader cancelled the body (its unread bytes were given back): the stream is reset. */
  #bodyCancelled(): void {
    this.#body = null;
    this.#cancelStream(H2Code.CANCEL);
    this.#finish();
  }

  #onData(ev: DataEvent): void {
    const s = this.session!;
    const n = ev.data.length;
    if (this.#collected !== null) {
      this.#collected.set(ev.data, this.#collectedLength);
      this.#collectedLength += n;
      s.codec.consume(this.#stream, n);
      this.watch?.touch();
      if (ev.endStream) this.#settleCollected();
      return;
    }
    const body = this.#body;
    if (body === null) {
      // No reader (HEAD, 204, 304, or a settled null body): keep the window open.
      s.codec.consume(this.#stream, n);
      if (ev.endStream) this.#ended();
      return;
    }
    body.push(ev.data);
    if (ev.endStream) {
      this.#body = null;
      body.end();
      this.#ended();
    }
  }

  /**
   * Trailers end the response: with the head when it is not handed over
   * yet, else on the handed response before its body closes.
   */
  #onTrailers(ev: TrailersEvent): void {
    if (this.#response !== null) this.#response.trailers = ev.headers;
    else this.#trailers = ev.headers;
    if (this.#collected !== null) return this.#settleCollected();
    this.#body?.end();
    this.#body = null;
    this.#ended();
  }

  /**
   * A collected body is complete (the codec holds it to its content-length,
   * so it fills the buffer): the response is handed over with it whole.
   */
  #settleCollected(): void {
    const body = this.#collected!.subarray(0, this.#collectedLength);
    this.#collected = null;
    this.#ended();
    this.#settle(body);
  }

  /** The backend's response is complete: the stream may still take request body. */
  #ended(): void {
    this.#responseEnded = true;
    const s = this.session;
    // RFC 9113 §8.1: the answer is complete while we still send: the backend
    // may want the rest or reset with NO_ERROR; either way the answer stands.
    if (s !== null && !s.codec.hasStream(this.#stream)) this.#leave(s);
  }

  /** Both directions are done: the exchange leaves its session, over. */
  #leave(s: H2Session<Exchange>): void {
    s.streams.delete(this.#stream);
    this.#finish();
    s.streamDone();
  }

  /** The exchange's stream ended abnormally (it has left the session). */
  onStreamError(ev: StreamErrorEvent): void {
    const { code, message } = ev;
    if (this.state === "done") return;
    if (this.#settled && this.#body === null && this.#collected === null) {
      // The answer was complete: a reset after it takes nothing away.
      return this.#finish();
    }
    if (ev.local && ev.invalidHead) {
      // The codec applied the response check of `http/` (as `phases/respond.ts`
      // does on what a transport hands over): the backend answered, with a
      // head no client may be given. Never sent again.
      return this.fail(
        new UpstreamError("invalid_response", `backend sent an invalid response head: ${message}`),
        false,
      );
    }
    if (ev.local) {
      return this.fail(
        new UpstreamError(
          "protocol",
          `backend sent a malformed response: ${h2CodeName(code)}: ${message}`,
        ),
        false,
      );
    }
    if (code === H2Code.REFUSED_STREAM) return this.#refused(ev.answered, message);
    this.fail(
      new UpstreamError("reset", `backend reset the stream (code ${code}, ${h2CodeName(code)})`),
      false,
    );
  }

  /**
   * The backend refused the stream (REFUSED_STREAM, or above a GOAWAY's
   * last stream id). Before any response head that proves it did not
   * process the request (RFC 9113 §8.7): `connect`, replayed at once when
   * the retry rule allows ({@link mayReplay}) and the body can be sent
   * again. After one (`answered`, a 1xx included) it did process it, and
   * the refusal is a lie: `protocol`, never replayed.
   */
  #refused(answered: boolean, message: string): void {
    const err = answered || this.#status !== 0
      ? new UpstreamError(
        "protocol",
        `backend refused the stream after a response head (${message}): it processed the request (RFC 9113 §8.7)`,
      )
      : new UpstreamError("connect", `backend refused the stream, unprocessed (${message})`, {
        refusedStream: true,
      });
    if (
      mayReplay(outcomeOfError(err, undefined)) && this.#replayable &&
      this.#replays < MAX_REPLAYS
    ) {
      this.#replays++;
      this.session = null;
      this.#stream = 0;
      this.state = "queued";
      this.#pending = null;
      this.#wake = null;
      return this.#hooks.requeue(this);
    }
    this.fail(err, false);
  }

  /** Resets the exchange's stream if it is still open on its session. */
  #cancelStream(code: number): void {
    const s = this.session;
    if (s === null || this.#stream === 0) return;
    if (s.streams.get(this.#stream) === this) s.streams.delete(this.#stream);
    s.resetStream(this.#stream, code, this.#status !== 0, this.#openedAt);
    s.streamDone();
  }

  #settle(body: Uint8Array | ReadableStream<Uint8Array> | null): void {
    if (this.#settled) return;
    this.#settled = true;
    if (!(body instanceof ReadableStream)) {
      this.watch?.cancel();
      this.watch = null;
    }
    const res: UpstreamResponse = { status: this.#status, headers: this.#headers, body };
    if (this.#trailers !== undefined) res.trailers = this.#trailers;
    if (body instanceof ReadableStream) this.#response = res;
    this.#resolve(res);
  }

  /** The exchange is over: drop its listeners. */
  #finish(): void {
    if (this.state === "done") return;
    this.state = "done";
    this.watch?.cancel();
    this.watch = null;
    if (this.onAbort) this.req.signal?.removeEventListener("abort", this.onAbort);
    this.onAbort = null;
    this.#reader?.cancel().catch(() => {});
    this.#wake?.();
    this.#hooks.done(this);
  }

  /**
   * Fails the exchange: before its head the promise rejects, after it the
   * body stream errors; a stream still open is reset (CANCEL) unless
   * `reset` is false (the stream is gone already), a queued exchange never
   * opens.
   */
  fail(err: UpstreamError, reset = true): void {
    if (this.state === "done") return;
    this.#leaveForFailure(reset);
    if (!this.#settled) {
      this.#settled = true;
      this.#reject(err);
    } else if (this.#body !== null) {
      this.#body.error(err);
      this.#body = null;
    }
    this.#collected = null;
    this.#finish();
  }

  /** Takes a failing exchange out of its queue, or off its session. */
  #leaveForFailure(reset: boolean): void {
    const s = this.session;
    if (this.state === "queued") {
      if (s === null) return this.#hooks.unqueue(this);
      const i = s.waiting.indexOf(this);
      if (i >= 0) s.waiting.splice(i, 1);
    } else if (reset) {
      this.#cancelStream(H2Code.CANCEL);
    } else if (s !== null) {
      s.detach(this.#stream);
    }
  }
}

/**
 * A session failed: what waited on it sent nothing to the backend (it fails
 * `connect`, so the forwarder may try another candidate), what was open on
 * it fails with `err`'s kind.
 */
export function failSessionExchanges(
  waiting: Exchange[],
  open: Exchange[],
  err: UpstreamError,
): void {
  const unsent = err.kind === "connect" || err.kind === "aborted"
    ? err
    : new UpstreamError("connect", err.message, { cause: err });
  for (const x of waiting) {
    if (x.state !== "queued") continue;
    x.session = null;
    x.fail(unsent);
  }
  for (const x of open) x.fail(new UpstreamError(err.kind, err.message, { cause: err }), false);
}
