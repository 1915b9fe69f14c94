/**
 * {@link UpstreamTransport} on `node:http2` in this thread: one pooled
 * HTTP/2 session (h2c, prior knowledge) per backend address.
 *
 * Why not `fetch`: measured on Deno 2.9.6, `fetch` adds `user-agent: Deno/…`,
 * `accept`, `accept-language` and `accept-encoding` to requests that lack
 * them, refuses methods such as TRACE, and decodes gzip and br bodies while
 * keeping their `content-encoding`. A proxy must forward what it was sent;
 * `node:http2` sends exactly the fields it is given, leaves bodies as they
 * are, exposes trailers, and costs the same per request.
 *
 * @module
 */

import http2 from "node:http2";
import { concatBytes } from "../../shared/bytes.ts";
import { containNodeHttp2Errors } from "./contain_http2.ts";
import { responseHasNoBody } from "../h3/fields.ts";
import { type IdleWatch, idleWatch } from "../../shared/deadline.ts";
import {
  abortedError,
  UpstreamError,
  type UpstreamFailureKind,
  type UpstreamRequest,
  type UpstreamResponse,
  type UpstreamTransport,
} from "./transport.ts";

/** Bodies with a declared length up to this are collected and returned whole. */
export const WHOLE_BODY_LIMIT = 64 * 1024;

/** How long a stream that ended without its head yet waits for the head event (ms). */
const LATE_HEAD_MS = 50;

/**
 * A pooled session without streams for this long is closed (ms). Backends
 * close idle connections too (payments after 60 s by default); closing ours
 * first means no request is ever sent on a connection the backend is closing.
 */
export const SESSION_IDLE_MS = 30_000;

/** Whole request bodies larger than this are written in pieces of this size. */
const WRITE_PIECE = 16 * 1024;

/** Response body bytes buffered ahead of the reader before the backend is paused. */
const RESPONSE_HIGH_WATER = 256 * 1024;

const { NGHTTP2_CANCEL, NGHTTP2_REFUSED_STREAM } = http2.constants;

interface Pooled {
  session: http2.ClientHttp2Session;
  /** Set once the TCP connection and preface are up: failures before it are `connect`. */
  connected: boolean;
  /** Streams open on the session. */
  active: number;
  /** Released: closed once its last stream is done (Deno's close() would cut them). */
  released: boolean;
  /** Closes the session once it has been without streams for {@link SESSION_IDLE_MS}. */
  idle: IdleWatch | null;
}

/** Options of {@link createHttp2Transport}. */
export interface Http2TransportOptions {
  /** Opens a session (tests inject failures); default `http2.connect`. */
  connect?: (authority: string) => http2.ClientHttp2Session;
}

/** Maps a node error of a stream or session to a failure kind. */
function classify(err: unknown, pooled: Pooled | undefined): UpstreamFailureKind {
  const e = err as { code?: string; message?: string } | undefined;
  const code = e?.code ?? "";
  if (/^(ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|ENETUNREACH|EAI_AGAIN|EADDRNOTAVAIL)$/.test(code)) {
    return "connect";
  }
  if (code === "ERR_HTTP2_GOAWAY_SESSION") return "connect"; // never sent: the session was going away
  if (pooled !== undefined && !pooled.connected) return "connect";
  if (code === "ERR_HTTP2_STREAM_ERROR" && /REFUSED_STREAM/.test(e?.message ?? "")) {
    return "connect"; // RFC 9113 §8.7: not processed, safe to retry
  }
  if (/PROTOCOL|ERR_HTTP2_(INVALID|HEADER|SESSION_ERROR|ERROR)/.test(code)) return "protocol";
  return "reset";
}

/** The node header object of a request: pseudo-headers first, repeated names as arrays. */
function requestHeaders(req: UpstreamRequest): http2.OutgoingHttpHeaders {
  const out: http2.OutgoingHttpHeaders = {
    ":method": req.method,
    ":scheme": "http",
    ":path": req.path,
  };
  if (req.authority !== undefined) out[":authority"] = req.authority;
  return addFields(out, req.headers);
}

/** Adds `fields` to a node header object, repeated names as arrays. */
function addFields(
  out: http2.OutgoingHttpHeaders,
  fields: ReadonlyArray<readonly [string, string]>,
): http2.OutgoingHttpHeaders {
  for (const [name, value] of fields) {
    const prior = out[name];
    if (prior === undefined) out[name] = value;
    else if (Array.isArray(prior)) prior.push(value);
    else out[name] = [String(prior), value];
  }
  return out;
}

