/**
 * The HTTP/1.1 transport against real loopback servers: Node's `http`,
 * `Deno.serve`, and raw sockets for what no well-behaved server does. What
 * only HTTP/1.1 has: the request's framing (Content-Length or chunked), the
 * keep-alive pool (reuse, its bound, `connection: close`, idle connections,
 * bytes outside a response). What every transport must do is the
 * conformance suite's (`transport_conformance_test.ts`), run on this one too.
 *
 * @module
 */

import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { drainCounting, generatedBody } from "./_test_backend.ts";
import { failure, MiB, text } from "./_test_util.ts";
import { createH1Transport, type H1TransportOptions } from "./h1_transport.ts";
import type { UpstreamRequest, UpstreamTransport } from "./transport.ts";
import { sleep, withTimeout } from "../../tests/support/wait.ts";

const enc = new TextEncoder();

/** A node:http backend with per-path handlers; counts its sockets. */
interface NodeBackend {
  readonly address: string;
  readonly sockets: Socket[];
  /** Requests received, in order: path, raw headers, and a promise of the socket's close. */
  readonly seen: Array<{ path: string; raw: string[]; closed: Promise<void> }>;
  route(path: string, h: (req: http.IncomingMessage, res: http.ServerResponse) => void): void;
  close(): Promise<void>;
}

