/**
 * Fault test (issue #8): 10,000 malformed or mutated request streams and
 * QPACK field sections over real QUIC connections, plus garbage on the
 * control and QPACK encoder streams of separate connections. The proxy may
 * only answer with HTTP responses, stream closes or connection closes: it
 * never crashes, still serves a normal request afterwards, and its memory
 * does not grow without bound.
 *
 * Each case gets its own request stream, one at a time per connection, so
 * every outcome belongs to one case; about three quarters of the cases are
 * connection errors (RFC 9114 §7.1 frame errors, RFC 9204 decompression
 * failures), so the run costs ~7,500 QUIC handshakes spread over 64
 * connections in parallel: about 26 s for 10,000 cases within a full suite run
 * on the 2-core CI machine. Every case runs: a run that exceeds its budget
 * (240 s, about nine times that) stops and fails, saying how many cases ran.
 *
 * Cases come from a seeded PRNG; a failing case is printed as hex so it can be
 * replayed. Knobs (environment): `FUZZ_SEED`, `FUZZ_CASES` (10,000),
 * `FUZZ_LANES` (64 connections at once), `FUZZ_PER_LANE` (1 stream in flight
 * per connection), `FUZZ_BUDGET_MS` (240,000).
 */
// deno-lint-ignore-file no-console
import assert from "node:assert/strict";
import {
  concatBytes,
  encodeFrame,
  encodeFrameHeader,
  encodeGoaway,
  encodeSettingsFrame,
  encodeVarint,
  FrameDecoder,
  FrameType,
  NEED_MORE,
  QpackDecoder,
  QpackEncoder,
} from "../../proxy/h3/mod.ts";
import { rng as prng } from "../../proxy/h3/_test_util.ts";
import {
  encodeIndexedStatic,
  encodeLiteralStaticNameRef,
  encodeLiteralWithLiteralName,
  encodeSectionPrefix,
} from "../../proxy/h3/qpack/_test_util.ts";
import { raiseReceiveBuffer, WANTED_RECEIVE_BUFFER } from "../../proxy/quic/udp_buffer.ts";
import { settledWithin } from "../../shared/deadline.ts";
import { startBackend } from "../support/backend.ts";
import { H3TestClient } from "../support/h3_client.ts";
import { startProxy, testCerts } from "../support/proxy_process.ts";
import { faultConfig, getHead, isAlive, mib, rssBytes } from "../support/faults.ts";
import { sleep, withTimeout } from "../support/wait.ts";
import { scrapeMetrics } from "../support/metrics.ts";

const CASES = Number(Deno.env.get("FUZZ_CASES") ?? 10_000);
/** RSS is sampled after this many cases (measured: it plateaus by ~2,000). */
const WARMUP_CASES = 3_000;
/** Connections used at once. */
const LANES = Number(Deno.env.get("FUZZ_LANES") ?? 64);
/** Request streams in flight at once on one connection. */
const PER_LANE = Number(Deno.env.get("FUZZ_PER_LANE") ?? 1);
/** Cases sent on one connection before it is replaced by a fresh one. */
const CASES_PER_CONNECTION = 500;
/** A control/encoder-stream garbage connection every this many cases. */
const CRITICAL_EVERY = 250;
/**
 * How long one case may wait for the proxy's answer. An answer takes a few
 * milliseconds; with a second full test suite running beside this one, one
 * case in 10,000 once took over 3 s (replayed alone: the proxy closed the
 * connection in 2-9 ms, as it should), so the bound is generous.
 */
const CASE_TIMEOUT_MS = 10_000;
/**
 * How long a case whose field section references the QPACK dynamic table
 * (Required Insert Count > 0) is given: such a stream is legitimately blocked
 * until an insertion that never comes (RFC 9204 §2.1.2).
 */
const BLOCKED_TIMEOUT_MS = 300;
const MAX_RSS_GROWTH = 64 * 1024 * 1024;
/**
 * Wall-clock budget for all the cases, far above a run's measured 26 s in a
 * full suite on 2 cores: a starved run that exceeds it stops and FAILS, saying
 * how many cases ran; it never passes on a fraction of them.
 */
const BUDGET_MS = Number(Deno.env.get("FUZZ_BUDGET_MS") ?? 240_000);

/** Connect attempts a lane may repeat after the proxy shed its handshake for time. */
const SHED_RETRIES = 3;

