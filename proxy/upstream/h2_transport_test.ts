/**
 * The own-client transport's stream accounting (issue #25 item 3): the
 * backend's SETTINGS_MAX_CONCURRENT_STREAMS is honoured by queueing or by
 * more sessions, a request abandoned before its stream opens never reaches
 * the backend, and the backend's count of open streams returns to zero.
 * The backend is Deno's `node:http2` server, which enforces its limit.
 *
 * @module
 */

import assert from "node:assert/strict";
import http2 from "node:http2";
import { createH2Transport, type H2TransportOptions } from "./h2_transport.ts";
import type { UpstreamError, UpstreamTransport } from "./transport.ts";
import { type RawConn, startRawH2 } from "./_test_raw_h2.ts";
import { cat, frame, headers, u32 } from "../h2/_test_util.ts";
import { failure, request } from "./_test_util.ts";
import { H2Code } from "../h2/errors.ts";
import { sleep } from "../../tests/support/wait.ts";
import { closeAll } from "../../tests/support/tcp.ts";

interface LimitedBackend {
  address: string;
  /** Streams open at the backend now, the most ever, and all it saw. */
  active: number;
  max: number;
  total: number;
  sessions: number;
  /** Answers every stream waiting so far (200, body "x"). */
  answer(): void;
  close(): Promise<void>;
}

