/**
 * The Alt-Svc fallback: the same proxy application served over TCP+TLS
 * (HTTP/2 and HTTP/1.1 via `Deno.serve`) on the same port number, with
 * `alt-svc: h3=":<port>"; ma=86400` on every response so that ordinary
 * clients get through and browsers discover HTTP/3 (RFC 7838, RFC 9114 §3.1.1).
 *
 * @module
 */

import { idleWatch } from "../../shared/deadline.ts";
import { type RequestHead, responseHasNoBody } from "../http/mod.ts";
import { errorResponse } from "./error_response.ts";
import { StreamShare } from "./stream_share.ts";
import type { IncomingRequest, OutgoingResponse, RequestHandler, RequestRecord } from "./types.ts";

/** Options of {@link tcpFallbackHandler}. */
export interface TcpFallbackOptions {
  /**
   * Called once per request when its response is done (sent, cut, or the
   * client left): the same finished-request sink the HTTP/3 server feeds.
   */
  done?: (record: RequestRecord) => void;
  /**
   * Requests one TCP connection may have in flight to one pool (HTTP/2
   * multiplexes many; see `stream_share.ts`). Default: no limit.
   */
  maxBackendStreamsPerConnection?: number;
  /**
   * A response body the client takes none of for this long (ms) is cut and
   * its backend stream reset, as on HTTP/3. Default: no bound.
   */
  writeStallMs?: number;
}

/**
 * Adapts the proxy handler to `Deno.serve`.
 *
 * `request.signal` is read (it is how the backend exchange learns that the
 * client left): the project runs with `--unstable-no-legacy-abort`
 * (deno.json `unstable`), so it aborts only when the client goes away, not
 * after every successful response, and Deno prints no warning about it.
 *
 * @example
 * ```ts
 * import type { RequestHandler, RequestRecord } from "./types.ts";
 * declare const handler: RequestHandler;
 * declare const finished: (record: RequestRecord) => void;
 * const port = 9889;
 * const cert = await Deno.readTextFile(".dev/certs/cert.pem");
 * const key = await Deno.readTextFile(".dev/certs/key.pem");
 *
 * Deno.serve({ port, cert, key }, tcpFallbackHandler(handler, port, { done: finished }));
 * ```
 */