/** `spooky_connections_rejected_total{reason="handshake_timeout"}` of the proxy. */
async function handshakesShedForTime(adminPort: number): Promise<number> {
  const text = await scrapeMetrics(adminPort);
  const line = /^spooky_connections_rejected_total\{reason="handshake_timeout"\} (\d+)$/m.exec(
    text,
  );
  return Number(line?.[1] ?? 0);
}

const hex = (b: Uint8Array) => [...b].map((x) => x.toString(16).padStart(2, "0")).join("");

/** Valid request streams the mutators start from. */
function seedCorpus(port: number): Uint8Array[] {
  const auth = `localhost:${port}`;
  const huff = new QpackEncoder({ huffman: true });
  const plain = new QpackEncoder({ huffman: false });
  const head = (path: string, method = "GET", extra: Array<[string, string]> = []) =>
    [
      [":method", method],
      [":scheme", "https"],
      [":authority", auth],
      [":path", path],
      ...extra,
    ] as Array<
      [string, string]
    >;
  const headers = (block: Uint8Array) => encodeFrame(FrameType.HEADERS, block);
  const data = (bytes: Uint8Array) => encodeFrame(FrameType.DATA, bytes);
  const body = new TextEncoder().encode("hello fuzz body");
  return [
    headers(huff.encodeSection(head("/fuzz/a"))),
    headers(
      plain.encodeSection(head("/fuzz/b?q=1", "GET", [["accept", "*/*"], ["user-agent", "fz"]])),
    ),
    concatBytes(
      headers(
        huff.encodeSection(head("/fuzz/c", "POST", [["content-length", String(body.length)]])),
      ),
      data(body),
    ),
    concatBytes(
      headers(plain.encodeSection(head("/fuzz/d", "PUT", [["content-type", "text/plain"]]))),
      data(body.subarray(0, 5)),
      data(body.subarray(5)),
      headers(plain.encodeSection([["x-trailer", "yes"]])),
    ),
    // Hand-built section: literal names, never-index bit, Huffman strings.
    headers(concatBytes(
      encodeSectionPrefix(0, 0, 128),
      encodeIndexedStatic(17), // :method GET
      encodeIndexedStatic(23), // :scheme https
      encodeLiteralStaticNameRef(0, auth, { huffman: true }),
      encodeLiteralStaticNameRef(1, "/fuzz/e", { huffman: false, neverIndex: true }),
      encodeLiteralWithLiteralName("x-custom-header", "value with spaces", { huffman: true }),
      encodeLiteralWithLiteralName("cookie", "a=1; b=2", { huffman: false }),
    )),
    // Reserved (grease) frame before HEADERS, unknown frame after.
    concatBytes(
      encodeFrame(0x21, new Uint8Array([1, 2, 3])),
      headers(huff.encodeSection(head("/fuzz/f"))),
      encodeFrame(0x1f * 7 + 0x21, new Uint8Array(0)),
    ),
  ];
}

/** Bogus frame: HTTP/2-only or control-only types, wrong lengths, huge varints. */
function bogusFrame(rnd: () => number): Uint8Array {
  const types = [0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0d, 0x00, 0x01, 0x21, 0x3fff];
  const type = types[Math.floor(rnd() * types.length)];
  const r = rnd();
  if (r < 0.3) {
    // Declared length far beyond what follows.
    return concatBytes(
      encodeVarint(type),
      encodeVarint(Math.floor(rnd() * 2 ** 30)),
      randomBytes(rnd, 4),
    );
  }
  if (r < 0.4) return concatBytes(encodeVarint(type), Uint8Array.of(0xff, 0xff)); // truncated varint
  return encodeFrame(type, randomBytes(rnd, Math.floor(rnd() * 24)));
}

function randomBytes(rnd: () => number, n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.floor(rnd() * 256);
  return out;
}

