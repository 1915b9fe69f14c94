/**
 * A loopback h2c backend for the upstream transport tests, on `node:http2`
 * for raw control (stalling, never reading, resetting). Each test registers
 * a handler per path; the backend records what it received and how each
 * stream ended.
 *
 * @module
 */

import { concatBytes } from "../../shared/bytes.ts";
import http2 from "node:http2";

/** The longest wait for the test server to close. */
const CLOSE_WAIT_MS = 2_000;
/** What the backend saw of one request stream. */
export interface SeenStream {
  /** The request's field section as received, flat `[name, value, ...]` (pseudo-headers first). */
  readonly raw: readonly string[];
  /** Resolves with the RST_STREAM code once the stream closed (0: closed cleanly). */
  readonly closed: Promise<number>;
}

/** Answers one request stream. */
export type Handler = (stream: http2.ServerHttp2Stream, seen: SeenStream) => void;

/** A running test backend. */
export interface TestBackend {
  /** `127.0.0.1:port`. */
  readonly address: string;
  /** Every stream seen, in arrival order. */
  readonly seen: SeenStream[];
  /** Sessions the backend accepted so far. */
  readonly sessions: http2.ServerHttp2Session[];
  /** Routes requests whose `:path` starts with `prefix` (longest prefix wins). */
  route(prefix: string, handler: Handler): void;
  /** Stops listening and destroys every session. */
  close(): Promise<void>;
}

/** Starts a backend on an ephemeral loopback port. */
export async function startBackend(): Promise<TestBackend> {
  const routes = new Map<string, Handler>();
  const seen: SeenStream[] = [];
  const sessions: http2.ServerHttp2Session[] = [];
  const server = http2.createServer();
  server.on("session", (s: http2.ServerHttp2Session) => {
    sessions.push(s);
    s.on("error", () => {});
  });
  server.on(
    "stream",
    (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, _f, raw?: string[]) => {
      stream.on("error", () => {});
      const closed = new Promise<number>((resolve) =>
        stream.once("close", () => resolve(stream.rstCode ?? 0))
      );
      const entry: SeenStream = { raw: raw ?? flatten(headers), closed };
      seen.push(entry);
      const path = String(headers[":path"] ?? "");
      let best = "";
      for (const prefix of routes.keys()) {
        if (path.startsWith(prefix) && prefix.length > best.length) best = prefix;
      }
      const handler = routes.get(best);
      if (handler === undefined) {
        stream.respond({ ":status": 404 });
        stream.end();
        return;
      }
      handler(stream, entry);
    },
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const { port } = server.address() as { port: number };
  return {
    address: `127.0.0.1:${port}`,
    seen,
    sessions,
    route: (prefix, handler) => void routes.set(prefix, handler),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sessions) if (!s.destroyed) s.destroy();
        // Deno 2.9.6's node:http2 server does not always call back once its
        // sessions are destroyed (seen once in a full parallel run: a test
        // waited here for ever); the wait is bounded.
        const timer = setTimeout(resolve, CLOSE_WAIT_MS);
        server.close(() => {
          clearTimeout(timer);
          resolve();
        });
      }),
  };
}

function flatten(headers: http2.IncomingHttpHeaders): string[] {
  const out: string[] = [];
  for (const [name, value] of Object.entries(headers)) {
    if (Array.isArray(value)) { for (const v of value) out.push(name, v); }
    else if (value !== undefined) out.push(name, String(value));
  }
  return out;
}

/** Reads a request body whole (test helper; bodies here are small). */
export function readAll(stream: http2.ServerHttp2Stream): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const parts: Uint8Array[] = [];
    stream.on("data", (c: Uint8Array) => parts.push(c));
    stream.on("end", () => resolve(concatBytes(...parts)));
    stream.on("error", reject);
  });
}

/** A port on loopback that nothing listens on (bound, then closed). */
export function refusedAddress(): string {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = l.addr as Deno.NetAddr;
  l.close();
  return `127.0.0.1:${port}`;
}

/**
 * A lazily generated body of `total` bytes in `chunk`-byte pieces (each a
 * fresh buffer, since a transport may transfer it); byte i is `i & 0xff`.
 * `onCancel` runs when the consumer cancels it, with the bytes it had taken.
 */
export function generatedBody(
  total: number,
  chunk = 64 * 1024,
  onCancel?: (taken: number) => void,
): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    pull(c) {
      if (sent >= total) return c.close();
      const n = Math.min(chunk, total - sent);
      const buf = new Uint8Array(n);
      for (let i = 0; i < n; i += 256) buf.set(PATTERN.subarray(0, Math.min(256, n - i)), i);
      sent += n;
      c.enqueue(buf);
    },
    cancel: () => onCancel?.(sent),
  }, { highWaterMark: 0 });
}

const PATTERN = Uint8Array.from({ length: 256 }, (_, i) => i);

/** Reads a stream to its end, counting bytes and checking the {@link generatedBody} pattern. */
export async function drainCounting(
  body: ReadableStream<Uint8Array>,
  onChunk?: () => void,
): Promise<{ bytes: number; patternOk: boolean }> {
  let bytes = 0;
  let patternOk = true;
  for await (const c of body) {
    if (
      patternOk && (c[0] !== (bytes & 0xff) || c[c.length - 1] !== ((bytes + c.length - 1) & 0xff))
    ) {
      patternOk = false;
    }
    bytes += c.byteLength;
    onChunk?.();
  }
  return { bytes, patternOk };
}

/** Reads a {@link generatedBody} upload and answers `"<bytes> <pattern intact>"`. */
export function countingSink(stream: http2.ServerHttp2Stream): void {
  let bytes = 0;
  let patternOk = true;
  stream.on("data", (c: Uint8Array) => {
    if (c[0] !== (bytes & 0xff) || c[c.length - 1] !== ((bytes + c.length - 1) & 0xff)) {
      patternOk = false;
    }
    bytes += c.byteLength;
  });
  stream.on("end", () => {
    const answer = new TextEncoder().encode(`${bytes} ${patternOk}`);
    stream.respond({ ":status": 200, "content-length": answer.byteLength });
    stream.end(answer);
  });
}

/** Answers `total` bytes of the {@link generatedBody} pattern, written with backpressure. */
export async function patternSource(
  stream: http2.ServerHttp2Stream,
  total: number,
  progress?: { written: number },
): Promise<void> {
  stream.respond({ ":status": 200, "content-length": total });
  const reader = generatedBody(total).getReader();
  for (;;) {
    const r = await reader.read();
    if (r.done) break;
    if (progress) progress.written += r.value.length;
    if (!stream.write(r.value)) await drained(stream);
    if (stream.closed) return reader.cancel();
  }
  stream.end();
}

/** Resolves once `stream` can take more writes, or has closed. */
function drained(stream: http2.Http2Stream): Promise<void> {
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
