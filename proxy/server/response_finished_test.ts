/**
 * The one hook on a response's end (`OutgoingResponse.finished`): called
 * exactly once, whichever way the request ends, on HTTP/3 (the in-memory
 * transport) and on the TCP fallback. A backend slot held while a body
 * streams is released there (`circuit/`), so a way of ending that did not
 * call it would leak a slot, and one that called it twice would free
 * another request's. Listeners compose (`whenFinished`).
 */
import assert from "node:assert/strict";
import {
  encodeFrame,
  encodeSettingsFrame,
  FrameDecoder,
  FrameType,
  H3Code,
  NEED_MORE,
  QpackDecoder,
  QpackEncoder,
} from "../h3/mod.ts";
import { concatBytes } from "../../shared/bytes.ts";
import { type MemoryConnection, memoryConnectionPair } from "../quic/memory_transport.ts";
import { H3Connection } from "./connection.ts";
import { type FinishedRequest, whenFinished } from "./response_finished.ts";
import { tcpFallbackHandler } from "./tcp_fallback.ts";
import type { ConnectionOptions, OutgoingResponse, RequestHandler } from "./types.ts";

const enc = new QpackEncoder();
const text = new TextEncoder();

/** A response whose `finished` calls are recorded, and its body source. */
function watched(res: Partial<OutgoingResponse>) {
  const calls: FinishedRequest[] = [];
  const response: OutgoingResponse = { status: 200, headers: [], body: null, ...res };
  whenFinished(response, (record) => void calls.push(record));
  return { response, calls };
}

/**
 * A backend body: `first` at once, then what `rest` says: `hang` (nothing
 * more, ever), `error` (it breaks), `end`, or `flood` (1 KiB chunks without
 * end). `cancelled` settles when the proxy cancels it.
 */
function source(rest: "hang" | "error" | "end" | "flood", first = text.encode("part")) {
  const cancelled = Promise.withResolvers<void>();
  let pulls = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(c) {
      if (pulls++ === 0) return c.enqueue(first);
      if (rest === "error") return c.error(new Error("upstream reset"));
      if (rest === "end") return c.close();
      if (rest === "flood") return c.enqueue(new Uint8Array(1024));
      return new Promise<void>(() => {});
    },
    cancel: () => cancelled.resolve(),
  }, { highWaterMark: 0 });
  return { body, cancelled: cancelled.promise };
}

/** An HTTP/3 connection over the in-memory transport, its client's control stream open. */
async function h3(handler: RequestHandler, opts: Partial<ConnectionOptions> = {}) {
  const { client, server } = memoryConnectionPair();
  const conn = new H3Connection(server, {
    handler,
    maxFieldSectionSize: 16384,
    qpackMaxTableCapacity: 0,
    qpackBlockedStreams: 0,
    maxRequestBodyBytes: 1000,
    ...opts,
  });
  const served = conn.serve();
  const control = (await client.createUnidirectionalStream()).getWriter();
  await control.write(concatBytes(Uint8Array.of(0x00), encodeSettingsFrame(new Map())));
  return { client, served };
}

function head(method = "GET"): Uint8Array {
  return encodeFrame(
    FrameType.HEADERS,
    enc.encodeSection([
      [":method", method],
      [":scheme", "https"],
      [":authority", "example.test"],
      [":path", "/x"],
    ]),
  );
}

/** Sends `bytes` on a new request stream (FIN unless `fin` is false). */
async function send(client: MemoryConnection, bytes: Uint8Array, fin = true) {
  const s = await client.createBidirectionalStream();
  const w = s.writable.getWriter();
  await w.write(bytes);
  if (fin) await w.close();
  return { readable: s.readable, writer: w };
}

/** Reads the response until `until` holds (default: its end); the reader is kept for more. */
async function read(readable: ReadableStream<Uint8Array>, until?: (body: number) => boolean) {
  const reader = readable.getReader();
  const frames = new FrameDecoder();
  const dec = new QpackDecoder({ maxTableCapacity: 0, maxBlockedStreams: 0 });
  let status = 0;
  let body = 0;
  for (;;) {
    // A stream the server aborts ends the reading as a FIN does.
    const r = await reader.read().catch(() => ({ done: true as const, value: undefined }));
    if (r.done) break;
    frames.push(r.value);
    for (let ev = frames.next(); ev !== NEED_MORE; ev = frames.next()) {
      if (ev.kind === "data") body += ev.chunk.length;
      else if (ev.kind === "frame" && ev.type === FrameType.HEADERS && status === 0) {
        status = Number((dec.decodeSection(0, ev.payload) as Array<[string, string]>)[0][1]);
      }
    }
    if (until?.(body)) break;
  }
  return { status, body, reader };
}