/** A field section whose QPACK content is broken in one of several ways. */
function badSection(rnd: () => number, port: number): Uint8Array {
  const valid = [
    encodeIndexedStatic(17),
    encodeIndexedStatic(23),
    encodeLiteralStaticNameRef(0, `localhost:${port}`),
    encodeLiteralStaticNameRef(1, "/fuzz/q"),
  ];
  switch (Math.floor(rnd() * 7)) {
    case 0: // invalid prefix: random Required Insert Count / Base bytes
      return concatBytes(randomBytes(rnd, 2), ...valid);
    case 1: // bad Huffman: flagged Huffman string with random (or all-ones) bytes
      return concatBytes(
        Uint8Array.of(0, 0),
        ...valid.slice(0, 3),
        Uint8Array.of(0x51, 0x80 | 6),
        rnd() < 0.5 ? Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0xff, 0xff) : randomBytes(rnd, 6),
      );
    case 2: // static index out of range
      return concatBytes(Uint8Array.of(0, 0), encodeIndexedStatic(99 + Math.floor(rnd() * 1000)));
    case 3: // dynamic reference with nothing in the table
      return concatBytes(Uint8Array.of(0, 0), Uint8Array.of(0x80 | Math.floor(rnd() * 64)));
    case 4: // string length beyond the block
      return concatBytes(
        Uint8Array.of(0, 0),
        Uint8Array.of(0x5f, 0x7f, 0xff, 0xff, 0x03),
        randomBytes(rnd, 3),
      );
    case 5: // prefix integer overflow
      return concatBytes(
        Uint8Array.of(0, 0, 0xff),
        new Uint8Array(12).fill(0xff),
        Uint8Array.of(1),
      );
    default: // pure noise
      return randomBytes(rnd, 1 + Math.floor(rnd() * 40));
  }
}

/** Produces one mutated request stream. */
function mutate(rnd: () => number, corpus: Uint8Array[], port: number): Uint8Array {
  const base = corpus[Math.floor(rnd() * corpus.length)];
  switch (Math.floor(rnd() * 8)) {
    case 0: { // random byte flips
      const out = base.slice();
      const n = 1 + Math.floor(rnd() * 4);
      for (let i = 0; i < n; i++) out[Math.floor(rnd() * out.length)] ^= 1 << Math.floor(rnd() * 8);
      return out;
    }
    case 1: { // random byte overwrite
      const out = base.slice();
      out[Math.floor(rnd() * out.length)] = Math.floor(rnd() * 256);
      return out;
    }
    case 2: // truncation
      return base.subarray(0, Math.floor(rnd() * base.length));
    case 3: { // bogus frame spliced in
      const at = Math.floor(rnd() * (base.length + 1));
      return concatBytes(base.subarray(0, at), bogusFrame(rnd), base.subarray(at));
    }
    case 4: { // first frame's length rewritten
      const len = Math.floor(rnd() * 200);
      const rest = base.subarray(2); // corpus frames start with a 1-byte type and 1-byte length
      return concatBytes(base.subarray(0, 1), encodeVarint(len), rest);
    }
    case 5: // broken QPACK section in an otherwise fine HEADERS frame
      return encodeFrame(FrameType.HEADERS, badSection(rnd, port));
    case 6: // DATA first, or HEADERS after a body, or doubled HEADERS
      return rnd() < 0.5
        ? concatBytes(encodeFrame(FrameType.DATA, randomBytes(rnd, 8)), base)
        : concatBytes(base, base);
    default: // noise
      return randomBytes(rnd, Math.floor(rnd() * 64));
  }
}

type Outcome = "response" | "fin" | "reset" | "conn-closed" | "blocked" | "timeout";

/** Whether a complete HEADERS frame of the stream has a non-zero Required Insert Count. */
function mayBlock(bytes: Uint8Array): boolean {
  const frames = new FrameDecoder({ maxFrameSize: 1 << 20 });
  frames.push(bytes);
  try {
    for (let ev = frames.next(); ev !== NEED_MORE; ev = frames.next()) {
      if (ev.kind === "frame" && ev.type === FrameType.HEADERS && ev.payload[0] !== 0) return true;
    }
  } catch {
    // a frame error ends the stream's meaning here
  }
  return false;
}

interface CaseResult {
  outcome: Outcome;
  status?: number;
}

/** Sends one case on a fresh request stream and classifies what the proxy did. */
async function runCase(conn: Deno.QuicConn, bytes: Uint8Array, closed: { v: boolean }): Promise<
  CaseResult