async function nodeBackend(): Promise<NodeBackend> {
  const routes = new Map<string, (req: http.IncomingMessage, res: http.ServerResponse) => void>();
  const sockets: Socket[] = [];
  const seen: NodeBackend["seen"] = [];
  const server = http.createServer((req, res) => {
    const closed = new Promise<void>((r) => req.socket.once("close", () => r()));
    seen.push({ path: req.url ?? "", raw: req.rawHeaders, closed });
    const h = routes.get(new URL(req.url ?? "/", "http://x").pathname);
    if (h === undefined) {
      res.writeHead(404, { "content-length": 0 });
      return res.end();
    }
    h(req, res);
  });
  server.keepAliveTimeout = 60_000;
  server.on("connection", (s: Socket) => sockets.push(s));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const { port } = server.address() as AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    sockets,
    seen,
    route: (p, h) => void routes.set(p, h),
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

function req(b: { address: string }, over: Partial<UpstreamRequest> = {}): UpstreamRequest {
  return {
    address: b.address,
    method: "GET",
    path: "/",
    authority: "example.test",
    headers: [],
    body: null,
    timeoutMs: 10_000,
    ...over,
  };
}

function suite(
  name: string,
  body: (t: UpstreamTransport, b: NodeBackend) => unknown,
  opts: H1TransportOptions = {},
) {
  Deno.test({
    name: `h1 transport: ${name}`,
    sanitizeOps: false,
    sanitizeResources: false,
    async fn() {
      const b = await nodeBackend();
      const t = createH1Transport(opts);
      try {
        await body(t, b);
      } finally {
        await t.close();
        await b.close();
      }
    },
  });
}

function readBody(r: http.IncomingMessage): Promise<Uint8Array> {
  return new Promise((resolve) => {
    const parts: Buffer[] = [];
    r.on("data", (c: Buffer) => parts.push(c));
    r.on("end", () => resolve(new Uint8Array(Buffer.concat(parts))));
  });
}

suite(
  "method, path, host and fields forwarded in order; keep-alive reuses one socket",
  async (t, b) => {
    b.route("/echo", (r, res) => {
      const payload = JSON.stringify({ method: r.method, url: r.url, raw: r.rawHeaders });
      res.writeHead(200, { "content-length": Buffer.byteLength(payload) });
      res.end(payload);
    });
    const fields: Array<[string, string]> = [["x-one", "1"], ["x-rep", "a"], ["x-rep", "b"]];
    for (const method of ["PROPFIND", "GET", "DELETE"]) {
      const res = await t.exchange(
        req(b, { method, path: "/echo?q=1&r", authority: "example.test:8443", headers: fields }),
      );
      assert.equal(res.status, 200);
      assert.ok(res.body instanceof Uint8Array, "a small body comes whole");
      const got = JSON.parse(await text(res));
      assert.equal(got.method, method);
      assert.equal(got.url, "/echo?q=1&r");
      assert.deepEqual(got.raw.slice(0, 8), [
        "host",
        "example.test:8443",
        "x-one",
        "1",
        "x-rep",
        "a",
        "x-rep",
        "b",
      ]);
    }
    assert.equal(b.sockets.length, 1, "one keep-alive connection carried all three");
  },
);

suite("bodies: small whole, large and chunked streamed, 204 and HEAD none", async (t, b) => {
  const big = new Uint8Array(200 * 1024).fill(7);
  b.route("/small", (_r, res) => res.writeHead(200, { "content-length": 5 }).end("small"));
  b.route("/big", (_r, res) => res.writeHead(200, { "content-length": big.length }).end(big));
  b.route("/chunked", (_r, res) => {
    res.writeHead(200);
    res.write("un");
    res.end("sized");
  });
  b.route("/none", (_r, res) => res.writeHead(204).end());
  assert.equal(await text(await t.exchange(req(b, { path: "/small" }))), "small");
  const large = await t.exchange(req(b, { path: "/big" }));
  assert.ok(large.body instanceof ReadableStream);
  assert.deepEqual(new Uint8Array(await new Response(large.body).arrayBuffer()), big);
  const unsized = await t.exchange(req(b, { path: "/chunked" }));
  assert.ok(unsized.body instanceof ReadableStream);
  assert.equal(await text(unsized), "unsized");
  const none = await t.exchange(req(b, { path: "/none" }));
  assert.equal(none.status, 204);
  assert.equal(none.body, null);
  const head = await t.exchange(req(b, { path: "/big", method: "HEAD" }));
  assert.equal(head.body, null);
  assert.ok(head.headers.some(([n, v]) => n === "content-length" && v === String(big.length)));
  assert.equal(b.sockets.length, 1, "every response ended cleanly: one connection");
});

suite(
  "request bodies: whole with content-length, streamed chunked, trailers after",
  async (t, b) => {
    b.route("/up", async (r, res) => {
      const body = await readBody(r);
      const payload = JSON.stringify({
        n: body.length,
        te: r.headers["transfer-encoding"] ?? null,
        cl: r.headers["content-length"] ?? null,
        trailers: r.rawTrailers,
      });
      res.writeHead(200, { "content-length": Buffer.byteLength(payload) }).end(payload);
    });
    const whole = JSON.parse(
      await text(await t.exchange(req(b, { method: "POST", path: "/up", body: enc.encode("hi") }))),
    );
    assert.deepEqual(whole, { n: 2, te: null, cl: "2", trailers: [] });
    const streamed = JSON.parse(
      await text(
        await t.exchange(req(b, { method: "POST", path: "/up", body: generatedBody(3 * MiB) })),
      ),
    );
    assert.deepEqual(streamed, { n: 3 * MiB, te: "chunked", cl: null, trailers: [] });
    let asked = 0;
    const trailers = () => (asked++, [["x-sum", "abc"]] as Array<[string, string]>);
    for (const body of [enc.encode("hello"), generatedBody(300 * 1024)]) {
      const got = JSON.parse(
        await text(await t.exchange(req(b, { method: "POST", path: "/up", body, trailers }))),
      );
      assert.equal(got.te, "chunked");
      assert.deepEqual(got.trailers, ["x-sum", "abc"]);
    }
    assert.equal(asked, 2, "asked once per exchange");
    const empty = JSON.parse(await text(await t.exchange(req(b, { method: "POST", path: "/up" }))));
    assert.deepEqual(empty, { n: 0, te: null, cl: "0", trailers: [] });
    assert.equal(b.sockets.length, 1);
  },
);

suite(
  "cancelling the response body closes the connection; the next request gets a new one",
  async (t, b) => {
    b.route("/drip", (_r, res) => {
      res.writeHead(200);
      res.write(new Uint8Array(1024));
    });
    b.route("/ok", (_r, res) => res.writeHead(200, { "content-length": 2 }).end("ok"));
    const res = await t.exchange(req(b, { path: "/drip" }));
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    assert.equal((await reader.read()).value?.byteLength, 1024);
    await reader.cancel();
    await b.seen[0].closed;
    assert.equal(await text(await t.exchange(req(b, { path: "/ok" }))), "ok");
    assert.equal(b.sockets.length, 2);
  },
);

suite("`connection: close` is honoured: the next request opens a new connection", async (t, b) => {
  b.route(
    "/bye",
    (_r, res) => res.writeHead(200, { "content-length": 2, connection: "close" }).end("ok"),
  );
  assert.equal(await text(await t.exchange(req(b, { path: "/bye" }))), "ok");
  assert.equal(await text(await t.exchange(req(b, { path: "/bye" }))), "ok");
  assert.equal(b.sockets.length, 2);
});

suite(
  "the pool is bounded per address: past the bound requests wait, then all are answered",
  async (t, b) => {
    const held: http.ServerResponse[] = [];
    b.route("/hold", (_r, res) => void held.push(res));
    const all = Array.from({ length: 5 }, () => t.exchange(req(b, { path: "/hold" })));
    while (held.length < 2) await sleep(5);
    await sleep(100);
    assert.equal(b.sockets.length, 2, "two connections, three waiting");
    let answered = 0;
    while (answered < 5) {
      for (const res of held.splice(0)) {
        res.writeHead(200, { "content-length": 1 }).end("x");
        answered++;
      }
      await sleep(5);
    }
    for (const p of all) assert.equal(await text(await p), "x");
    assert.equal(b.sockets.length, 2, "the waiting ones reused the two");
  },
  { maxConnectionsPerAddress: 2 },
);

suite(
  "an idle connection is closed after idleMs; one the backend closed while idle is not used",
  async (t, b) => {
    b.route("/ok", (_r, res) => res.writeHead(200, { "content-length": 2 }).end("ok"));
    assert.equal(await text(await t.exchange(req(b, { path: "/ok" }))), "ok");
    await withTimeout(b.seen[0].closed, 5_000, "closed by the transport, idle for 200 ms");
    assert.equal(await text(await t.exchange(req(b, { path: "/ok" }))), "ok");
    // The backend closes the idle connection: the next request takes a new one and succeeds.
    b.sockets[1].destroy();
    await sleep(50);
    assert.equal(await text(await t.exchange(req(b, { path: "/ok" }))), "ok");
    assert.equal(b.sockets.length, 3);
  },
  { idleMs: 200 },
);

suite(
  "#29.1: why each connection closed is counted: the backend's `connection: close`, a timeout, a client that left, idle",
  async (t, b) => {
    b.route(
      "/bye",
      (_r, res) => res.writeHead(200, { "content-length": 2, connection: "close" }).end("ok"),
    );
    b.route("/ok", (_r, res) => res.writeHead(200, { "content-length": 2 }).end("ok"));
    b.route("/stall", () => {});
    const closed = () => t.connections!().find((c) => c.address === b.address)!.closed;
    assert.equal(await text(await t.exchange(req(b, { path: "/bye" }))), "ok");
    assert.equal(closed().peer_closed, 1);
    await failure(t.exchange(req(b, { path: "/stall", timeoutMs: 100 })));
    assert.equal(closed().timeout, 1);
    const ac = new AbortController();
    const left = t.exchange(req(b, { path: "/stall", signal: ac.signal }));
    while (b.seen.length < 3) await sleep(5);
    ac.abort();
    await failure(left);
    assert.equal(closed().cancelled, 1);
    assert.equal(await text(await t.exchange(req(b, { path: "/ok" }))), "ok");
    await withTimeout(b.seen[3].closed, 5_000, "closed by the transport, idle for 200 ms");
    assert.equal(closed().idle, 1);
    const counts = t.connections!().find((c) => c.address === b.address)!;
    assert.deepEqual([counts.opened, counts.open], [4, 0]);
  },
  { idleMs: 200 },
);

/** A raw TCP backend that answers each connection with `answer` (bytes, then maybe a close). */
function rawBackend(
  answer: (conn: Deno.Conn, n: number) => Promise<void>,
): { address: string; accepted: () => number; close(): void } {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  let n = 0;
  const conns: Deno.Conn[] = [];
  (async () => {
    for await (const conn of listener) {
      conns.push(conn);
      const i = n++;
      answer(conn, i).catch(() => {});
    }
  })().catch(() => {});
  return {
    address: `127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    accepted: () => n,
    close() {
      listener.close();
      for (const c of conns) {
        try {
          c.close();
        } catch { /* closed */ }
      }
    },
  };
}

async function readRequest(conn: Deno.Conn): Promise<void> {
  const buf = new Uint8Array(65536);
  let got = "";
  while (!got.includes("\r\n\r\n")) {
    const n = await conn.read(buf);
    if (n === null) return;
    got += new TextDecoder().decode(buf.subarray(0, n));
  }
}

function raw(name: string, fn: (t: UpstreamTransport) => Promise<void>) {
  Deno.test({
    name: `h1 transport: ${name}`,
    sanitizeOps: false,
    sanitizeResources: false,
    async fn() {
      const t = createH1Transport();
      try {
        await fn(t);
      } finally {
        await t.close();
      }
    },
  });
}

raw("bytes after a response: the answer stands, the connection is never reused", async (t) => {
  const b = rawBackend(async (conn) => {
    for (;;) {
      await readRequest(conn);
      await conn.write(
        enc.encode("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n"),
      );
    }
  });
  try {
    assert.equal(await text(await t.exchange(req(b))), "ok");
    assert.equal(await text(await t.exchange(req(b))), "ok");
    assert.equal(b.accepted(), 2, "each request on a new connection");
    const counts = t.connections!().find((c) => c.address === b.address)!;
    assert.equal(counts.closed.protocol_error, 2, "counted as the backend's protocol error");
    assert.equal(counts.reused, 0);
  } finally {
    b.close();
  }
});

raw("closed before any response byte: `reset` (maybe processed), never `connect`", async (t) => {
  const b = rawBackend(async (conn) => {
    await readRequest(conn);
    conn.close();
  });
  try {
    const err = await failure(t.exchange(req(b, { method: "POST", body: enc.encode("x") })));
    assert.equal(err.kind, "reset");
  } finally {
    b.close();
  }
});

raw("closed mid-body: the body stream errors `protocol`", async (t) => {
  const b = rawBackend(async (conn) => {
    await readRequest(conn);
    await conn.write(enc.encode("HTTP/1.1 200 OK\r\ncontent-length: 200000\r\n\r\n"));
    await conn.write(new Uint8Array(100_000));
    conn.close();
  });
  try {
    const res = await t.exchange(req(b));
    const err = await drainCounting(res.body as ReadableStream<Uint8Array>).then(
      () => assert.fail("must not end cleanly"),
      (e) => e,
    );
    assert.equal(err.kind, "protocol");
    assert.ok(err.backendFault);
  } finally {
    b.close();
  }
});

Deno.test({
  name: "h1 transport: Deno.serve interop: large bodies both ways, keep-alive",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (r) => {
      if (r.method === "POST") return new Response(r.body);
      return new Response(generatedBody(5 * MiB));
    });
    const t = createH1Transport();
    try {
      const b = { address: `127.0.0.1:${server.addr.port}` };
      const down = await t.exchange(req(b));
      const got = await drainCounting(down.body as ReadableStream<Uint8Array>);
      assert.deepEqual(got, { bytes: 5 * MiB, patternOk: true });
      const up = await t.exchange(req(b, { method: "POST", body: generatedBody(5 * MiB) }));
      assert.deepEqual(await drainCounting(up.body as ReadableStream<Uint8Array>), {
        bytes: 5 * MiB,
        patternOk: true,
      });
    } finally {
      await t.close();
      await server.shutdown();
    }
  },
});
