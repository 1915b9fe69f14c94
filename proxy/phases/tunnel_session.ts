/**
 * One open WebSocket tunnel between a client and a backend: the bytes of
 * each side relayed as they come (nothing is parsed, no message is
 * buffered: each chunk is handed on as read, with the readers'
 * backpressure), the pool's `websocket.idle_timeout_ms` (no byte either
 * way) and `websocket.max_duration_ms`, and how it ended, counted once.
 *
 * The backend's side is the response body the server writes to the
 * client; its end is the tunnel's end: the backend ended it (`closed`), it
 * failed (`backend_error`), or the server stopped reading it because the
 * client went away (`client_gone`, or `shutdown` at the end of a drain).
 * The client's side is the request body the transport sends: when it ends
 * the transport half-closes towards the backend, which then ends the
 * tunnel; when it fails the transport resets the backend's stream. A limit
 * that fires ends both sides at once: the backend's stream is reset (or its
 * connection closed), the client's stream ends with the response.
 *
 * @example
 * ```ts
 * import type { IncomingRequest } from "../server/types.ts";
 * import type { UpstreamResponse } from "../upstream/transport.ts";
 * import { WebSocketCounters } from "../metrics/websockets.ts";
 * declare const req: IncomingRequest;
 * declare const answer: UpstreamResponse; // the backend's 2xx, its body the backend's side
 *
 * const session = new TunnelSession({
 *   pool: "chat", idleTimeoutMs: 300_000, counters: new WebSocketCounters(), signal: req.signal,
 * });
 * const toBackend = session.clientSide(req.body!); // sent by the transport
 * const toClient = session.backendSide(answer.body as ReadableStream<Uint8Array>);
 * ```
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import { type IdleWatch, idleWatch } from "../../shared/deadline.ts";
import type { WebSocketCounters, WebSocketOutcome } from "../metrics/websockets.ts";
import { requestEnd } from "../server/request_end.ts";

const log = getLogger(["proxy", "websocket"]);

/** Why a limit ended a tunnel: the error both of its sides end with. */
export class TunnelLimit extends Error {
  /** `outcome`: the limit that fired. */
  constructor(readonly outcome: "idle_timeout" | "max_duration", ms: number) {
    super(
      outcome === "idle_timeout"
        ? `the WebSocket carried nothing for ${ms} ms (websocket.idle_timeout_ms)`
        : `the WebSocket was open for ${ms} ms (websocket.max_duration_ms)`,
    );
    this.name = "TunnelLimit";
  }
}

/** What a session is built from. */
export interface TunnelSessionOptions {
  /** The pool, for the counters and the log. */
  readonly pool: string;
  /** `websocket.idle_timeout_ms`. */
  readonly idleTimeoutMs: number;
  /** `websocket.max_duration_ms`; absent: no limit. */
  readonly maxDurationMs?: number;
  /** Where the tunnel is counted (open now, and how it ended). */
  readonly counters: WebSocketCounters;
  /** The request's end signal: why the client's side went away. */
  readonly signal: AbortSignal;
}

/** One tunnel; see the module docs. */
export class TunnelSession {
  readonly #opts: TunnelSessionOptions;
  readonly #idle: IdleWatch;
  readonly #timer: ReturnType<typeof setTimeout> | undefined;
  #ended = false;
  #open = false;
  /** Ends both sides at once (set once both are wrapped). */
  readonly #stops: Array<(err: Error) => void> = [];

  /** Starts the limits' clocks; the tunnel counts as open once {@link opened} is called. */
  constructor(opts: TunnelSessionOptions) {
    this.#opts = opts;
    this.#idle = idleWatch(opts.idleTimeoutMs, () => this.#limit("idle_timeout"));
    this.#idle.pause();
    this.#timer = opts.maxDurationMs === undefined
      ? undefined
      : setTimeout(() => this.#limit("max_duration"), opts.maxDurationMs);
  }

  /** Whether the tunnel has ended. */
  get ended(): boolean {
    return this.#ended;
  }

  /** The backend answered with a 2xx: the tunnel is open (counted until it ends). */
  opened(): void {
    if (this.#ended || this.#open) return;
    this.#open = true;
    this.#opts.counters.opened(this.#opts.pool);
    this.#idle.touch();
  }

  /**
   * The client's side as the transport reads it: each chunk handed on as
   * read (touching the idle clock); its end is the client's half-close.
   */
  clientSide(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
    return this.#relay(body, () => {});
  }

  /**
   * The backend's side as the server writes it to the client; how it ends
   * is how the tunnel ends (see the module docs).
   */
  backendSide(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
    return this.#relay(body, (how) => this.end(how));
  }

  /**
   * The tunnel never opened, or ended: counted once with `outcome`; a limit
   * or end still running stops.
   */
  end(outcome: WebSocketOutcome): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#idle.cancel();
    clearTimeout(this.#timer);
    this.#opts.counters.ended(this.#opts.pool, outcome, this.#open);
    if (this.#open) {
      log.debug("WebSocket of pool {pool} ended: {outcome}", { pool: this.#opts.pool, outcome });
    }
  }

  /** A limit fired: both sides end with it. */
  #limit(outcome: "idle_timeout" | "max_duration"): void {
    if (this.#ended) return;
    const ms = outcome === "idle_timeout" ? this.#opts.idleTimeoutMs : this.#opts.maxDurationMs!;
    log.info("closing a WebSocket of pool {pool}: {why}", {
      pool: this.#opts.pool,
      why: new TunnelLimit(outcome, ms).message,
    });
    this.end(outcome);
    const err = new TunnelLimit(outcome, ms);
    for (const stop of this.#stops) stop(err);
  }

  /**
   * `body` relayed chunk by chunk; `done` hears how it ended: `closed`
   * (its end), `backend_error` (it failed), or the client's end (its
   * reader cancelled it: `client_gone`, or `shutdown`).
   */
  #relay(
    body: ReadableStream<Uint8Array>,
    done: (how: WebSocketOutcome) => void,
  ): ReadableStream<Uint8Array> {
    const reader = body.getReader();
    let ctrl: ReadableStreamDefaultController<Uint8Array> | undefined;
    const stop = (err: Error) => {
      reader.cancel(err).catch(() => {});
      try {
        ctrl?.error(err);
      } catch { /* already closed */ }
    };
    this.#stops.push(stop);
    return new ReadableStream<Uint8Array>({
      start: (c) => void (ctrl = c),
      pull: async (c) => {
        let r: ReadableStreamReadResult<Uint8Array>;
        try {
          r = await reader.read();
        } catch (err) {
          if (this.#ended) return; // a limit ended it (the stream errored already)
          c.error(err);
          // The client's side failing resets the backend's: the client's doing.
          return done(this.#opts.signal.aborted ? this.#clientEnd() : "backend_error");
        }
        if (r.done) {
          c.close();
          return done("closed");
        }
        this.#idle.touch();
        c.enqueue(r.value);
      },
      cancel: (reason) => {
        reader.cancel(reason).catch(() => {});
        done(this.#clientEnd());
      },
    }, { highWaterMark: 0 });
  }

  /** How the client's side ended: the proxy's drain closed it, or the client went. */
  #clientEnd(): WebSocketOutcome {
    return requestEnd(this.#opts.signal) === "shutdown" ? "shutdown" : "client_gone";
  }
}