> {
  let stream: Deno.QuicBidirectionalStream;
  try {
    stream = await conn.createBidirectionalStream();
  } catch {
    return { outcome: "conn-closed" };
  }
  const writer = stream.writable.getWriter();
  const sending = (async () => {
    try {
      if (bytes.length > 0) await writer.write(bytes);
      await writer.close();
    } catch {
      // the proxy reset or the connection closed: the read side tells
    }
  })();
  const reader = stream.readable.getReader();
  const frames = new FrameDecoder({ maxFrameSize: 1 << 20 });
  const qpack = new QpackDecoder({ maxTableCapacity: 0, maxBlockedStreams: 0 });
  let status: number | undefined;
  let got = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const blockable = mayBlock(bytes);
  const timeout = new Promise<"timeout">((r) =>
    timer = setTimeout(() => r("timeout"), blockable ? BLOCKED_TIMEOUT_MS : CASE_TIMEOUT_MS)
  );
  try {
    for (;;) {
      const r = await Promise.race([reader.read(), timeout]);
      if (r === "timeout") {
        reader.cancel().catch(() => {});
        if (!blockable && await closedOnProbe(conn)) return { outcome: "conn-closed" };
        return { outcome: blockable ? "blocked" : "timeout" };
      }
      if (r.done) break;
      got += r.value.length;
      frames.push(r.value);
      // What the proxy sends must always be a well-formed HTTP/3 response.
      for (let ev = frames.next(); ev !== NEED_MORE; ev = frames.next()) {
        if (ev.kind === "frame" && ev.type === FrameType.HEADERS && status === undefined) {
          const fields = qpack.decodeSection(0, ev.payload) as Array<[string, string]>;
          status = Number(fields.find(([n]) => n === ":status")?.[1]);
          assert.ok(status >= 200 && status <= 599, `bad :status in ${JSON.stringify(fields)}`);
        }
      }
    }
  } catch (err) {
    if (err instanceof assert.AssertionError) throw err;
    if (status !== undefined) return { outcome: "response", status };
    return { outcome: closed.v ? "conn-closed" : "reset" };
  } finally {
    clearTimeout(timer);
    await sending;
  }
  if (status !== undefined) return { outcome: "response", status };
  assert.equal(got, 0, "bytes without a HEADERS frame");
  return { outcome: "fin" };
}

/**
 * Whether the proxy had closed the connection and the client missed it: a
 * CONNECTION_CLOSE is sent once and lost when the client's UDP receive
 * buffer overflows (two full suites side by side: a truncated field section
 * closed its connection in 10 ms, and the client waited on). A closed
 * endpoint answers any further packet with CONNECTION_CLOSE again (RFC 9000
 * §10.2.1), so a new stream's bytes draw it out.
 */
async function closedOnProbe(conn: Deno.QuicConn): Promise<boolean> {
  try {
    const probe = await conn.createBidirectionalStream();
    const w = probe.writable.getWriter();
    w.write(new Uint8Array([0x21, 0x00])).catch(() => {}); // a reserved frame, ignored by a live peer
  } catch {
    return true; // the connection is gone already
  }
  return await settledWithin(conn.closed, 5_000);
}

/** Garbage on the control or QPACK encoder stream of its own connection. */
async function criticalStreamCase(
  port: number,
  ca: string,
  rnd: () => number,
  endpoint: Deno.QuicEndpoint,
): Promise<string> {
  const client = await H3TestClient.connect(port, ca, undefined, undefined, undefined, endpoint);
  const which = Math.floor(rnd() * 4);
  try {
    if (which === 0) {
      await client.sendControl(randomBytes(rnd, 1 + Math.floor(rnd() * 64)));
    } else if (which === 1) {
      // Frames that are not allowed on the control stream, or a second SETTINGS.
      const frames = [
        encodeSettingsFrame(new Map([[1, 0]])),
        encodeFrame(FrameType.DATA, Uint8Array.of(1)),
        encodeFrame(FrameType.HEADERS, Uint8Array.of(0, 0)),
        encodeFrame(0x02, Uint8Array.of(0)),
        encodeGoaway(Math.floor(rnd() * 1000)),
        encodeFrameHeader(FrameType.GOAWAY, 40),
      ];
      await client.sendControl(frames[Math.floor(rnd() * frames.length)]);
    } else {
      // QPACK encoder stream noise (insertions beyond capacity, bad indices, Huffman).
      await client.sendEncoderInstructions(randomBytes(rnd, 1 + Math.floor(rnd() * 64)));
    }
    const info = await Promise.race([client.conn.closed, sleep(400).then(() => null)]);
    // Whatever happened, the connection is either closed by the proxy or still usable.
    return info === null ? "still-open" : `closed 0x${info.closeCode.toString(16)}`;
  } catch {
    return "closed";
  } finally {
    await client.close();
  }
}