/** Closes the connection and waits until every request of it is done; then the count is final. */
async function over(client: MemoryConnection, served: Promise<void>, calls: FinishedRequest[]) {
  client.close();
  await served;
  assert.equal(calls.length, 1, `finished called ${calls.length} times`);
  return calls[0];
}

Deno.test("#30.2: HTTP/3: a streamed body delivered whole: finished once, complete", async () => {
  const { response, calls } = watched({ body: source("end").body });
  const { client, served } = await h3(() => Promise.resolve(response));
  const { readable } = await send(client, head());
  const got = await read(readable);
  assert.deepEqual([got.status, got.body], [200, 4]);
  const record = await over(client, served, calls);
  assert.deepEqual([record.status, record.bytes, record.outcome], [200, 4, "complete"]);
});

Deno.test("#30.2: HTTP/3: the client stops reading mid-body (STOP_SENDING): finished once, aborted; the body is cancelled", async () => {
  const src = source("hang");
  const { response, calls } = watched({ body: src.body });
  const { client, served } = await h3(() => Promise.resolve(response));
  const { readable } = await send(client, head());
  const got = await read(readable, (n) => n > 0);
  await got.reader.cancel();
  await src.cancelled;
  const record = await over(client, served, calls);
  assert.equal(record.outcome, "aborted");
});

Deno.test("#30.2: HTTP/3: the connection closes mid-body: finished once, aborted", async () => {
  const src = source("hang");
  const { response, calls } = watched({ body: src.body });
  const { client, served } = await h3(() => Promise.resolve(response));
  const { readable } = await send(client, head());
  await read(readable, (n) => n > 0);
  const record = await over(client, served, calls);
  assert.equal(record.outcome, "aborted");
  await src.cancelled;
});

Deno.test("#30.2: HTTP/3: the backend's body breaks, or stalls past the idle timeout: finished once, broken", async () => {
  for (const rest of ["error", "hang"] as const) {
    const { response, calls } = watched({ body: source(rest).body });
    const { client, served } = await h3(() => Promise.resolve(response), {
      requestIdleTimeoutMs: 100,
    });
    const { readable } = await send(client, head());
    await read(readable);
    const record = await over(client, served, calls);
    assert.equal(record.outcome, "broken", rest);
  }
});

Deno.test("#30.2: HTTP/3: a client that takes none of the body for the idle timeout: finished once, the body cancelled", async () => {
  const src = source("flood");
  const { response, calls } = watched({ body: src.body });
  const { client, served } = await h3(() => Promise.resolve(response), {
    requestIdleTimeoutMs: 100,
  });
  await send(client, head()); // never read
  await src.cancelled;
  const record = await over(client, served, calls);
  assert.equal(record.outcome, "broken");
});

Deno.test("#30.2: HTTP/3: HEAD, 204 and 304 send no body: finished once, the stream body cancelled", async () => {
  for (const [method, status] of [["HEAD", 200], ["GET", 204], ["GET", 304]] as const) {
    const src = source("hang");
    const { response, calls } = watched({ status, body: src.body });
    const { client, served } = await h3(() => Promise.resolve(response));
    const { readable } = await send(client, head(method));
    const got = await read(readable);
    assert.deepEqual([got.status, got.body], [status, 0]);
    await src.cancelled;
    const record = await over(client, served, calls);
    assert.equal(record.outcome, "complete", `${method} ${status}`);
  }
});

Deno.test("#30.2: HTTP/3: the client's body fails after the answer came (too large, reset, or a connection error): finished once, with the client's status", async () => {
  // The application answered (a backend slot taken) while the client's body was failing.
  const answering =
    (response: OutgoingResponse, asked?: () => void): RequestHandler => async (req) => {
      asked?.();
      await new Response(req.body).arrayBuffer().catch(() => {});
      return response;
    };
  const post = (n: number) =>
    concatBytes(head("POST"), encodeFrame(FrameType.DATA, new Uint8Array(n)));

  const large = watched({ body: source("hang").body });
  const first = await h3(answering(large.response));
  const { readable } = await send(first.client, post(2000));
  assert.equal((await read(readable)).status, 413);
  assert.equal((await over(first.client, first.served, large.calls)).status, 413);

  const reset = watched({ body: source("hang").body });
  const asked = Promise.withResolvers<void>();
  const second = await h3(answering(reset.response, asked.resolve));
  const sent = await send(second.client, post(10), false);
  await asked.promise; // its head was read: the reset hits its body
  await sent.writer.abort(new Error("client reset its request"));
  assert.equal((await read(sent.readable)).status, 0, "nothing is answered to a reset request");
  assert.equal((await over(second.client, second.served, reset.calls)).status, 499);

  // A frame that breaks the connection (SETTINGS on a request stream, RFC 9114 §7.2.4).
  const broken = watched({ body: source("hang").body });
  const connected = Promise.withResolvers<void>();
  const third = await h3(answering(broken.response, connected.resolve));
  const sending = await send(third.client, post(10), false);
  await connected.promise;
  await sending.writer.write(encodeSettingsFrame(new Map()));
  assert.equal((await third.client.closed).closeCode, H3Code.FRAME_UNEXPECTED);
  assert.equal((await over(third.client, third.served, broken.calls)).status, 400);
});