export function tcpFallbackHandler(
  handler: RequestHandler,
  h3Port: number,
  opts: TcpFallbackOptions = {},
): (req: Request, info: Deno.ServeHandlerInfo) => Promise<Response> {
  const altSvc = `h3=":${h3Port}"; ma=86400`;
  const done = opts.done;
  const stallMs = opts.writeStallMs;
  const share = opts.maxBackendStreamsPerConnection;
  /** Each connection's share (by the peer's `host:port`), while it has requests. */
  const connections = new Map<string, StreamShare>();
  let nextId = 0;
  return async (req, info) => {
    const started = performance.now();
    const target = requestTarget(req.url);
    const fields: Array<[string, string]> = [];
    for (const [name, value] of req.headers) fields.push([name, value]);
    const declared = req.headers.get("content-length");
    const head: RequestHead = {
      method: req.method,
      scheme: "https",
      authority: req.headers.get("host") ?? target.authority,
      path: target.path,
      fields,
      contentLength: declared !== null && /^\d+$/.test(declared) ? Number(declared) : undefined,
    };
    const addr = info.remoteAddr as Deno.NetAddr;
    const remote = { hostname: addr.hostname, port: addr.port };
    let claimBackendStream: IncomingRequest["claimBackendStream"];
    if (share !== undefined) {
      // One share per TCP connection (HTTP/2 multiplexes many requests).
      const conn = `${addr.hostname}:${addr.port}`;
      const id = nextId++;
      let shares = connections.get(conn);
      if (shares === undefined) {
        shares = new StreamShare(share);
        connections.set(conn, shares);
      }
      const mine = shares;
      claimBackendStream = (key, waitMs) => mine.claim(id, key, waitMs, req.signal);
      const release = () => {
        mine.release(id);
        if (mine.size === 0 && connections.get(conn) === mine) connections.delete(conn);
      };
      info.completed.then(release, release);
    }
    let res: OutgoingResponse;
    try {
      res = await handler({
        head,
        body: req.body,
        remote,
        listener: "tcp",
        signal: req.signal,
        claimBackendStream,
      });
    } catch {
      res = errorResponse(500, "internal_error", "internal proxy error");
    }
    let bytes = 0;
    let outcome: RequestRecord["outcome"] = "complete";
    // Told once the response is done (sent, cut, or the client left): set up
    // before anything else, so that whatever follows, it is told.
    const finished = res.finished;
    if (done !== undefined || finished !== undefined) {
      const report = () => {
        const record: RequestRecord = {
          listener: "tcp",
          streamId: 0,
          remote,
          method: head.method,
          authority: head.authority,
          path: head.path ?? "",
          status: res.status,
          bytes,
          durationMs: performance.now() - started,
          backend: res.backend,
          upstreamMs: res.upstreamMs,
          failure: res.failure,
          rateLimit: res.rateLimit,
          outcome,
        };
        // The response's own listeners (a backend slot among them) run whatever the sink does.
        try {
          done?.(record);
        } finally {
          finished?.(record);
        }
      };
      info.completed.then(report, () => {
        if (outcome === "complete") outcome = "aborted";
        report();
      });
    }
    const headers = new Headers();
    for (const [name, value] of res.headers) headers.append(name, value);
    headers.set("alt-svc", altSvc);
    let body: BodyInit | null = null;
    if (!responseHasNoBody(req.method, res.status)) {
      if (res.body instanceof Uint8Array) {
        body = res.body as Uint8Array<ArrayBuffer>;
        bytes = res.body.length;
      } else if (
        res.body instanceof ReadableStream && (done !== undefined || stallMs !== undefined)
      ) {
        // Counted as it goes: the sink learns how much was sent and whether
        // the body ended, broke, or was dropped by a client that left. A
        // client that takes nothing for writeStallMs (no pull) is cut, and
        // the backend stream with it.
        const reader = res.body.getReader();
        let ctrl: ReadableStreamDefaultController<Uint8Array> | undefined;
        const stall = stallMs === undefined ? undefined : idleWatch(stallMs, () => {
          outcome = "broken";
          const err = new Error(`the client accepted no response data for ${stallMs} ms`);
          reader.cancel(err).catch(() => {});
          try {
            ctrl?.error(err);
          } catch {
            // already closed
          }
        });
        stall?.pause();
        body = new ReadableStream<Uint8Array>({
          start(controller) {
            ctrl = controller;
          },
          async pull(controller) {
            stall?.pause();
            try {
              const r = await reader.read();
              if (r.done) {
                stall?.cancel();
                controller.close();
              } else {
                bytes += r.value.length;
                controller.enqueue(r.value);
                stall?.touch();
              }
            } catch (err) {
              stall?.cancel();
              outcome = "broken";
              controller.error(err);
            }
          },
          cancel(reason) {
            stall?.cancel();
            outcome = "aborted";
            return reader.cancel(reason);
          },
        }, { highWaterMark: 0 });
      } else {
        body = res.body as BodyInit | null;
      }
    } else if (res.body instanceof ReadableStream) {
      res.body.cancel().catch(() => {});
    }
    return new Response(body, { status: res.status, headers });
  };
}

/**
 * Authority and path (query included) of `Deno.serve`'s request URL. An
 * authority no URL parser accepts (`Host: localhost:99999`) is split off by
 * hand, so that the application answers it 400 like any impossible
 * authority instead of the parse failing into a 500.
 */
function requestTarget(href: string): { authority: string; path: string } {
  try {
    const url = new URL(href);
    return { authority: url.host, path: url.pathname + url.search };
  } catch {
    const start = href.indexOf("//") + 2;
    const slash = href.indexOf("/", start);
    return slash === -1
      ? { authority: href.slice(start), path: "/" }
      : { authority: href.slice(start, slash), path: href.slice(slash) };
  }
}