Deno.test("faults: 10,000 malformed frame sequences and QPACK blocks never crash or bloat the proxy", async () => {
  const seed = Number(Deno.env.get("FUZZ_SEED") ?? 0x5eed8);
  const rnd = prng(seed);
  // The backend reads each body before it answers: a backend that answers
  // first and then resets the stream is the upstream conformance suite's
  // case, not what this test is about.
  const be = startBackend("b", async (req) => {
    await req.arrayBuffer().catch(() => {});
    return new Response("ok");
  });
  const proxy = await startProxy(
    faultConfig([be.address], {
      requestTimeoutMs: 5000,
      // A dynamic table offered (none by default): its blocked sections are fuzzed too.
      extra: "admin: {address: 127.0.0.1, port: 0}\nlimits: {qpack_max_table_capacity: 4096}",
    }),
  );
  const ca = await Deno.readTextFile((await testCerts()).caPath);
  // One local endpoint for the ~7,500 client connections: without it Deno
  // binds one per connection, whose native state lingers until V8 collects
  // it; this process grew to several GiB (24 GiB once, beside the rest of the
  // suite, until the kernel killed it).
  const endpoint = new Deno.QuicEndpoint({ hostname: "127.0.0.1" });
  // Its 64 connections share one socket: with the kernel's default receive
  // buffer a starved test process dropped packets there, and a lost FIN or
  // Finished waits out backed-off retransmissions (cases unanswered for 10 s).
  raiseReceiveBuffer(endpoint.addr.port, WANTED_RECEIVE_BUFFER);
  const corpus = seedCorpus(proxy.port);
  const outcomes = new Map<string, number>();
  const critical = new Map<string, number>();
  const bump = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
  const timeouts: string[] = [];
  const failed5xx: string[] = [];
  const rssSamples: string[] = [];
  let rssWarm = 0;
  const t0 = performance.now();
  try {
    // Sanity: every seed is a valid request the proxy serves.
    {
      const c = await H3TestClient.connect(proxy.port, ca);
      for (const s of corpus) {
        const r = await runCase(c.conn, s, { v: false });
        assert.deepEqual(r, { outcome: "response", status: 200 }, hex(s));
      }
      await c.close();
    }

    let next = 0;
    let connections = 0;
    let retriedAfterShed = 0;
    /**
     * A lane's connection. On a machine starved by other suites a handshake
     * can outlive `limits.handshake_timeout_ms` (lost packets, backed-off
     * retransmissions) and the proxy sheds it, as admission should: that
     * connect is tried again, at most {@link SHED_RETRIES} times and only when
     * the proxy's metrics show a handshake shed for time that no retry has
     * accounted for yet; any other connect failure fails the test.
     */
    const connectLane = async (): Promise<H3TestClient> => {
      for (let attempt = 0;; attempt++) {
        try {
          return await withTimeout(
            H3TestClient.connect(proxy.port, ca, undefined, undefined, undefined, endpoint),
            20_000,
            "connect",
          );
        } catch (err) {
          const shed = await handshakesShedForTime(proxy.adminPort!);
          if (attempt >= SHED_RETRIES || shed <= retriedAfterShed) {
            throw new Error(
              `a lane's connect failed (handshakes shed for time: ${shed}, ` +
                `connects retried after one: ${retriedAfterShed})`,
              { cause: err },
            );
          }
          retriedAfterShed++;
        }
      }
    };
    // Each lane owns one connection and keeps a few cases in flight on it;
    // when a case closes the connection (a connection error), the lane opens
    // a new one. A case in flight on a closed connection counts as closed.
    const overBudget = () => performance.now() - t0 > BUDGET_MS;
    const lane = async () => {
      while (next < CASES && !overBudget()) {
        const client = await connectLane();
        connections++;
        const closed = { v: false };
        client.conn.closed.then(() => (closed.v = true), () => (closed.v = true));
        const end = Math.min(CASES, next + CASES_PER_CONNECTION);
        const worker = async () => {
          while (next < end && !closed.v && !overBudget()) {
            const i = next++;
            const bytes = mutate(rnd, corpus, proxy.port);
            const r = await runCase(client.conn, bytes, closed).catch((err) => {
              throw new Error(`case #${i} (seed 0x${seed.toString(16)}): ${hex(bytes)}`, {
                cause: err,
              });
            });
            bump(outcomes, r.outcome === "response" ? `response ${r.status}` : r.outcome);
            if (r.outcome === "timeout") timeouts.push(`#${i} ${hex(bytes)}`);
            if (r.outcome === "response" && (r.status ?? 0) >= 500) {
              failed5xx.push(`#${i} ${hex(bytes)}`);
            }
            if ((i + 1) % CRITICAL_EVERY === 0) {
              bump(critical, await criticalStreamCase(proxy.port, ca, rnd, endpoint));
            }
            if (i + 1 === WARMUP_CASES) rssWarm = await rssBytes(proxy.pid);
            if ((i + 1) % 1000 === 0) rssSamples.push(mib(await rssBytes(proxy.pid)));
          }
        };
        await Promise.all(Array.from({ length: PER_LANE }, worker));
        await client.close();
      }
    };
    await withTimeout(
      Promise.all(Array.from({ length: LANES }, lane)),
      BUDGET_MS + 60_000,
      "fuzz cases",
    );
    const ran = next;
    const elapsed = performance.now() - t0;
    // #32.3: the full count or a failure that says how many ran (a cut run passed before).
    assert.equal(
      ran,
      CASES,
      `only ${ran} of ${CASES} cases ran within the budget of ${BUDGET_MS / 1000} s ` +
        `(FUZZ_BUDGET_MS); ${(elapsed / 1000).toFixed(1)} s elapsed: the machine is starved`,
    );
    assert.ok(await isAlive(proxy.pid), "proxy still running");
    await sleep(500);
    const rssAfter = await rssBytes(proxy.pid);

    // Still serves a normal request.
    const c = await H3TestClient.connect(proxy.port, ca);
    const ok = await c.request({ head: getHead("/after-fuzz", proxy.port) });
    await c.close();
    console.log(
      `fuzz seed 0x${seed.toString(16)}: ${ran} cases on ${connections} connections in ${
        (elapsed / 1000).toFixed(1)
      } s (${retriedAfterShed} connects retried after a handshake shed for time); ` +
        `outcomes ${JSON.stringify(Object.fromEntries(outcomes))}; critical-stream cases ${
          JSON.stringify(Object.fromEntries(critical))
        }; RSS after warm-up ${mib(rssWarm)}, after all ${mib(rssAfter)}; ` +
        `every 1,000 cases: ${rssSamples.join(" ")}`,
    );
    // Only a stream waiting for a dynamic-table insertion may stay unanswered.
    assert.deepEqual(timeouts, [], "unanswered cases that could not be QPACK-blocked");
    assert.equal(ok.status, 200);
    assert.ok(await isAlive(proxy.pid));
    assert.ok(
      rssAfter - rssWarm < MAX_RSS_GROWTH,
      `RSS grew by ${mib(rssAfter - rssWarm)} after warm-up`,
    );
    const panics = proxy.stderr.filter((l) => /panic|Uncaught|Top-level await/.test(l));
    assert.deepEqual(panics, []);
    // The backend always answers 200: a 5xx, a backend failure or an ejection
    // would mean a client's malformed input was blamed on a healthy backend.
    // No allowance: the upstream's own HTTP/2 client resets no backend stream here.
    await sleep(300); // the proxy's last log lines
    const fiveXX = [...outcomes.entries()].filter(([k]) => /^response 5/.test(k));
    const why = [...failed5xx, ...proxy.stderr.filter((l) => /WARN|ERROR/.test(l)).slice(-10)];
    assert.deepEqual(fiveXX, [], why.join("\n"));
    assert.deepEqual(proxy.stderr.filter((l) => /ejected|backend \S+ failed/.test(l)), []);
  } finally {
    endpoint.close();
    const code = await proxy.stop();
    await be.close();
    const unusual = proxy.stderr.filter((l) => !/\] \[(WARN|ERROR|INFO)\] \[proxy/.test(l));
    assert.equal(code, 0, `proxy exit code; stderr apart from logs:\n${unusual.join("\n")}`);
  }
});
