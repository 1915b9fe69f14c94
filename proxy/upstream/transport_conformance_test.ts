/**
 * Conformance suite of the {@link UpstreamTransport} (docs/architecture.md
 * §7): what any transport must do, run against each of the proxy's own, the
 * HTTP/2 one (`h2_transport.ts`) and the HTTP/1.1 one (`h1_transport.ts`),
 * each with a real loopback backend speaking its protocol (`node:http2`,
 * `node:http`) and answering with the same handlers
 * (`_test_wire_backend.ts`).
 *
 * Where the protocols truly differ, a case says so and asserts each one's
 * behaviour (`wire === "http1"`):
 *
 * - HTTP/1.1 cancels an exchange only by closing its connection: what an
 *   HTTP/2 backend sees as RST_STREAM CANCEL, an HTTP/1.1 backend sees as its
 *   connection closed (both `cancelled` here).
 * - The authority: HTTP/2 sends `:authority` (and a `host` field when asked
 *   to), HTTP/1.1 has only `Host` (RFC 9112 §3.2), so a request without an
 *   authority keeps its `host` field as the `Host` line; HTTP/1.1 has no
 *   `:scheme`.
 * - Backpressure: over HTTP/1.1 the kernel's socket buffers hold bytes
 *   besides the transport (loopback's grow to several MiB), so a stalled
 *   side stops the other within 16 MiB, not 8, and a body the backend never
 *   reads may be taken whole by them (no 640 KiB bound as HTTP/2's window
 *   gives).
 * - Response trailers need a chunked body in HTTP/1.1 (RFC 9112 §7.1.2),
 *   which has no declared length: a small body with trailers streams.
 * - A backend that answers before reading the body then ends the exchange
 *   (hyper resets the stream with CANCEL): over HTTP/1.1 the backend (Node)
 *   drains the body itself.
 * - The lowercase method `get` is left out for HTTP/1.1: Node's parser (the
 *   test backend) refuses methods it does not know with 400; the codec's own
 *   tests (`proxy/h1/request_test.ts`) cover sending any token as given.
 *
 * A timing bound here tells apart events far from each other (a timeout at
 * 300 ms against one that never fires), never two close ones.
 *
 * @module
 */

import assert from "node:assert/strict";
import http2 from "node:http2";
import { gzipSync } from "node:zlib";
import { drainCounting, generatedBody, refusedAddress } from "./_test_backend.ts";
import { failure, jsMiB, MiB, request, text } from "./_test_util.ts";
import {
  countingSink,
  patternSource,
  readBody,
  startWireBackend,
  type Wire,
  type WireBackend,
  type WireRequest,
  type WireResponse,
} from "./_test_wire_backend.ts";
import { createH1Transport } from "./h1_transport.ts";
import { createH2Transport } from "./h2_transport.ts";
import { UpstreamError, type UpstreamTransport } from "./transport.ts";
import { sleep } from "../../tests/support/wait.ts";

const TIMEOUT_MS = 300;
/**
 * A timeout fires at or after {@link TIMEOUT_MS}, never before half of it
 * (a timer that fired at once, or on the wrong deadline, is caught).
 */
const TIMEOUT_EARLIEST_MS = TIMEOUT_MS / 2;
/**
 * ...and well before this: the exchange's 10 s default, or no timeout at
 * all, would show (a busy 2-core machine running tests in parallel adds
 * hundreds of milliseconds, not seconds).
 */
const TIMEOUT_LATEST_MS = 5_000;
const enc = new TextEncoder();
const dec = new TextDecoder();

/** The transports under test, by the protocol they speak. */
const TRANSPORTS: Record<Wire, () => UpstreamTransport> = {
  h2: () => createH2Transport(),
  http1: () => createH1Transport(),
};

/** The protocol the current case runs on (cases are declared once per protocol). */
type Case = (t: UpstreamTransport, b: WireBackend, wire: Wire) => unknown;