/** Node's incoming header object as a field list (pseudo-headers dropped). */
function responseFields(headers: http2.IncomingHttpHeaders): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const name in headers) {
    if (name.charCodeAt(0) === 0x3a /* ':' */) continue;
    const value = headers[name];
    if (value === undefined) continue;
    if (Array.isArray(value)) { for (const v of value) out.push([name, v]); }
    else out.push([name, String(value)]);
  }
  return out;
}

/**
 * Creates the in-process transport.
 *
 * @example
 * ```ts
 * const upstream = createHttp2Transport();
 * const res = await upstream.exchange({
 *   address: "127.0.0.1:8080", method: "GET", path: "/", authority: "example.com",
 *   headers: [], body: null, timeoutMs: 30_000,
 * });
 * ```
 */
export function createHttp2Transport(opts: Http2TransportOptions = {}): UpstreamTransport {
  containNodeHttp2Errors();
  const connect = opts.connect ??
    ((authority: string) =>
      // No server push (RFC 9113 §8.4): a PUSH_PROMISE is then a connection
      // error PROTOCOL_ERROR, which fails that session's streams as `protocol`.
      http2.connect(`http://${authority}`, { settings: { enablePush: false } }));
  const pool = new Map<string, Pooled>();
  /** Fails each exchange still open (for close()). */
  const live = new Set<() => void>();
  let closed = false;

  const session = (address: string): Pooled => {
    const existing = pool.get(address);
    if (existing && !existing.session.closed && !existing.session.destroyed) return existing;
    const s = connect(address);
    const pooled: Pooled = {
      session: s,
      connected: false,
      active: 0,
      released: false,
      idle: null,
    };
    const forget = () => {
      if (pool.get(address) === pooled) pool.delete(address);
    };
    s.once("connect", () => pooled.connected = true);
    // A pushed stream is never wanted; one nobody listens to would turn the
    // session's death into an uncaught exception (contain_http2.ts).
    s.on("stream", (pushed: http2.ClientHttp2Stream) => {
      pushed.on("error", () => {});
      pushed.close(NGHTTP2_REFUSED_STREAM);
    });
    // A session error also fails its streams, which report it themselves.
    s.on("error", forget);
    s.once("goaway", forget);
    s.once("close", forget);
    pool.set(address, pooled);
    return pooled;
  };

  const exchange = (req: UpstreamRequest): Promise<UpstreamResponse> => {
    if (closed) return Promise.reject(new UpstreamError("aborted", "upstream transport closed"));
    if (req.signal?.aborted) {
      return Promise.reject(
        abortedError(req.signal),
      );
    }
    const { promise, resolve, reject } = Promise.withResolvers<UpstreamResponse>();
    let pooled: Pooled | undefined;
    let stream: http2.ClientHttp2Stream;
    const address = req.address;
    try {
      pooled = session(req.address);
      // A body that may be followed by trailers: node waits for them
      // ("wantTrailers"); none sends an empty END_STREAM instead.
      const waitForTrailers = req.body !== null && req.trailers !== undefined;
      stream = pooled.session.request(requestHeaders(req), {
        endStream: req.body === null,
        waitForTrailers,
      });
      if (waitForTrailers) {
        const s = stream;
        s.once("wantTrailers", () => s.sendTrailers(addFields({}, req.trailers!() ?? [])));
      }
      if (pooled.active++ === 0 && pooled.idle !== null) {
        pooled.idle.cancel();
        pooled.idle = null;
      }
    } catch (err) {
      const kind = pooled === undefined ? "connect" : "local";
      return Promise.reject(
        new UpstreamError(kind, `request cannot be sent: ${(err as Error).message}`, {
          cause: err,
        }),
      );
    }

    // Settled once: head answered (or failed); after that the body stream owns errors.
    let settled = false;
    let bodyController: ReadableStreamDefaultController<Uint8Array> | null = null;
    let collected: Uint8Array[] | null = null;
    const fail = (err: UpstreamError) => {
      watch.cancel();
      req.signal?.removeEventListener("abort", onAbort);
      if (!settled) {
        settled = true;
        reject(err);
      } else if (bodyController !== null) {
        try {
          bodyController.error(err);
        } catch { /* already closed */ }
        bodyController = null;
      }
      if (!stream.closed) stream.close(NGHTTP2_CANCEL);
    };
    // request_timeout_ms: the longest wait for the backend to take more body or to answer.
    const watch = idleWatch(req.timeoutMs, () =>
      fail(
        new UpstreamError("timeout", `backend did not answer within ${req.timeoutMs} ms`),
      ));
    const onAbort = () => fail(abortedError(req.signal!));
    req.signal?.addEventListener("abort", onAbort, { once: true });

    let head: { status: number; headers: Array<[string, string]> } | null = null;
    // Deno 2.9.6's node:http2 may emit a stream's first "data" (and even its
    // "end") before its "response": keep them until the head is known.
    let early: Uint8Array[] | null = [];
    let earlyEnd = false;
    let declaredLength = -1;
    // The backend's trailers: with the head when they came first, else set
    // on the handed response before its body closes ("trailers" precedes "end").
    let trailers: Array<[string, string]> | undefined;
    let handed: UpstreamResponse | null = null;
    stream.on("trailers", (h: http2.IncomingHttpHeaders) => {
      const t = responseFields(h);
      if (handed !== null) handed.trailers = t;
      else trailers = t;
    });
    const settledWhole = (body: Uint8Array | ReadableStream<Uint8Array> | null) => {
      if (settled || head === null) return;
      settled = true;
      const res: UpstreamResponse = { status: head.status, headers: head.headers, body };
      if (trailers !== undefined) res.trailers = trailers;
      if (body instanceof ReadableStream) handed = res;
      resolve(res);
    };
    // The head (and a whole body) is in: the timeout is done. The abort
    // listener stays until the stream closes: a client that leaves while the
    // body streams cancels the backend's stream too.
    const finish = () => watch.cancel();
    const onTransportClose = () => fail(new UpstreamError("aborted", "upstream transport closed"));
    live.add(onTransportClose);

    stream.on("error", (err: unknown) => {
      const kind = classify(err, pooled);
      fail(
        new UpstreamError(kind, `backend ${kind} error: ${(err as Error).message}`, {
          cause: err,
        }),
      );
    });
    const onClose = (late: boolean) => {
      if (!settled && !late && (head === null || collected !== null)) {
        // Deno 2.9.6 may deliver a stream's "close" before its "response",
        // "data" or "end" (the whole answer arrived and the backend then
        // reset the stream, as a server that answers without reading the
        // request body may): give the queued events a moment before calling
        // the stream failed.
        setTimeout(() => onClose(true), LATE_HEAD_MS);
        return;
      }
      if (!settled && collected !== null && complete()) {
        // The whole declared body is in: a reset after it takes nothing away.
        return onEnd(true);
      }
      if (stream.rstCode !== undefined && stream.rstCode !== 0 && (!settled || bodyController)) {
        const kind = stream.rstCode === NGHTTP2_REFUSED_STREAM ? "connect" : "reset";
        fail(new UpstreamError(kind, `backend reset the stream (code ${stream.rstCode})`));
      } else if (!settled) {
        fail(new UpstreamError("reset", "backend closed the stream without an answer"));
      }
    };
    stream.on("close", () => {
      live.delete(onTransportClose);
      req.signal?.removeEventListener("abort", onAbort);
      const p = pooled!;
      if (--p.active === 0) {
        if (p.released) {
          if (!p.session.closed) p.session.close();
        } else {
          p.idle = idleWatch(SESSION_IDLE_MS, () => {
            p.idle = null;
            if (p.active > 0) return;
            if (pool.get(address) === p) pool.delete(address);
            if (!p.session.closed) p.session.close();
          });
        }
      }
      onClose(false);
    });
    stream.on("response", (h: http2.IncomingHttpHeaders) => {
      const status = Number(h[":status"]);
      head = { status, headers: responseFields(h) };
      watch.touch();
      const declared = h["content-length"] === undefined ? -1 : Number(h["content-length"]);
      declaredLength = declared;
      const before = early ?? [];
      early = null;
      if (responseHasNoBody(req.method, status) || declared === 0) {
        // Nothing to read: drain to END_STREAM only to keep the session tidy.
        stream.resume();
        if (earlyEnd) finish();
        else stream.once("end", finish);
        settledWhole(null);
        return;
      }
      if (declared > 0 && declared <= WHOLE_BODY_LIMIT) {
        collected = before;
        if (earlyEnd) onEnd();
        return; // resolved on "end"
      }
      // Streamed: the response body's pace is the reader's from here on.
      finish();
      settledWhole(
        new ReadableStream<Uint8Array>({
          start(c) {
            for (const chunk of before) c.enqueue(chunk);
            if (earlyEnd) c.close();
            else bodyController = c;
          },
          pull() {
            stream.resume();
          },
          cancel() {
            bodyController = null;
            if (!stream.closed) stream.close(NGHTTP2_CANCEL);
          },
        }, { highWaterMark: RESPONSE_HIGH_WATER, size: (c) => c.byteLength }),
      );
    });
    stream.on("data", (chunk: Uint8Array) => {
      watch.touch();
      if (early !== null) {
        early.push(chunk);
        return;
      }
      if (collected !== null) {
        collected.push(chunk);
        return;
      }
      const c = bodyController;
      if (c === null) return;
      c.enqueue(chunk);
      if ((c.desiredSize ?? 1) <= 0) stream.pause();
    });
    const complete = () =>
      collected !== null && collected.reduce((n, c) => n + c.length, 0) === declaredLength;
    const onEnd = (whole = false) => {
      if (early !== null) {
        earlyEnd = true;
        return;
      }
      // Deno 2.9.6 ends a stream the backend reset mid-body with "end" (and
      // rstCode set) rather than an error: the close handler fails it,
      // unless the whole declared body arrived before the reset.
      if (!whole && stream.rstCode !== undefined && stream.rstCode !== 0 && !complete()) return;
      if (collected !== null) {
        const parts = collected;
        collected = null;
        finish();
        const body = parts.length === 1 ? parts[0] : concatBytes(...parts);
        if (head !== null && body.length !== declaredLength) {
          fail(new UpstreamError("protocol", "response body shorter than its content-length"));
          return;
        }
        settledWhole(body);
      } else if (bodyController !== null) {
        bodyController.close();
        bodyController = null;
      }
    };
    stream.on("end", () => onEnd());

    if (req.body instanceof Uint8Array && req.body.length <= WRITE_PIECE) {
      stream.end(req.body);
    } else if (req.body !== null) {
      // A larger whole body goes in pieces: Deno 2.9.6 never frees a buffer
      // handed to end() whose stream is cancelled before it was sent.
      const source = req.body instanceof Uint8Array ? pieces(req.body) : req.body;
      pumpBody(source, stream, watch).catch((err) => {
        if (err instanceof UpstreamError) fail(err);
        else fail(new UpstreamError("aborted", "client request body failed", { cause: err }));
      });
    }
    return promise;
  };

  return {
    exchange,
    release(address) {
      const pooled = pool.get(address);
      if (!pooled) return;
      pool.delete(address);
      pooled.released = true;
      if (pooled.active === 0) pooled.session.close();
    },
    close() {
      closed = true;
      for (const abort of [...live]) abort();
      const all = [...pool.values()];
      pool.clear();
      for (const p of all) p.idle?.cancel();
      return Promise.all(
        all.map((p) =>
          new Promise<void>((resolve) => {
            if (p.session.closed || p.session.destroyed) return resolve();
            p.session.close(() => resolve());
            // In-flight streams would hold close(): past a short grace, cut them.
            setTimeout(() => {
              p.session.destroy();
              resolve();
            }, 1000);
          })
        ),
      ).then(() => {});
    },
  };
}