async function limitedBackend(maxConcurrentStreams: number): Promise<LimitedBackend> {
  const server = http2.createServer({ settings: { maxConcurrentStreams } });
  const waiting: http2.ServerHttp2Stream[] = [];
  const sessions: http2.ServerHttp2Session[] = [];
  const b: LimitedBackend = {
    address: "",
    active: 0,
    max: 0,
    total: 0,
    sessions: 0,
    answer() {
      for (const s of waiting.splice(0)) {
        if (s.closed || s.destroyed) continue;
        s.respond({ ":status": 200, "content-length": 1 });
        s.end("x");
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sessions) if (!s.destroyed) s.destroy();
        server.close(() => resolve());
      }),
  };
  server.on("session", (s: http2.ServerHttp2Session) => {
    sessions.push(s);
    b.sessions++;
    s.on("error", () => {});
  });
  server.on("stream", (s: http2.ServerHttp2Stream) => {
    b.active++;
    b.total++;
    b.max = Math.max(b.max, b.active);
    s.on("error", () => {});
    s.once("close", () => b.active--);
    waiting.push(s);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  b.address = `127.0.0.1:${(server.address() as { port: number }).port}`;
  return b;
}

async function until(what: string, ok: () => boolean, ms = 5_000): Promise<void> {
  const end = performance.now() + ms;
  while (!ok()) {
    if (performance.now() > end) assert.fail(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

function get(
  t: UpstreamTransport,
  b: LimitedBackend,
  over: { signal?: AbortSignal; timeoutMs?: number; connectTimeoutMs?: number } = {},
) {
  return t.exchange({
    address: b.address,
    method: "GET",
    path: "/",
    authority: "a.test",
    headers: [],
    body: null,
    timeoutMs: over.timeoutMs ?? 10_000,
    connectTimeoutMs: over.connectTimeoutMs,
    signal: over.signal,
  }).then((r) => r.status, (e: UpstreamError) => e.kind);
}

/** What `pending` settle to, the backend answering one held request every 20 ms meanwhile. */
async function answeredAll<T>(b: LimitedBackend, pending: Promise<T>[]): Promise<T[]> {
  const answering = setInterval(() => b.answer(), 20);
  try {
    return await Promise.all(pending);
  } finally {
    clearInterval(answering);
  }
}

async function withBackend(
  limit: number,
  opts: H2TransportOptions,
  body: (t: UpstreamTransport, b: LimitedBackend) => Promise<void>,
) {
  const b = await limitedBackend(limit);
  const t = createH2Transport(opts);
  try {
    await body(t, b);
  } finally {
    await t.close();
    await b.close();
  }
}

const test = (name: string, fn: () => Promise<void>) =>
  Deno.test({ name, sanitizeOps: false, sanitizeResources: false, fn });

test("RFC 9113 §5.1.2: one session never has more streams open than the backend allows; the rest wait", () =>
  withBackend(3, { maxSessionsPerAddress: 1 }, async (t, b) => {
    const all = Array.from({ length: 8 }, () => get(t, b));
    await until("3 streams at the backend", () => b.active === 3);
    await sleep(100);
    assert.equal(b.active, 3);
    assert.deepEqual(await answeredAll(b, all), Array(8).fill(200));
    assert.equal(b.max, 3);
    assert.equal(b.total, 8);
    assert.equal(b.sessions, 1);
  }));

test("a full session makes another, up to the bound", () =>
  withBackend(2, { maxSessionsPerAddress: 3 }, async (t, b) => {
    const all = Array.from({ length: 7 }, () => get(t, b));
    await until("6 streams at the backend", () => b.active === 6);
    assert.equal(b.sessions, 3);
    assert.deepEqual(await answeredAll(b, all), Array(7).fill(200));
    assert.equal(b.total, 7);
  }));

test("#25.3: a request abandoned before its stream opens never opens; one abandoned after is reset", () =>
  withBackend(2, { maxSessionsPerAddress: 1 }, async (t, b) => {
    const open = [new AbortController(), new AbortController()];
    const first = open.map((ac) => get(t, b, { signal: ac.signal }));
    await until("2 streams at the backend", () => b.active === 2);
    // Queued behind them: two the client leaves, one that times out while waiting.
    const gone = [new AbortController(), new AbortController()];
    const queuedGone = gone.map((ac) => get(t, b, { signal: ac.signal }));
    const queuedLate = get(t, b, { timeoutMs: 200 });
    const kept = get(t, b);
    await sleep(50);
    for (const ac of gone) ac.abort();
    assert.deepEqual(await Promise.all(queuedGone), ["aborted", "aborted"]);
    assert.equal(await queuedLate, "timeout");
    // The two open ones are abandoned too: reset, and the backend's count drops.
    for (const ac of open) ac.abort();
    assert.deepEqual(await Promise.all(first), ["aborted", "aborted"]);
    await until("the kept request at the backend", () => b.total === 3);
    b.answer();
    assert.equal(await kept, 200);
    await until("no stream open at the backend", () => b.active === 0);
    await sleep(200);
    assert.equal(b.total, 3, "the abandoned queued requests never reached the backend");
    assert.equal(b.max, 2);
  }));

test("the queue is bounded: past it a request fails `connect` at once (nothing reached the backend)", () =>
  withBackend(1, { maxSessionsPerAddress: 1, maxQueuedPerAddress: 2 }, async (t, b) => {
    const all = Array.from({ length: 4 }, () => get(t, b));
    assert.equal(await all[3], "connect");
    assert.deepEqual(await answeredAll(b, all.slice(0, 3)), [200, 200, 200]);
    assert.equal(b.total, 3);
  }));

test("an idle session is closed once its streams are done and it is released", () =>
  withBackend(10, {}, async (t, b) => {
    const p = get(t, b);
    await until("one stream", () => b.active === 1);
    t.release(b.address);
    b.answer();
    assert.equal(await p, 200);
    // A new exchange after release opens a fresh session.
    const q = get(t, b);
    await until("second stream", () => b.total === 2);
    b.answer();
    assert.equal(await q, 200);
    assert.equal(b.sessions, 2);
  }));

test("RFC 9113 §6.8: a request above GOAWAY's last stream id is sent again on a new session", async () => {
  let seen = 0;
  const server = startRawH2((conn, stream) => {
    seen++;
    if (stream === 1) conn.respond(stream, "first");
    else conn.goaway(1); // stream 3 and later: refused, never processed
  });
  const t = createH2Transport();
  const ask = (body: Uint8Array | ReadableStream<Uint8Array> | null = null) =>
    t.exchange({
      address: server.address,
      method: body === null ? "GET" : "POST",
      path: "/",
      authority: "a.test",
      headers: [],
      body,
      timeoutMs: 5_000,
    });
  try {
    const a = await ask();
    assert.equal(a.status, 200);
    // Stream 3 on the first session is refused by GOAWAY; the replay opens
    // stream 1 of a second session, which answers.
    const b = await ask(new TextEncoder().encode("replayable"));
    assert.equal(b.status, 200);
    assert.equal(server.conns.length, 2);
    assert.equal(seen, 3);
    // The GOAWAY's session closed once drained: the backend's doing (`/metrics`).
    const counts = t.connections!().find((c) => c.address === server.address)!;
    assert.deepEqual([counts.opened, counts.closed.peer_closed, counts.open], [2, 1, 1]);
  } finally {
    await t.close();
    await server.close();
  }
});

test("PING liveness: a backend that goes silent with a stream open fails it `timeout` before the request timeout", async () => {
  const server = startRawH2((conn) => conn.silence());
  const t = createH2Transport({ pingAfterMs: 200, pingTimeoutMs: 200 });
  try {
    const start = performance.now();
    const err = await failure(t.exchange(request(server, { timeoutMs: 30_000 })));
    assert.equal(err.kind, "timeout");
    assert.match(err.message, /PING/);
    assert.ok(performance.now() - start < 20_000);
    const counts = t.connections!().find((c) => c.address === server.address)!;
    assert.deepEqual([counts.opened, counts.closed.timeout], [1, 1]);
  } finally {
    await t.close();
    await server.close();
  }
});

test("RFC 9113 §4.2: backends may send DATA frames of 64 KiB (our SETTINGS_MAX_FRAME_SIZE), a download in a quarter of the frames", async () => {
  let advertised: number | undefined;
  const body = new Uint8Array(64 * 1024).fill(7);
  const server = startRawH2((conn, stream) => {
    conn.write(cat(
      headers(stream, [[":status", "200"], ["content-length", String(body.length)]]),
      frame(0, 1, stream, body), // one DATA frame, END_STREAM
    ));
  }, (_conn, f) => {
    if (f.type !== 4 || (f.flags & 1) !== 0) return;
    const view = new DataView(f.payload.buffer, f.payload.byteOffset);
    for (let i = 0; i + 6 <= f.payload.length; i += 6) {
      if (view.getUint16(i) === 0x5) advertised = view.getUint32(i + 2);
    }
  });
  const t = createH2Transport();
  try {
    const res = await t.exchange(request(server, { timeoutMs: 5_000 }));
    assert.equal(res.status, 200);
    const got = res.body instanceof ReadableStream
      ? new Uint8Array(await new Response(res.body).arrayBuffer())
      : res.body;
    assert.equal(got?.length, body.length);
    assert.ok(got!.every((b) => b === 7));
    assert.equal(advertised, 64 * 1024);
  } finally {
    await t.close();
    await server.close();
  }
});

test("RFC 9113 §3.4: a backend that accepts and sends no SETTINGS fails `connect` (nothing sent), not at the request timeout", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const held: Deno.Conn[] = [];
  (async () => {
    for await (const c of listener) held.push(c); // accepts, says nothing
  })().catch(() => {});
  const t = createH2Transport({ connectTimeoutMs: 200 });
  try {
    const err = await failure(
      t.exchange(
        request({ address: `127.0.0.1:${(listener.addr as Deno.NetAddr).port}` }, {
          timeoutMs: 30_000,
        }),
      ),
    );
    assert.equal(err.kind, "connect");
    assert.match(err.message, /SETTINGS/);
    // Connected, but no SETTINGS in time: closed for a timeout, not a failed connect.
    const counts = t.connections!()[0];
    assert.deepEqual([counts.opened, counts.connectFailures, counts.closed.timeout], [1, 0, 1]);
  } finally {
    await t.close();
    listener.close();
    for (const c of held) c.close();
  }
});

test("rapid reset defence of hyper backends: clients leaving in a burst do not make Deno.serve drop the session and everyone's requests with it", async () => {
  // Deno.serve is hyper on Rust's h2 crate, which ends a connection with
  // GOAWAY ENHANCE_YOUR_CALM once more than 20 streams reset by the client
  // wait in its accept queue. Without the reset budget this case failed 150
  // of its kept requests ("backend closed the connection").
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    await req.arrayBuffer().catch(() => {});
    return new Response("ok");
  });
  const t = createH2Transport({ maxSessionsPerAddress: 1 });
  const base = {
    address: `127.0.0.1:${server.addr.port}`,
    path: "/",
    authority: "a.test",
    headers: [] as Array<[string, string]>,
    timeoutMs: 30_000,
  };
  try {
    // Three rounds: without the budget one round in three failed here.
    for (let round = 0; round < 3; round++) await burst(round);
  } finally {
    await t.close();
    await server.shutdown();
  }

  async function burst(round: number): Promise<void> {
    const left: Promise<unknown>[] = [];
    const kept: Promise<string>[] = [];
    for (let i = 0; i < 150; i++) {
      // A client that leaves 10 ms after its request went out, body unfinished.
      const ac = new AbortController();
      const never = new ReadableStream<Uint8Array>({ pull: () => new Promise(() => {}) });
      left.push(
        t.exchange({ ...base, method: "POST", body: never, signal: ac.signal }).catch(() => {}),
      );
      setTimeout(() => ac.abort(), 10);
      // And one that stays.
      kept.push(
        t.exchange({ ...base, method: "POST", body: new Uint8Array(3) }).then(
          async (res) => `${res.status} ${await new Response(res.body as ReadableStream).text()}`,
          (e: UpstreamError) => `${e.kind}: ${e.message}`,
        ),
      );
    }
    await Promise.all(left);
    const answers = await Promise.all(kept);
    const failed = answers.filter((a) => a !== "200 ok");
    assert.deepEqual(failed, [], `round ${round}: ${failed.length} of 150 kept requests failed`);
  }
});

/** How a backend that lies refuses a request: the head it sends first, then the refusal. */
interface Refusal {
  readonly head: "none" | "1xx" | "final";
  readonly refuse: "rst" | "goaway";
}

const REFUSALS: readonly Refusal[] = (["none", "1xx", "final"] as const).flatMap((head) =>
  (["rst", "goaway"] as const).map((refuse) => ({ head, refuse }))
);

/** Writes `r` on `stream`: a head (a 103, or a 200 declaring 10 bytes and 3 of them), then the refusal. */
function refuseOn(conn: RawConn, stream: number, r: Refusal): Promise<void> {
  const head = r.head === "none"
    ? new Uint8Array(0)
    : r.head === "1xx"
    ? headers(stream, [[":status", "103"]])
    : cat(
      headers(stream, [[":status", "200"], ["content-length", "10"]]),
      frame(0, 0, stream, new Uint8Array(3)),
    );
  const refusal = r.refuse === "rst"
    ? frame(3, 0, stream, u32(H2Code.REFUSED_STREAM))
    : frame(7, 0, 0, cat(u32(0), u32(H2Code.NO_ERROR))); // GOAWAY, last stream 0
  return conn.write(cat(head, refusal));
}

for (const r of REFUSALS) {
  for (const method of ["POST", "GET"]) {
    const after = r.head === "none" ? "before any response head" : `after a ${r.head} head`;
    const want = r.head === "none" ? "replayed, then `connect`" : "`protocol`, never replayed";
    test(`#35.1: RFC 9113 §8.7: a ${method} refused by ${r.refuse} ${after} is ${want}`, async () => {
      let deliveries = 0;
      const server = startRawH2((conn, stream) => {
        deliveries++;
        refuseOn(conn, stream, r);
      });
      const t = createH2Transport();
      try {
        const err = await failure(
          t.exchange(
            request(server, {
              method,
              body: method === "POST" ? new TextEncoder().encode("pay 10") : null,
            }),
          ),
        );
        if (r.head === "none") {
          // Provably not processed: sent again at once (twice), whatever the method.
          assert.equal(err.kind, "connect", err.message);
          assert.ok(err.refusedStream, "#30.2: retry_on `refused` tells it from `connect`");
          assert.equal(deliveries, 3);
        } else {
          assert.equal(err.kind, "protocol", err.message);
          assert.match(err.message, /after a response head/);
          assert.equal(deliveries, 1, "the backend processed it: it is never sent again");
        }
      } finally {
        await t.close();
        await server.close();
      }
    });
  }
}

test("#35.1: a refusal after a streamed response was handed over errors its body `protocol`; nothing is sent again", async () => {
  let deliveries = 0;
  const server = startRawH2((conn, stream) => {
    deliveries++;
    // No content-length: the body streams, the head is handed over at once.
    conn.write(cat(
      headers(stream, [[":status", "200"]]),
      frame(0, 0, stream, new Uint8Array(3)),
      frame(3, 0, stream, u32(H2Code.REFUSED_STREAM)),
    ));
  });
  const t = createH2Transport();
  try {
    const res = await t.exchange({
      address: server.address,
      method: "POST",
      path: "/",
      authority: "a.test",
      headers: [],
      body: new TextEncoder().encode("pay 10"),
      timeoutMs: 10_000,
    });
    assert.equal(res.status, 200);
    const err = await new Response(res.body as ReadableStream).arrayBuffer().then(
      () => null,
      (e: UpstreamError) => e,
    );
    assert.equal(err?.kind, "protocol");
    assert.equal(deliveries, 1);
  } finally {
    await t.close();
    await server.close();
  }
});

const INVALID_HEADS: Array<[string, Array<[string, string]>]> = [
  ["a field name that is no token", [[":status", "200"], ["x(y)", "1"]]],
  ["a control character in a value", [[":status", "200"], ["x", "a\x01b"]]],
  ["te other than trailers", [[":status", "200"], ["te", "gzip"]]],
  ["an uppercase field name", [[":status", "200"], ["X-Upper", "1"]]],
  ["a connection-specific field", [[":status", "200"], ["connection", "close"]]],
  ["an invalid :status", [[":status", "600"]]],
];

for (const [what, fields] of INVALID_HEADS) {
  test(`RFC 9113 §8.2, §8.3: a response head with ${what} fails \`invalid_response\` (the codec found it); nothing is sent again`, async () => {
    let deliveries = 0;
    const server = startRawH2((conn, stream) => {
      deliveries++;
      conn.write(headers(stream, fields, true));
    });
    const t = createH2Transport();
    try {
      const err = await failure(t.exchange(request(server)));
      assert.equal(err.kind, "invalid_response", err.message);
      assert.match(err.message, /invalid response head/);
      assert.equal(deliveries, 1);
    } finally {
      await t.close();
      await server.close();
    }
  });
}

/** A listener that accepts TCP and never says a word (no TLS ServerHello, no SETTINGS). */
function stallListener() {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const held: Deno.Conn[] = [];
  const state = { accepts: 0, ended: 0 };
  (async () => {
    for await (const c of listener) {
      state.accepts++;
      held.push(c);
      (async () => {
        const buf = new Uint8Array(4096);
        try {
          while ((await c.read(buf)) !== null) { /* the ClientHello, unanswered */ }
        } catch { /* reset */ }
        state.ended++;
      })();
    }
  })().catch(() => {});
  return {
    address: `127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    state,
    /** Closes the oldest connection still held (the backend gives up on it). */
    closeOne() {
      try {
        held.shift()?.close();
      } catch { /* closed */ }
    },
    close() {
      listener.close();
      closeAll(held);
    },
  };
}

function askStalled(
  t: UpstreamTransport,
  address: string,
  connectTimeoutMs: number | undefined,
  timeoutMs = 8_000,
) {
  return t.exchange(request({ address }, { timeoutMs, connectTimeoutMs }))
    .then(() => null, (e: UpstreamError) => e);
}

test("#35.2: a TLS handshake that never completes fails `connect` at connect_timeout_ms; the next request connects anew", async () => {
  const stalled = stallListener();
  const t = createH2Transport({ tlsFor: () => ({}) });
  try {
    const start = performance.now();
    const err = await askStalled(t, stalled.address, 300);
    assert.equal(err?.kind, "connect", err?.message);
    assert.match(err!.message, /not established within connect_timeout_ms \(300 ms\)/);
    assert.ok(performance.now() - start < 4_000, "long before the request timeout (8 s)");
    const again = await askStalled(t, stalled.address, 300);
    assert.equal(again?.kind, "connect");
    assert.equal(stalled.state.accepts, 2, "a new connection for the next request");
  } finally {
    await t.close();
    stalled.close();
  }
});

test("#35.2: TLS handshakes given up and still unanswered are bounded per address (Deno holds their sockets); one that ends frees its place", async () => {
  const stalled = stallListener();
  const t = createH2Transport({ tlsFor: () => ({}), maxSessionsPerAddress: 2 });
  try {
    for (let i = 0; i < 2; i++) {
      assert.match((await askStalled(t, stalled.address, 200))!.message, /not established/);
    }
    assert.equal(stalled.state.accepts, 2);
    // Both sockets are still held: the third attempt fails at once, unsent.
    const start = performance.now();
    const refused = await askStalled(t, stalled.address, 5_000);
    assert.equal(refused?.kind, "connect");
    assert.match(refused!.message, /2 TLS handshakes given up are still unanswered/);
    assert.ok(performance.now() - start < 2_500, "at once, not at its 5 s deadline");
    assert.equal(stalled.state.accepts, 2, "no third connection");
    // The backend closes one: its place is free again, and the socket released.
    stalled.closeOne();
    const end = performance.now() + 5_000;
    let next = await askStalled(t, stalled.address, 200);
    while (/still unanswered/.test(next!.message) && performance.now() < end) {
      await sleep(20);
      next = await askStalled(t, stalled.address, 200);
    }
    assert.match(next!.message, /not established/);
    assert.equal(stalled.state.accepts, 3);
  } finally {
    await t.close();
    stalled.close();
  }
});

test("#35.2: connect_timeout_ms is the request's: a new session takes the value of the request it is opened for", async () => {
  const stalled = stallListener();
  const t = createH2Transport(); // default 10 s
  try {
    const err = await askStalled(t, stalled.address, 300);
    assert.equal(err?.kind, "connect", err?.message);
    assert.match(err!.message, /no HTTP\/2 SETTINGS received within connect_timeout_ms \(300 ms\)/);
    // Another value (as after a reload) applies to the next session: a
    // deadline past the request's own, which then times out first.
    const late = await askStalled(t, stalled.address, 60_000, 1_000);
    assert.equal(late?.kind, "timeout", late?.message);
    assert.equal(stalled.state.accepts, 2);
  } finally {
    await t.close();
    stalled.close();
  }
});

/** A connector whose first `stalls` attempts never complete (until their signal aborts); the rest reach `address`. */
function stallingConnector(stalls: number, address: string) {
  const state = { attempts: 0, aborted: 0 };
  const connect = (_address: string, _tls: unknown, signal: AbortSignal): Promise<Deno.Conn> => {
    state.attempts++;
    if (state.attempts > stalls) {
      const port = Number(address.slice(address.lastIndexOf(":") + 1));
      return Deno.connect({ hostname: "127.0.0.1", port });
    }
    return new Promise((_, reject) =>
      signal.addEventListener("abort", () => {
        state.aborted++;
        reject(signal.reason);
      }, { once: true })
    );
  };
  return { connect, state };
}

test("#35.2: requests waiting on a session stuck connecting move to a new session; only the one it was opened for fails", async () => {
  const b = await limitedBackend(100);
  const c = stallingConnector(1, b.address);
  const t = createH2Transport({ connect: c.connect });
  try {
    const all = Array.from({ length: 3 }, () => get(t, b, { connectTimeoutMs: 300 }));
    await until("the two moved requests at the backend", () => b.active === 2);
    b.answer();
    assert.deepEqual(await Promise.all(all), ["connect", 200, 200]);
    assert.deepEqual(c.state, { attempts: 2, aborted: 1 });
    assert.equal(b.sessions, 1);
  } finally {
    await t.close();
    await b.close();
  }
});

test("#35.2: a request moves once: past a second stuck session it fails `connect` (its wait is bounded by two deadlines)", async () => {
  const b = await limitedBackend(100);
  const c = stallingConnector(Infinity, b.address);
  const t = createH2Transport({ connect: c.connect });
  try {
    const start = performance.now();
    const all = Array.from({ length: 3 }, () => get(t, b, { connectTimeoutMs: 300 }));
    assert.deepEqual(await Promise.all(all), ["connect", "connect", "connect"]);
    assert.ok(performance.now() - start < 5_000, "long before the request timeout (10 s)");
    assert.deepEqual(c.state, { attempts: 2, aborted: 2 });
  } finally {
    await t.close();
    await b.close();
  }
});