/** Runs `body` for each protocol with a fresh backend and transport, closing both after. */
function suite(name: string, body: Case) {
  for (const wire of ["h2", "http1"] as const) {
    Deno.test({
      name: `upstream transport (${wire}): ${name}`,
      // Node's sockets (the test backend) and the shared timeout sweeper outlive a single test.
      sanitizeOps: false,
      sanitizeResources: false,
      async fn() {
        const backend = await startWireBackend(wire);
        const transport = TRANSPORTS[wire]();
        try {
          // Warm up (first connection), so timings measure exchanges only.
          const warm = await transport.exchange(request(backend, { path: "/__warm-up" }));
          assert.equal(warm.status, 404);
          await text(warm);
          backend.seen.length = 0;
          await body(transport, backend, wire);
        } finally {
          await transport.close();
          await backend.close();
        }
      },
    });
  }
}

/**
 * Asserts that the exchange `start` begins fails `timeout`, neither at once
 * nor never (the test fails at {@link TIMEOUT_LATEST_MS} instead of waiting).
 */
async function assertTimesOut(start: () => Promise<unknown>, what: string): Promise<void> {
  const t0 = performance.now();
  const err = await failure(within(start(), `${what}: the timeout`));
  const took = performance.now() - t0;
  assert.equal(err.kind, "timeout", `${what}: ${err.message}`);
  assert.ok(err.backendFault, what);
  assert.ok(
    took >= TIMEOUT_EARLIEST_MS,
    `${what}: failed after ${took.toFixed(0)} ms with a ${TIMEOUT_MS} ms timeout`,
  );
}