/** A whole body as a stream of {@link WRITE_PIECE}-byte views (no copy). */
function pieces(body: Uint8Array): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream<Uint8Array>({
    pull(c) {
      if (at >= body.length) return c.close();
      c.enqueue(body.subarray(at, at + WRITE_PIECE));
      at += WRITE_PIECE;
    },
  }, { highWaterMark: 0 });
}

/**
 * Sends a streamed body with backpressure: the next chunk is read only once
 * the backend's flow-control window took the previous one. Each accepted
 * chunk counts as progress for the timeout.
 */
async function pumpBody(
  body: ReadableStream<Uint8Array>,
  stream: http2.ClientHttp2Stream,
  watch: IdleWatch,
): Promise<void> {
  const reader = body.getReader();
  const onGone = () => reader.cancel().catch(() => {});
  stream.once("close", onGone);
  try {
    for (;;) {
      // Waiting on the client, not the backend: the client's own idle
      // timeout bounds this wait (a stalled upload is 408, not 503).
      watch.pause();
      const r = await reader.read();
      watch.touch();
      if (stream.closed || stream.destroyed) return;
      if (r.done) {
        stream.end();
        return;
      }
      if (!stream.write(r.value)) await drained(stream);
      watch.touch();
    }
  } finally {
    stream.off("close", onGone);
    reader.releaseLock();
  }
}

/** Resolves once a node:http2 stream that refused a write drains, or closes. */
export function drained(stream: http2.Http2Stream): Promise<void> {
  return new Promise<void>((resolve) => {
    const go = () => {
      stream.off("drain", go);
      stream.off("close", go);
      resolve();
    };
    stream.on("drain", go);
    stream.on("close", go);
  });
}
