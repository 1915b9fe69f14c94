/**
 * The runtime's floor for `deno task bench` (issue #14): the least an HTTP/3 →
 * HTTP/2 forwarder on Deno's QUIC API can do per request. Spooky's cost above
 * this server's is ours, not Deno's.
 *
 *     deno run -A bench/floor.ts --cert cert.pem --key key.pem --backend 127.0.0.1:PORT \
 *       [--port 0] [--worker | --node-http2 | --http1]
 *
 * Per connection it opens the HTTP/3 control stream (SETTINGS) and the two
 * QPACK streams and keeps their writers for the connection's life
 * (docs/architecture.md §4), and drains the peer's unidirectional streams unparsed. Per request
 * stream it reads the request to its end without parsing it, `fetch`es `/` of
 * the backend over one pooled h2c client, and answers a fixed `:status 200`
 * HEADERS frame (encoded once) and one DATA frame with the backend's body, in
 * one write. No routing, no validation, no streaming: bodies are read whole.
 *
 * `--worker` moves `fetch` to one Worker (`bench/floor_worker.ts`): the QUIC
 * thread posts a request id, the worker answers with the body's buffer
 * (transferred, not copied). `--node-http2` uses the built-in `node:http2`
 * client (one session) instead of `fetch`: the floor of Deno's other HTTP/2
 * client (docs/architecture.md §8, "Why an HTTP/2 client of our own").
 *
 * Prints `Listening on 127.0.0.1:<port>` once bound.
 *
 * @module
 */
// deno-lint-ignore-file no-console

import http2 from "node:http2";
import { parseArgs } from "node:util";
import { concatBytes } from "../shared/bytes.ts";
import {
  encodeFrame,
  encodeFrameHeader,
  encodeSettingsFrame,
  FrameType,
} from "../proxy/h3/frames.ts";
import { QpackEncoder } from "../proxy/h3/qpack/encoder.ts";
import { SettingId } from "../proxy/h3/settings.ts";
import { StreamType } from "../proxy/h3/streams.ts";

/** Fetches the backend's body; one implementation per variant. */
type Upstream = () => Promise<Uint8Array>;

/** `fetch` in this thread over one pooled h2c client, or the HTTP/1.1 keep-alive pool. */
function inProcess(url: string, http1 = false): Upstream {
  const client = Deno.createHttpClient({ http1, http2: !http1 });
  return async () => new Uint8Array(await (await fetch(url, { client })).arrayBuffer());
}

/** The `node:http2` client in this thread over one session. */
function nodeHttp2(backend: string): Upstream {
  const session = http2.connect(`http://${backend}`);
  session.on("error", () => {});
  return () =>
    new Promise((resolve, reject) => {
      const req = session.request({ ":method": "GET", ":path": "/" });
      const chunks: Uint8Array[] = [];
      req.on("data", (c: Uint8Array) => chunks.push(c));
      req.on("end", () => resolve(chunks.length === 1 ? chunks[0] : concatBytes(...chunks)));
      req.on("error", reject);
      req.end();
    });
}

/** `fetch` on one Worker; request ids out, transferred body buffers back. */
function onWorker(url: string): Upstream {
  const worker = new Worker(new URL("./floor_worker.ts", import.meta.url), { type: "module" });
  worker.postMessage(url);
  const waiting = new Map<number, PromiseWithResolvers<Uint8Array>>();
  let next = 0;
  worker.onmessage = (e: MessageEvent<[number, ArrayBuffer | string]>) => {
    const [id, body] = e.data;
    const w = waiting.get(id);
    if (!w) return;
    waiting.delete(id);
    if (typeof body === "string") w.reject(new Error(body));
    else w.resolve(new Uint8Array(body));
  };
  return () => {
    const id = next++;
    const w = Promise.withResolvers<Uint8Array>();
    waiting.set(id, w);
    worker.postMessage(id);
    return w.promise;
  };
}

// Pre-encoded once: stream type + SETTINGS, and the response HEADERS frame.
const CONTROL = new Uint8Array([
  StreamType.CONTROL,
  ...encodeSettingsFrame(new Map([[SettingId.QPACK_MAX_TABLE_CAPACITY, 0]])),
]);
const HEADERS = encodeFrame(
  FrameType.HEADERS,
  new QpackEncoder().encodeSection([[":status", "200"]]),
);

/** HEADERS + DATA(body) in one buffer. */
function response(body: Uint8Array): Uint8Array {
  const dataHeader = encodeFrameHeader(FrameType.DATA, body.length);
  const out = new Uint8Array(HEADERS.length + dataHeader.length + body.length);
  out.set(HEADERS, 0);
  out.set(dataHeader, HEADERS.length);
  out.set(body, HEADERS.length + dataHeader.length);
  return out;
}

async function drain(stream: ReadableStream<Uint8Array>): Promise<void> {
  const reader = stream.getReader();
  while (!(await reader.read()).done) { /* discard */ }
}

async function serveRequest(s: Deno.QuicBidirectionalStream, upstream: Upstream): Promise<void> {
  const writer = s.writable.getWriter();
  try {
    await drain(s.readable);
    await writer.write(response(await upstream()));
    await writer.close();
  } catch {
    // client gone or backend failed: the request stays unanswered
    writer.abort().catch(() => {});
  }
}

async function serveConnection(incoming: Deno.QuicIncoming, upstream: Upstream): Promise<void> {
  const conn = await incoming.accept();
  // Our control and QPACK streams: the writers live as long as the connection.
  const own: WritableStreamDefaultWriter<Uint8Array>[] = [];
  for (const first of [CONTROL, [StreamType.QPACK_ENCODER], [StreamType.QPACK_DECODER]]) {
    const w = (await conn.createUnidirectionalStream()).getWriter();
    own.push(w);
    w.write(Uint8Array.from(first)).catch(() => {});
  }
  (async () => {
    for await (const uni of conn.incomingUnidirectionalStreams) drain(uni).catch(() => {});
  })().catch(() => {});
  for await (const s of conn.incomingBidirectionalStreams) serveRequest(s, upstream);
  await conn.closed;
  own.length = 0;
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      cert: { type: "string" },
      key: { type: "string" },
      backend: { type: "string" },
      port: { type: "string", default: "0" },
      worker: { type: "boolean", default: false },
      "node-http2": { type: "boolean", default: false },
      http1: { type: "boolean", default: false },
    },
  });
  if (!values.cert || !values.key || !values.backend) {
    console.error(
      "usage: floor.ts --cert C --key K --backend HOST:PORT [--port P] [--worker | --node-http2 | --http1]",
    );
    Deno.exit(2);
  }
  const url = `http://${values.backend}/`;
  const upstream = values.worker
    ? onWorker(url)
    : values["node-http2"]
    ? nodeHttp2(values.backend)
    : inProcess(url, values.http1);
  const endpoint = new Deno.QuicEndpoint({ hostname: "127.0.0.1", port: Number(values.port) });
  const listener = endpoint.listen({
    cert: await Deno.readTextFile(values.cert),
    key: await Deno.readTextFile(values.key),
    alpnProtocols: ["h3"],
    // the same transport limits as spooky's listener (proxy/quic/deno_transport.ts)
    maxConcurrentBidirectionalStreams: 256,
    maxConcurrentUnidirectionalStreams: 16,
    maxIdleTimeout: 30_000,
  });
  console.log(`Listening on 127.0.0.1:${endpoint.addr.port}`);
  for await (const incoming of listener) serveConnection(incoming, upstream).catch(() => {});
}