/** `p`, or a test failure naming `what` if it is not settled within {@link TIMEOUT_LATEST_MS}. */
async function within<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${what}: not within ${TIMEOUT_LATEST_MS} ms`)),
      TIMEOUT_LATEST_MS,
    );
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Answers `payload` whole. */
function answer(res: WireResponse, payload: string | Uint8Array, status = 200): void {
  const bytes = typeof payload === "string" ? enc.encode(payload) : payload;
  res.writeHead(status, { "content-length": bytes.byteLength });
  res.end(bytes);
}

/** Waits until the backend has seen `n` requests. */
async function seenAtLeast(b: WireBackend, n: number): Promise<void> {
  await within(
    (async () => {
      while (b.seen.length < n) await sleep(5);
    })(),
    `${n} request(s) at the backend`,
  );
}

suite("method, path, authority and fields forwarded exactly, nothing added", async (t, b, wire) => {
  b.route("/", (_req, res) => answer(res, "ok"));
  const fields: Array<[string, string]> = [
    ["x-one", "1"],
    ["x-rep", "a"],
    ["x-rep", "b"],
    ["cookie", "c=1; d=2"],
  ];
  const methods = wire === "h2"
    ? ["PROPFIND", "get", "GET", "DELETE"]
    : ["PROPFIND", "GET", "DELETE"];
  for (const method of methods) {
    const res = await t.exchange(request(b, {
      method,
      path: "/a/b%20c?q=1&r",
      authority: "example.test:8443",
      headers: fields,
    }));
    assert.equal(await text(res), "ok", method);
    const seen = b.seen.at(-1)!;
    assert.equal(seen.method, method);
    assert.equal(seen.path, "/a/b%20c?q=1&r");
    assert.equal(seen.authority, "example.test:8443");
    assert.equal(seen.scheme, wire === "h2" ? "http" : undefined);
    assert.deepEqual(seen.fields, fields, `${method}: regular fields, in order, nothing added`);
  }
  // No authority, a `host` field: the backend hears that host, once, and no other.
  assert.equal(
    await text(
      await t.exchange(request(b, { authority: undefined, headers: [["host", "h.test"]] })),
    ),
    "ok",
  );
  const bare = b.seen.at(-1)!;
  const hosts = [bare.authority, ...bare.fields.filter(([n]) => n === "host").map(([, v]) => v)]
    .filter((h) => h !== undefined);
  assert.deepEqual(hosts, ["h.test"]);
  // HTTP/2 keeps it as a field (no `:authority`); HTTP/1.1's `Host` line is the authority.
  assert.equal(bare.authority, wire === "h2" ? undefined : "h.test");
});

suite(
  "a gzip body passes through undecoded with its content-encoding and length",
  async (t, b) => {
    const plain = enc.encode("hello hello hello hello hello ".repeat(100));
    const gz = gzipSync(plain);
    b.route("/gz", (_req, res, seen) => {
      assert.ok(seen.fields.some(([n]) => n === "accept-encoding"));
      res.writeHead(200, {
        "content-encoding": "gzip",
        "content-length": gz.byteLength,
        "content-type": "text/plain",
      });
      res.end(gz);
    });
    const res = await t.exchange(request(b, {
      path: "/gz",
      headers: [["accept-encoding", "gzip"]],
    }));
    assert.equal(res.status, 200);
    assert.ok(res.headers.some(([n, v]) => n === "content-encoding" && v === "gzip"));
    assert.ok(
      res.headers.some(([n, v]) => n === "content-length" && v === String(gz.byteLength)),
    );
    assert.ok(res.body instanceof Uint8Array, "small complete body comes whole");
    assert.deepEqual(new Uint8Array(res.body), new Uint8Array(gz));
  },
);

suite("a GET with a body forwards the body (whole and streamed)", async (t, b) => {
  b.route("/echo", async (req, res) => answer(res, await readBody(req)));
  const whole = await t.exchange(request(b, { path: "/echo", body: enc.encode("get-body") }));
  assert.equal(await text(whole), "get-body");
  const streamed = await t.exchange(request(b, {
    path: "/echo",
    body: ReadableStream.from([enc.encode("get-"), enc.encode("stream")]),
  }));
  assert.equal(await text(streamed), "get-stream");
});

suite("small complete bodies come whole, large or unsized ones as a stream", async (t, b) => {
  const big = new Uint8Array(100 * 1024).fill(7);
  b.route("/small", (_req, res) => answer(res, "small"));
  b.route("/big", (_req, res) => answer(res, big));
  b.route("/unsized", (_req, res) => {
    res.writeHead(200);
    res.end("unsized");
  });
  b.route("/none", (_req, res) => {
    res.writeHead(204);
    res.end();
  });
  const small = await t.exchange(request(b, { path: "/small" }));
  assert.ok(small.body instanceof Uint8Array);
  assert.equal(dec.decode(small.body), "small");
  const large = await t.exchange(request(b, { path: "/big" }));
  assert.ok(large.body instanceof ReadableStream);
  assert.deepEqual(new Uint8Array(await new Response(large.body).arrayBuffer()), big);
  const unsized = await t.exchange(request(b, { path: "/unsized" }));
  assert.ok(unsized.body instanceof ReadableStream);
  assert.equal(await text(unsized), "unsized");
  const none = await t.exchange(request(b, { path: "/none" }));
  assert.equal(none.status, 204);
  assert.equal(none.body, null);
});

suite(
  "bodies stream with backpressure both ways: a side that stops reading stops the sender (8 MiB; HTTP/1.1: 16 MiB, socket buffers included)",
  async (t, b, wire) => {
    const total = 64 * MiB;
    const bound = wire === "h2" ? 8 * MiB : 16 * MiB;
    // Down: the backend writes as fast as it is let; the reader takes 1 MiB and pauses.
    const progress = { written: 0 };
    b.route("/down", (_req, res) => void patternSource(res, total, progress));
    const down = await t.exchange(request(b, { path: "/down" }));
    assert.ok(down.body instanceof ReadableStream);
    const reader = down.body.getReader();
    let read = 0;
    while (read < MiB) read += (await reader.read()).value!.length;
    await sleep(600);
    const ahead = progress.written - read;
    assert.ok(ahead < bound, `the backend got ${ahead} bytes ahead of a paused reader`);
    reader.releaseLock();
    try {
      const rest = await drainCounting(down.body);
      assert.equal(read + rest.bytes, total);
    } catch (err) {
      // Deno 2.9.6's node:http2 server resets a stream with NO_ERROR once
      // its handler has written the whole body, even while the end of that
      // body still waits on our flow-control credit: a truncated answer,
      // which the client must report (RFC 9113 §8.1). Anything else, or
      // before the backend wrote it all, is a failure.
      const truncatedByBackend = wire === "h2" && err instanceof UpstreamError &&
        err.kind === "reset" && /NO_ERROR/.test(err.message) && progress.written === total;
      if (!truncatedByBackend) throw err;
    }

    // Up: the backend does not read for 600 ms; the client's body is pulled
    // only as far as flow control and bounded buffers let it.
    let pulled = 0;
    const source = generatedBody(total).getReader();
    const counted = new ReadableStream<Uint8Array>({
      async pull(c) {
        const r = await source.read();
        if (r.done) return c.close();
        pulled += r.value.length;
        c.enqueue(r.value);
      },
      cancel: (reason) => source.cancel(reason),
    }, { highWaterMark: 0 });
    let pulledWhilePaused = -1;
    b.route("/late-reader", (req, res) => {
      req.pause();
      setTimeout(() => {
        pulledWhilePaused = pulled;
        countingSink(req, res);
        req.resume();
      }, 600);
    });
    const up = await t.exchange(
      request(b, { path: "/late-reader", method: "POST", body: counted }),
    );
    assert.equal(await text(up), `${total} true`);
    assert.ok(
      pulledWhilePaused >= 0 && pulledWhilePaused < bound,
      `${pulledWhilePaused} bytes pulled from the client while the backend read nothing`,
    );
  },
);

suite(
  "a backend that answers in full before reading the body (HTTP/2: then resets the stream, CANCEL): the answer stands",
  async (t, b, wire) => {
    // Deno.serve (hyper) resets the HTTP/2 stream when a handler ignores
    // the request body; Node's HTTP/1.1 server drains it instead.
    b.route("/early", (req, res) => {
      if (wire === "http1") return answer(res, "ok");
      // HEADERS, DATA with END_STREAM, then RST_STREAM CANCEL, in that order.
      const stream = (req as unknown as http2.Http2ServerRequest).stream;
      stream.respond({ ":status": 200, "content-length": 2 });
      stream.end("ok");
      stream.close(http2.constants.NGHTTP2_CANCEL);
    });
    for (let i = 0; i < 5; i++) {
      const res = await t.exchange(
        request(b, { path: "/early", method: "POST", body: generatedBody(8 * MiB) }),
      );
      assert.equal(res.status, 200);
      assert.equal(await text(res), "ok");
    }
  },
);

suite(
  "a client body that stalls longer than timeoutMs is not the backend's timeout: the answer comes",
  async (t, b) => {
    b.route("/up", countingSink);
    // Three chunks of the pattern; the client goes quiet for 2 × timeoutMs after the first.
    const source = generatedBody(3 * 64 * 1024).getReader();
    let n = 0;
    const body = new ReadableStream<Uint8Array>({
      async pull(c) {
        if (n++ === 1) await new Promise((r) => setTimeout(r, TIMEOUT_MS * 2));
        const r = await source.read();
        if (r.done) c.close();
        else c.enqueue(r.value);
      },
    }, { highWaterMark: 0 });
    const res = await t.exchange(
      request(b, { path: "/up", method: "POST", body, timeoutMs: TIMEOUT_MS }),
    );
    assert.equal(await text(res), `${3 * 64 * 1024} true`);
  },
);

suite("a backend that never answers fails with `timeout` at timeoutMs", async (t, b) => {
  const events: string[] = [];
  b.route("/stall", () => void events.push("reached the backend"));
  await assertTimesOut(
    () => t.exchange(request(b, { path: "/stall", timeoutMs: TIMEOUT_MS })),
    "the stalled request",
  );
  events.push("timed out");
  assert.equal(await within(b.seen[0].ended, "the cancel"), "cancelled");
  events.push("cancelled at the backend");
  assert.deepEqual(events, ["reached the backend", "timed out", "cancelled at the backend"]);
});

suite(
  "a backend that never reads a POST body: `timeout` at timeoutMs, 20 times, nothing kept",
  async (t, b, wire) => {
    const deaf: WireRequest[] = [];
    b.route("/deaf", (req) => { // never reads, never answers
      req.pause();
      deaf.push(req);
    });
    b.route("/ok", (_req, res) => answer(res, "ok"));
    const taken: number[] = [];
    // HTTP/1.1 has no window: the sockets' buffers take what the kernel lets
    // them (several MiB on loopback), so its streamed bodies are larger than
    // that, to be cut off too.
    const streamed = wire === "h2" ? MiB : 64 * MiB;
    const once = async (i: number) => {
      // A fresh buffer each round: a transport that keeps one shows in RSS.
      const body = i % 2 === 0
        ? new Uint8Array(MiB).fill(i)
        : generatedBody(streamed, undefined, (n) => taken.push(n));
      await assertTimesOut(
        () =>
          t.exchange(request(b, { path: "/deaf", method: "POST", body, timeoutMs: TIMEOUT_MS })),
        `round ${i}`,
      );
      // The round's own exchange, cancelled once the timeout fired, before the next round
      // (reading again, an HTTP/1.1 backend finds its connection closed).
      assert.equal(b.seen.length, i + 1, `round ${i}: one exchange per round`);
      deaf[i].resume();
      assert.equal(await within(b.seen[i].ended, `round ${i}: the cancel`), "cancelled");
    };
    await once(0);
    await once(1);
    const baseJs = jsMiB();
    for (let i = 2; i < 20; i++) await once(i);
    // Every streamed body's source was cancelled, having given only what
    // flow control let through (window + buffers; HTTP/1.1: the sockets'
    // buffers), never the whole body.
    assert.equal(taken.length, 10, "every streamed body's source was cancelled");
    const most = wire === "h2" ? 640 * 1024 : 16 * MiB;
    assert.ok(taken.every((n) => n <= most), `bytes taken from the client: ${taken}`);
    // This thread's live objects and buffers (exact after GC): nothing kept.
    const grewJs = jsMiB() - baseJs;
    assert.ok(grewJs < 4, `JS heap + buffers grew by ${grewJs.toFixed(1)} MiB over 18 rounds`);
    // (RSS under a parallel test run measures V8's lazy heap growth more
    // than retention: the end-to-end test #13.3 runs the proxy with a
    // capped heap instead.) The transport still serves.
    assert.equal(await text(await t.exchange(request(b, { path: "/ok" }))), "ok");
  },
);

suite(
  "client abort: `aborted` at once, the backend sees the exchange cancelled",
  async (t, b) => {
    b.route("/stall", () => {});
    const ac = new AbortController();
    const p = t.exchange(request(b, { path: "/stall", signal: ac.signal }));
    await seenAtLeast(b, 1);
    const start = performance.now();
    ac.abort();
    const err = await failure(p);
    assert.equal(err.kind, "aborted");
    assert.equal(err.backendFault, false);
    // At once: far sooner than the exchange's 10 s timeout (a busy machine may add a second).
    assert.ok(performance.now() - start < 2_000);
    assert.equal(await within(b.seen[0].ended, "the cancel"), "cancelled");
    // Already aborted: fails without reaching the backend.
    const again = await failure(t.exchange(request(b, { path: "/stall", signal: ac.signal })));
    assert.equal(again.kind, "aborted");
    assert.equal(b.seen.length, 1);
  },
);

suite("cancelling the response body: the backend sees the exchange cancelled", async (t, b) => {
  b.route("/drip", (_req, res) => {
    res.writeHead(200);
    res.write(new Uint8Array(1024));
  });
  const res = await t.exchange(request(b, { path: "/drip" }));
  assert.ok(res.body instanceof ReadableStream);
  const reader = res.body.getReader();
  assert.equal((await reader.read()).value?.byteLength, 1024);
  await reader.cancel();
  assert.equal(await within(b.seen[0].ended, "the cancel"), "cancelled");
});

suite("a client body that breaks fails the exchange, not the backend", async (t, b) => {
  b.route("/sink", (req) => void req.resume()); // reads, never answers
  let pulls = 0;
  const broken = new ReadableStream<Uint8Array>({
    async pull(c) {
      if (pulls++ === 0) return c.enqueue(new Uint8Array(1024));
      await seenAtLeast(b, 1);
      c.error(new Error("client stream broke"));
    },
  }, { highWaterMark: 0 });
  const err = await failure(
    t.exchange(request(b, { path: "/sink", method: "PUT", body: broken })),
  );
  assert.equal(err.backendFault, false, `kind ${err.kind}`);
  const end = await within(b.seen[0].ended, "the end at the backend");
  assert.notEqual(end, "complete", "the backend's exchange is broken off, not ended");
});

suite("a refused port fails with `connect`", async (t) => {
  const err = await failure(t.exchange(request({ address: refusedAddress() }, {
    authority: "x.test",
    timeoutMs: 5_000,
  })));
  assert.equal(err.kind, "connect");
  assert.ok(err.backendFault);
});

suite(
  "a backend that breaks off: before the head `reset`, mid-body the body stream errors",
  async (t, b) => {
    b.route("/rst-head", (req) => b.reset(req));
    b.route("/rst-body", (req, res) => {
      res.writeHead(200, { "content-length": 10 * MiB });
      res.write(new Uint8Array(100 * 1024), () => {
        setTimeout(() => b.reset(req), 20);
      });
    });
    const early = await failure(t.exchange(request(b, { path: "/rst-head" })));
    assert.equal(early.kind, "reset");
    const res = await t.exchange(request(b, { path: "/rst-body" }));
    assert.equal(res.status, 200);
    assert.ok(res.body instanceof ReadableStream);
    let got = 0;
    const err = await (async () => {
      try {
        for await (const c of res.body as ReadableStream<Uint8Array>) got += c.byteLength;
      } catch (e) {
        return e;
      }
      assert.fail("the body must not end cleanly");
    })();
    assert.ok(err instanceof UpstreamError, `body error ${err}`);
    // Deno's node:http2 server ends the stream (END_STREAM) before its
    // RST_STREAM: a body shorter than its content-length, which RFC 9113
    // §8.1.1 makes malformed (`protocol`), as is an HTTP/1.1 connection
    // closed before the content-length; a reset reads as such.
    assert.ok(err.kind === "reset" || err.kind === "protocol", `kind ${err.kind}`);
    assert.ok(err.backendFault);
    assert.ok(got <= 100 * 1024);
  },
);

suite(
  "release() closes the address's connection; the next exchange reconnects",
  async (t, b) => {
    b.route("/", (_req, res) => answer(res, "ok"));
    assert.equal(await text(await t.exchange(request(b))), "ok");
    assert.equal(await text(await t.exchange(request(b))), "ok");
    assert.equal(b.connections, 1, "one pooled connection per address");
    t.release(b.address);
    await within(b.connectionClosed(0), "the pooled connection closed");
    assert.equal(await text(await t.exchange(request(b))), "ok");
    assert.equal(b.connections, 2);
  },
);

suite("close(): pending exchanges fail `aborted`, later ones too", async (t, b) => {
  b.route("/stall", () => {});
  const p = t.exchange(request(b, { path: "/stall" }));
  await seenAtLeast(b, 1);
  const closing = t.close();
  const err = await failure(p);
  assert.equal(err.kind, "aborted");
  await closing;
  const later = await failure(t.exchange(request(b)));
  assert.equal(later.kind, "aborted");
});

suite(
  "request trailers follow the body (whole and streamed); none asked: none sent",
  async (t, b) => {
    // Echoes the body's length and the trailers it got (none: null).
    b.route("/trailers", async (req, res) => {
      const n = (await readBody(req)).length;
      const got = Object.keys(req.trailers).length > 0 ? { ...req.trailers } : null;
      answer(res, JSON.stringify({ n, trailers: got }));
    });
    const trailers: Array<[string, string]> = [["x-checksum", "abc"], ["x-count", "2"]];
    let asked = 0;
    const ask = () => (asked++, trailers);
    const whole = await t.exchange(request(b, {
      method: "POST",
      path: "/trailers",
      body: enc.encode("hello"),
      trailers: ask,
    }));
    assert.deepEqual(JSON.parse(await text(whole)), {
      n: 5,
      trailers: { "x-checksum": "abc", "x-count": "2" },
    });
    const streamed = await t.exchange(request(b, {
      method: "POST",
      path: "/trailers",
      body: generatedBody(300 * 1024),
      trailers: ask,
    }));
    assert.deepEqual(JSON.parse(await text(streamed)), {
      n: 300 * 1024,
      trailers: { "x-checksum": "abc", "x-count": "2" },
    });
    assert.equal(asked, 2, "asked once per exchange, after the body");
    // A getter that finds none: the request ends without a trailer section.
    const none = await t.exchange(request(b, {
      method: "POST",
      path: "/trailers",
      body: generatedBody(1024),
      trailers: () => null,
    }));
    assert.deepEqual(JSON.parse(await text(none)), { n: 1024, trailers: null });
  },
);

suite(
  "response trailers: with a whole body at once (HTTP/1.1: chunked, so streamed), on a streamed one by its end",
  async (t, b, wire) => {
    b.route("/trailers", (req, res) => {
      const size = Number(new URL(req.url!, "http://x").searchParams.get("n"));
      // HTTP/2 declares the length of a small body beside its trailers;
      // HTTP/1.1 cannot (trailers need chunked framing).
      const head: Record<string, string | number> = { trailer: "grpc-status, grpc-message, x-sum" };
      if (size <= 1024 && wire === "h2") head["content-length"] = size;
      res.writeHead(200, head);
      res.write(new Uint8Array(size).fill(0x61));
      res.addTrailers({ "grpc-status": "0", "grpc-message": "fine", "x-sum": String(size) });
      res.end();
    });
    for (const n of [5, 200 * 1024]) {
      const res = await t.exchange(request(b, { path: `/trailers?n=${n}` }));
      assert.equal(res.status, 200);
      if (n === 5 && wire === "h2") {
        assert.ok(res.body instanceof Uint8Array, "a small body comes whole");
      } else {
        assert.ok(res.body instanceof ReadableStream);
        // (A small chunked body may arrive whole, trailers and all, with its head.)
        if (n > 5) assert.equal(res.trailers, undefined, "not known before the body");
      }
      assert.equal((await text(res)).length, n);
      assert.deepEqual(res.trailers, [["grpc-status", "0"], ["grpc-message", "fine"], [
        "x-sum",
        String(n),
      ]]);
    }
    b.route("/plain", (_req, res) => {
      res.writeHead(200);
      res.end("x");
    });
    const plain = await t.exchange(request(b, { path: "/plain" }));
    assert.equal(await text(plain), "x");
    assert.equal(plain.trailers, undefined, "no trailers: none");
  },
);

suite(
  "#29.1: connections are counted per address and protocol: opened, reused, failed, closed by reason",
  async (t, b, wire) => {
    b.route("/", (_req, res) => answer(res, "ok"));
    const counts = () => t.connections!().find((c) => c.address === b.address)!;
    // The warm-up opened the one connection; three more requests reuse it.
    for (let i = 0; i < 3; i++) assert.equal(await text(await t.exchange(request(b))), "ok");
    assert.equal(counts().protocol, wire);
    assert.equal(counts().opened, 1);
    assert.equal(counts().reused, 3);
    assert.equal(counts().open, 1);
    t.release(b.address);
    await within(b.connectionClosed(0), "the released connection closed");
    assert.equal(counts().open, 0);
    assert.equal(counts().closed.retired, 1);
    // A refused port: an attempt that established nothing.
    const refused = refusedAddress();
    await failure(t.exchange(request({ address: refused })));
    const failed = t.connections!().find((c) => c.address === refused)!;
    assert.deepEqual([failed.opened, failed.connectFailures, failed.open], [0, 1, 0]);
    // A new connection, closed when the transport closes.
    assert.equal(await text(await t.exchange(request(b))), "ok");
    assert.equal(counts().opened, 2);
    await t.close();
    assert.equal(counts().closed.shutdown, 1);
    assert.equal(counts().open, 0);
    const closed = Object.values(counts().closed).reduce((a, n) => a + n, 0);
    assert.equal(closed, 2, `closed by reason: ${JSON.stringify(counts().closed)}`);
  },
);
