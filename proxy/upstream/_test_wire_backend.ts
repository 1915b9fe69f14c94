/**
 * A loopback backend for the transport conformance suite that speaks either
 * protocol with the same handlers: h2c (`node:http2`) or HTTP/1.1
 * (`node:http`), both through Node's request/response API (HTTP/2's is its
 * compatibility API), so each case is written once. What the backend saw of
 * each request is recorded in a protocol-neutral form, with how the exchange
 * ended at the backend (`complete`, or `cancelled` by the client: an
 * RST_STREAM CANCEL on HTTP/2, the connection closed on HTTP/1.1, which has
 * no other way to cancel).
 *
 * @module
 */

import http from "node:http";
import http2 from "node:http2";
import type { Socket } from "node:net";

/** The protocols of the suite. */
export type Wire = "h2" | "http1";

/** The request as either API gives it: what the two have in common. */
export interface WireRequest {
  readonly url?: string;
  readonly trailers: Record<string, string | string[] | undefined>;
  on(event: "data", fn: (chunk: Uint8Array) => void): unknown;
  on(event: "end", fn: () => void): unknown;
  on(event: "error", fn: (err: Error) => void): unknown;
  pause(): unknown;
  resume(): unknown;
}

/** The response as either API gives it: what the two have in common. */
export interface WireResponse {
  readonly destroyed: boolean;
  readonly writableEnded: boolean;
  writeHead(status: number, headers?: Record<string, string | number>): unknown;
  write(chunk: Uint8Array | string, done?: () => void): boolean;
  end(chunk?: Uint8Array | string): unknown;
  addTrailers(trailers: Record<string, string>): void;
  on(event: "drain" | "close", fn: () => void): unknown;
  off(event: "drain" | "close", fn: () => void): unknown;
}

/** How an exchange ended at the backend. */
export type WireEnd = "complete" | "cancelled" | "reset";

/** What the backend saw of one request. */
export interface WireSeen {
  readonly method: string;
  readonly path: string;
  /** HTTP/2's `:authority`, HTTP/1.1's `Host` (RFC 9112 §3.2: the same thing). */
  readonly authority: string | undefined;
  /** HTTP/2's `:scheme` (HTTP/1.1 sends none). */
  readonly scheme: string | undefined;
  /** The other fields, in order (a `host` field of an HTTP/2 request included). */
  readonly fields: ReadonlyArray<readonly [string, string]>;
  /**
   * Resolves once the exchange is over at the backend: `complete` (its
   * response was sent whole), `cancelled` (the client reset the stream with
   * CANCEL, or closed the HTTP/1.1 connection, before that), `reset` (reset
   * with another code).
   */
  readonly ended: Promise<WireEnd>;
}

/** Answers one request. */
export type WireHandler = (req: WireRequest, res: WireResponse, seen: WireSeen) => void;

/** A running backend. */
export interface WireBackend {
  readonly wire: Wire;
  /** `127.0.0.1:port`. */
  readonly address: string;
  /** Every request seen, in arrival order. */
  readonly seen: WireSeen[];
  /** Connections accepted so far (HTTP/2 sessions, HTTP/1.1 sockets). */
  readonly connections: number;
  /** Resolves once connection `i` (in accept order) has closed. */
  connectionClosed(i: number): Promise<void>;
  /** Routes requests whose path starts with `prefix` (longest prefix wins). */
  route(prefix: string, handler: WireHandler): void;
  /** Breaks the exchange off: RST_STREAM INTERNAL_ERROR, or the HTTP/1.1 connection closed. */
  reset(req: WireRequest): void;
  /** Stops listening and closes every connection. */
  close(): Promise<void>;
}

/** The longest wait for a test server to close. */
const CLOSE_WAIT_MS = 2_000;

