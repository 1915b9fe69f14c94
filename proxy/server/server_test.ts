/**
 * H3Server on the in-memory transport: the accept loop, the connection
 * bookkeeping the admin API and the gauges read, and graceful shutdown
 * (RFC 9114 §5.2). Request/response rules are connection_test.ts's.
 */
import assert from "node:assert/strict";
import { encodeFrame, FrameType, H3Code, QpackEncoder } from "../h3/mod.ts";
import { type MemoryConnection, memoryConnectionPair } from "../quic/memory_transport.ts";
import type { CloseInfo, QuicConnection, QuicServerTransport } from "../quic/transport.ts";
import { H3Server } from "./server.ts";
import type { RequestHandler } from "./types.ts";

/** A transport whose connections (or accept failures) the test hands in. */
class FakeTransport implements QuicServerTransport {
  readonly addr = { hostname: "127.0.0.1", port: 4433 };
  stopped = false;
  closedWith: CloseInfo | undefined;
  readonly #queue: Array<QuicConnection | Error | null> = [];
  #waiting: ((next: QuicConnection | Error | null) => void) | null = null;

  offer(next: QuicConnection | Error | null): void {
    if (this.#waiting) {
      this.#waiting(next);
      this.#waiting = null;
    } else this.#queue.push(next);
  }

  async accept(): Promise<QuicConnection | null> {
    const next = this.#queue.length > 0
      ? this.#queue.shift()!
      : await new Promise<QuicConnection | Error | null>((resolve) => (this.#waiting = resolve));
    if (next instanceof Error) throw next;
    return next;
  }

  stop(): void {
    this.stopped = true;
  }

  close(info?: CloseInfo): void {
    this.closedWith = info;
    this.offer(null);
  }
}

const OPTIONS = {
  maxFieldSectionSize: 16384,
  qpackMaxTableCapacity: 0,
  qpackBlockedStreams: 0,
  maxRequestBodyBytes: 1000,
};

const ok: RequestHandler = () => Promise.resolve({ status: 204, headers: [], body: null });

/** Opens a request stream and sends a GET's HEADERS (and FIN). */
async function sendGet(client: MemoryConnection): Promise<ReadableStream<Uint8Array>> {
  const s = await client.createBidirectionalStream();
  const w = s.writable.getWriter();
  const fields: Array<[string, string]> = [
    [":method", "GET"],
    [":scheme", "https"],
    [":authority", "example.test"],
    [":path", "/"],
  ];
  await w.write(encodeFrame(FrameType.HEADERS, new QpackEncoder().encodeSection(fields)));
  await w.close();
  return s.readable;
}

/** Resolves once `check` holds, polling the event loop (fails after ~1 s). */
async function eventually(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 5));
  assert.ok(check(), what);
}

function setup(handler: RequestHandler = ok) {
  const transport = new FakeTransport();
  const events: string[] = [];
  const server = new H3Server(transport, {
    handler,
    ...OPTIONS,
    onConnectionOpened: () => events.push("opened"),
    onConnectionClosed: () => events.push("closed"),
  });
  return { transport, events, server };
}

Deno.test("H3Server: addr is the transport's; nothing is accepted before start()", async () => {
  const { transport, server } = setup();
  assert.deepEqual(server.addr, { hostname: "127.0.0.1", port: 4433 });
  transport.offer(memoryConnectionPair().server);
  await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(server.connections(), []);
  server.start();
  await eventually(() => server.connections().length === 1, "accepted after start()");
  await server.shutdown(100);
});

Deno.test("H3Server: connections() lists open connections; the hooks see each open and close", async () => {
  const { transport, events, server } = setup();
  server.start();
  server.start(); // a second call does not start a second accept loop
  const a = memoryConnectionPair();
  const b = memoryConnectionPair();
  transport.offer(a.server);
  transport.offer(b.server);
  await eventually(() => server.connections().length === 2, "two connections listed");
  for (const info of server.connections()) {
    assert.match(info.remote, /^.+:\d+$/);
    assert.equal(info.activeStreams, 0);
  }
  a.client.close({ closeCode: H3Code.NO_ERROR, reason: "bye" });
  await eventually(() => server.connections().length === 1, "a closed connection is dropped");
  assert.deepEqual(events, ["opened", "opened", "closed"]);
  await server.shutdown(100);
  assert.deepEqual(events, ["opened", "opened", "closed", "closed"]);
});

Deno.test("H3Server: a failed accept is logged and the loop goes on", async () => {
  const { transport, server } = setup();
  server.start();
  transport.offer(new Error("handshake failed"));
  transport.offer(memoryConnectionPair().server);
  await eventually(() => server.connections().length === 1, "accepted after the failure");
  await server.shutdown(100);
});

Deno.test("RFC 9114 §5.2: shutdown() stops accepting, lets in-flight requests finish, then closes", async () => {
  const release = Promise.withResolvers<void>();
  let started = 0;
  const { transport, server } = setup(async () => {
    started++;
    await release.promise;
    return { status: 200, headers: [], body: new TextEncoder().encode("done") };
  });
  server.start();
  const { client, server: conn } = memoryConnectionPair();
  transport.offer(conn);
  const response = sendGet(client).then((r) => new Response(r).arrayBuffer());
  await eventually(() => started === 1, "the request reached the handler");
  assert.equal(server.connections()[0].activeStreams, 1);

  const shutdown = server.shutdown(5_000);
  await eventually(() => transport.stopped, "the transport stops accepting at once");
  assert.equal(transport.closedWith, undefined, "the endpoint stays open while draining");
  release.resolve();
  await shutdown;
  assert.ok((await response).byteLength > 0, "the in-flight response was delivered");
  assert.deepEqual(transport.closedWith, { closeCode: H3Code.NO_ERROR, reason: "shutdown" });
  assert.deepEqual(server.connections(), []);
});

Deno.test("H3Server: past the drain bound, shutdown() closes connections with H3_NO_ERROR", async () => {
  // A handler that only ends when its request is aborted (as the proxy's fetch does).
  const { transport, server } = setup((req) =>
    new Promise((_, reject) => {
      const fail = () => reject(req.signal.reason);
      if (req.signal.aborted) fail();
      else req.signal.addEventListener("abort", fail);
    })
  );
  server.start();
  const { client, server: conn } = memoryConnectionPair();
  transport.offer(conn);
  void sendGet(client).then((r) => new Response(r).arrayBuffer()).catch(() => {});
  await eventually(() => server.connections()[0]?.activeStreams === 1, "request in flight");
  const t0 = performance.now();
  await server.shutdown(30);
  assert.ok(performance.now() - t0 < 2_000, "shutdown returned soon after the bound");
  const closed = await client.closed;
  assert.equal(closed.closeCode, H3Code.NO_ERROR);
  assert.deepEqual(transport.closedWith, { closeCode: H3Code.NO_ERROR, reason: "shutdown" });
});