Deno.test("#30.2: HTTP/3: a request sink that throws does not keep the response's own listeners from running", async () => {
  const { response, calls } = watched({ body: text.encode("ok") });
  const { client, served } = await h3(() => Promise.resolve(response), {
    hooks: {
      requestDone() {
        throw new Error("the sink failed");
      },
    },
  });
  await send(client, head());
  await over(client, served, calls);
});

Deno.test("#30.2: HTTP/3: a head that cannot be encoded ends the stream, not the connection: finished once", async () => {
  const src = source("hang");
  const { response, calls } = watched({ headers: [["x-odd", "\u0100"]], body: src.body });
  const { client, served } = await h3(() => Promise.resolve(response));
  const { readable } = await send(client, head());
  assert.equal((await read(readable)).status, 0);
  await src.cancelled;
  assert.equal(client.closeInfo, null, "the connection is still open");
  assert.equal((await over(client, served, calls)).outcome, "aborted");
});

/** `Deno.serve`'s info for a request whose response ends as `completed` settles. */
function info(completed: Promise<void>): Deno.ServeHandlerInfo {
  return {
    remoteAddr: { transport: "tcp", hostname: "192.0.2.7", port: 50123 },
    completed,
  } as unknown as Deno.ServeHandlerInfo;
}

Deno.test("#30.2: TCP fallback: finished once when the response is sent, and once when the client left", async () => {
  for (const sink of [undefined, () => {}]) {
    for (const left of [false, true]) {
      const { response, calls } = watched({ body: source("end").body });
      const completed = Promise.withResolvers<void>();
      const serve = tcpFallbackHandler(() => Promise.resolve(response), 443, { done: sink });
      const res = await serve(new Request("https://a.test/x"), info(completed.promise));
      if (left) {
        await res.body!.cancel();
        completed.reject(new Error("the client went away"));
      } else {
        await res.arrayBuffer();
        completed.resolve();
      }
      await new Promise((r) => setTimeout(r, 0));
      assert.equal(calls.length, 1, `sink ${sink !== undefined}, left ${left}`);
      assert.equal(calls[0].outcome, left ? "aborted" : "complete");
    }
  }
});

Deno.test("#30.2: TCP fallback: HEAD, 204 and 304: finished once, the stream body cancelled", async () => {
  for (const [method, status] of [["HEAD", 200], ["GET", 204], ["GET", 304]] as const) {
    const src = source("hang");
    const { response, calls } = watched({ status, body: src.body });
    const serve = tcpFallbackHandler(() => Promise.resolve(response), 443);
    const res = await serve(new Request("https://a.test/x", { method }), info(Promise.resolve()));
    assert.equal(res.body, null);
    await src.cancelled;
    await new Promise((r) => setTimeout(r, 0));
    assert.equal(calls.length, 1, `${method} ${status}`);
  }
});

Deno.test("#30.2: TCP fallback: a response whose head Deno refuses is still told when it ends", async () => {
  const { response, calls } = watched({ headers: [["x-odd", "a\nb"]] });
  const completed = Promise.withResolvers<void>();
  const serve = tcpFallbackHandler(() => Promise.resolve(response), 443);
  // Deno.serve answers a handler that throws with its own 500, and then settles `completed`.
  await assert.rejects(serve(new Request("https://a.test/x"), info(completed.promise)));
  completed.resolve();
  await new Promise((r) => setTimeout(r, 0));
  assert.equal(calls.length, 1);
});

Deno.test("whenFinished: listeners run in order, each even when an earlier one throws", () => {
  const res: OutgoingResponse = { status: 200, headers: [], body: null };
  const order: string[] = [];
  whenFinished(res, () => {
    order.push("span");
    throw new Error("span failed");
  });
  whenFinished(res, () => void order.push("slot"));
  const record = { status: 200, bytes: 0, outcome: "complete" } as const;
  assert.throws(() => res.finished!(record), /span failed/);
  assert.deepEqual(order, ["span", "slot"]);
});