/** Starts a backend of `wire` on an ephemeral loopback port. */
export async function startWireBackend(wire: Wire): Promise<WireBackend> {
  const routes = new Map<string, WireHandler>();
  const seen: WireSeen[] = [];
  const closed: Array<Promise<void>> = [];
  const destroyers: Array<() => void> = [];
  const onRequest = (
    req: http.IncomingMessage | http2.Http2ServerRequest,
    res: http.ServerResponse | http2.Http2ServerResponse,
  ) => {
    const entry = wire === "h2"
      ? seenH2(req as http2.Http2ServerRequest)
      : seenH1(req as http.IncomingMessage, res as http.ServerResponse);
    seen.push(entry);
    const path = entry.path;
    let best = "";
    for (const prefix of routes.keys()) {
      if (path.startsWith(prefix) && prefix.length > best.length) best = prefix;
    }
    const handler = routes.get(best);
    if (handler === undefined) {
      res.writeHead(404, { "content-length": 0 });
      res.end();
      return;
    }
    handler(req as WireRequest, res as unknown as WireResponse, entry);
  };
  const server = wire === "h2" ? http2.createServer() : http.createServer();
  server.on("request", onRequest);
  if (wire === "h2") {
    server.on("session", (s: http2.ServerHttp2Session) => {
      s.on("error", () => {});
      closed.push(new Promise((r) => s.once("close", () => r())));
      destroyers.push(() => s.destroy());
    });
  } else {
    (server as http.Server).keepAliveTimeout = 60_000;
    server.on("connection", (s: Socket) => {
      s.on("error", () => {});
      closed.push(new Promise((r) => s.once("close", () => r())));
      destroyers.push(() => s.destroy());
    });
  }
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const { port } = server.address() as { port: number };
  return {
    wire,
    address: `127.0.0.1:${port}`,
    seen,
    get connections() {
      return closed.length;
    },
    connectionClosed: (i) => closed[i],
    route: (prefix, handler) => void routes.set(prefix, handler),
    reset(req) {
      if (wire === "h2") {
        (req as unknown as http2.Http2ServerRequest).stream.close(
          http2.constants.NGHTTP2_INTERNAL_ERROR,
        );
      } else (req as unknown as http.IncomingMessage).socket.destroy();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const destroy of destroyers) destroy();
        // Deno's node:http2 server does not always call back once its
        // sessions are destroyed: the wait is bounded.
        const timer = setTimeout(resolve, CLOSE_WAIT_MS);
        server.close(() => {
          clearTimeout(timer);
          resolve();
        });
      }),
  };
}

function seenH2(req: http2.Http2ServerRequest): WireSeen {
  const stream = req.stream;
  stream.on("error", () => {});
  const raw = req.rawHeaders;
  const pseudo = new Map<string, string>();
  const fields: Array<[string, string]> = [];
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i].startsWith(":")) pseudo.set(raw[i], raw[i + 1]);
    else fields.push([raw[i], raw[i + 1]]);
  }
  const ended = new Promise<WireEnd>((resolve) =>
    stream.once("close", () => {
      const code = stream.rstCode ?? 0;
      resolve(
        code === 0 ? "complete" : code === http2.constants.NGHTTP2_CANCEL ? "cancelled" : "reset",
      );
    })
  );
  return {
    method: pseudo.get(":method") ?? "",
    path: pseudo.get(":path") ?? "",
    authority: pseudo.get(":authority"),
    scheme: pseudo.get(":scheme"),
    fields,
    ended,
  };
}

function seenH1(req: http.IncomingMessage, res: http.ServerResponse): WireSeen {
  const raw = req.rawHeaders;
  const fields: Array<[string, string]> = [];
  let authority: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i].toLowerCase();
    if (name === "host" && authority === undefined) authority = raw[i + 1];
    else fields.push([name, raw[i + 1]]);
  }
  const ended = new Promise<WireEnd>((resolve) => {
    res.once("finish", () => resolve("complete"));
    req.socket.once("close", () => resolve("cancelled"));
  });
  return {
    method: req.method ?? "",
    path: req.url ?? "",
    authority,
    scheme: undefined,
    fields,
    ended,
  };
}

/** Reads a request body whole (bodies here are small). */
export function readBody(req: WireRequest): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const parts: Uint8Array[] = [];
    req.on("data", (c: Uint8Array) => parts.push(c));
    req.on("end", () => resolve(new Uint8Array(Buffer.concat(parts))));
    req.on("error", reject);
  });
}

/** Reads a `generatedBody` upload and answers `"<bytes> <pattern intact>"`. */
export function countingSink(req: WireRequest, res: WireResponse): void {
  let bytes = 0;
  let patternOk = true;
  req.on("data", (c: Uint8Array) => {
    if (c[0] !== (bytes & 0xff) || c[c.length - 1] !== ((bytes + c.length - 1) & 0xff)) {
      patternOk = false;
    }
    bytes += c.byteLength;
  });
  req.on("end", () => {
    const answer = `${bytes} ${patternOk}`;
    res.writeHead(200, { "content-length": answer.length });
    res.end(answer);
  });
}

/** Answers `total` bytes of the `generatedBody` pattern, written with backpressure. */
export async function patternSource(
  res: WireResponse,
  total: number,
  progress?: { written: number },
  chunk = 64 * 1024,
): Promise<void> {
  res.writeHead(200, { "content-length": total });
  const pattern = Uint8Array.from({ length: chunk }, (_, i) => i & 0xff);
  for (let sent = 0; sent < total;) {
    const n = Math.min(chunk, total - sent);
    sent += n;
    if (progress) progress.written += n;
    if (!res.write(pattern.slice(0, n))) await drained(res);
    if (res.destroyed || res.writableEnded) return;
  }
  res.end();
}

/** Resolves once `res` can take more writes, or has closed. */
function drained(res: WireResponse): Promise<void> {
  return new Promise<void>((resolve) => {
    const go = () => {
      res.off("drain", go);
      res.off("close", go);
      resolve();
    };
    res.on("drain", go);
    res.on("close", go);
  });
}
