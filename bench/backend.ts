/**
 * The neutral backend of the benchmark (issue #8): an HTTP/2 server speaking
 * h2c with prior knowledge (`Deno.serve` on plain TCP accepts it), run in its
 * own process so that its CPU is never counted as the proxy's.
 *
 *     deno run -A bench/backend.ts [--port 0]
 *
 * Prints `Listening on 127.0.0.1:<port>` once bound. Routes:
 *
 * - `GET /` : a fixed 100-byte text body.
 * - `GET /bytes/<n>` : `n` bytes, streamed in 64 KiB chunks (never one buffer).
 * - `POST /sink` : reads the request body as a stream, answers its byte count.
 * - `GET /ws` with `Upgrade: websocket` (HTTP/1.1): a WebSocket echoing every message.
 *
 * @module
 */
// deno-lint-ignore-file no-console

import { parseArgs } from "node:util";

/** The fixed small body (100 bytes). */
export const SMALL_BODY: Uint8Array<ArrayBuffer> = new TextEncoder().encode(
  "spooky benchmark backend: a fixed body for the small-response test".padEnd(99, ".") + "\n",
);

const CHUNK = 64 * 1024;

/** A stream of `n` bytes in {@link CHUNK}-sized pieces, produced on demand. */
export function byteStream(n: number): ReadableStream<Uint8Array> {
  const pattern = new Uint8Array(CHUNK).map((_, i) => 97 + (i % 26));
  let left = n;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (left <= 0) {
        controller.close();
        return;
      }
      const size = Math.min(CHUNK, left);
      left -= size;
      // a fresh copy: the runtime may hold the chunk after enqueue
      controller.enqueue(pattern.slice(0, size));
    },
  }, { highWaterMark: 0 });
}

/** The request handler (exported for a smoke test). */
export async function handle(req: Request): Promise<Response> {
  const url = new URL(req.url);
  if (url.pathname === "/ws" && req.headers.get("upgrade")?.toLowerCase() === "websocket") {
    const { socket, response } = Deno.upgradeWebSocket(req);
    socket.onmessage = (e) => socket.send(e.data);
    return response;
  }
  if (url.pathname === "/sink") {
    let total = 0;
    if (req.body) {
      for await (const chunk of req.body) total += chunk.length;
    }
    return new Response(`${total}\n`, { headers: { "content-type": "text/plain" } });
  }
  if (url.pathname.startsWith("/bytes/")) {
    const n = Number(url.pathname.slice("/bytes/".length));
    if (!Number.isSafeInteger(n) || n < 0) return new Response("bad size\n", { status: 400 });
    return new Response(byteStream(n), {
      headers: { "content-type": "application/octet-stream", "content-length": String(n) },
    });
  }
  return new Response(SMALL_BODY, { headers: { "content-type": "text/plain" } });
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: { port: { type: "string", default: "0" } },
  });
  Deno.serve({
    hostname: "127.0.0.1",
    port: Number(values.port),
    onListen: ({ hostname, port }) => console.log(`Listening on ${hostname}:${port}`),
  }, handle);
}
