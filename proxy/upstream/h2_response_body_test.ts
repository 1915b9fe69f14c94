/**
 * The connection window bounds what readers hold (issue #32 item 2): a
 * response body's credit, the stream's and the connection's, returns as its
 * reader takes the bytes, so readers that stall stop their backend at the
 * session's connection window in total, and a few of them leave the other
 * streams of the session room. The backend is a raw HTTP/2 server that sends
 * every body as fast as the client's windows allow, and counts.
 *
 * @module
 */

import assert from "node:assert/strict";
import { DEFAULT_WINDOW, Flag, FrameType, H2Code, SettingId } from "../h2/mod.ts";
import { frame, headers } from "../h2/_test_util.ts";
import { sleep, withTimeout } from "../../tests/support/wait.ts";
import { startRawH2 } from "./_test_raw_h2.ts";
import { createH2Transport } from "./h2_transport.ts";
import { sessionCodecOptions, STREAM_WINDOW } from "./h2_session.ts";
import { UpstreamError, type UpstreamResponse, type UpstreamTransport } from "./transport.ts";

/** The largest DATA frame the backend sends (the default SETTINGS_MAX_FRAME_SIZE). */
const FRAME = 16_384;

/** The connection window a session grants with the transport's defaults. */
const CONNECTION_WINDOW = sessionCodecOptions(undefined).connectionWindow!;

interface FlowStream {
  path: string;
  window: number;
  left: number;
}

/**
 * A backend that answers each request (`/<bytes>/<n>`) with a 200 without
 * content-length (the body streams) and `<bytes>` of body, sent in frames as
 * fast as the client's stream and connection windows allow, never past them
 * (past the connection's when it `overruns`).
 */
function flowBackend(overruns = false) {
  const streams = new Map<number, FlowStream>();
  const b = {
    /** DATA octets sent, all streams together. */
    sent: 0,
    /** The connection's send window as the client granted it. */
    connection: DEFAULT_WINDOW,
    streams,
    /** Requests seen. */
    get requests() {
      return streams.size;
    },
    /** Nothing more can be sent until the client grants credit (or all is sent). */
    get blocked() {
      for (const s of streams.values()) {
        if (s.left > 0 && Math.min(s.window, b.connection) > 0) return false;
      }
      return true;
    },
    /** Paths of the bodies sent whole. */
    ended: () => [...streams.values()].filter((s) => s.left === 0).map((s) => s.path),
    /** The error code of the client's GOAWAY, once it sent one. */
    goaway: -1,
  };
  let initial = DEFAULT_WINDOW;
  const pump = (write: (bytes: Uint8Array) => void) => {
    for (const [id, s] of streams) {
      for (;;) {
        const n = Math.min(FRAME, s.left, s.window, overruns ? Infinity : b.connection);
        if (n <= 0) break;
        s.left -= n;
        s.window -= n;
        b.connection -= n;
        b.sent += n;
        write(frame(FrameType.DATA, s.left === 0 ? Flag.END_STREAM : 0, id, new Uint8Array(n)));
      }
    }
  };
  const server = startRawH2((conn, id, fields) => {
    const path = fields.find(([n]) => n === ":path")![1];
    streams.set(id, { path, window: initial, left: Number(path.split("/")[1]) });
    conn.write(headers(id, [[":status", "200"]]));
    pump(conn.write);
  }, (conn, f) => {
    const view = new DataView(f.payload.buffer, f.payload.byteOffset);
    if (f.type === FrameType.SETTINGS && (f.flags & Flag.ACK) === 0) {
      for (let i = 0; i + 6 <= f.payload.length; i += 6) {
        if (view.getUint16(i) !== SettingId.INITIAL_WINDOW_SIZE) continue;
        const next = view.getUint32(i + 2);
        for (const s of streams.values()) s.window += next - initial;
        initial = next;
      }
    } else if (f.type === FrameType.WINDOW_UPDATE) {
      const inc = view.getUint32(0) & 0x7fffffff;
      if (f.stream === 0) b.connection += inc;
      else {
        const s = streams.get(f.stream);
        if (s !== undefined) s.window += inc;
      }
      pump(conn.write);
    } else if (f.type === FrameType.GOAWAY) {
      b.goaway = view.getUint32(4);
    }
  });
  return Object.assign(b, { address: server.address, close: () => server.close() });
}

function get(t: UpstreamTransport, address: string, path: string): Promise<UpstreamResponse> {
  return t.exchange({
    address,
    method: "GET",
    path,
    authority: "a.test",
    headers: [],
    body: null,
    timeoutMs: 30_000,
  });
}

async function until(what: string, ok: () => boolean, ms = 10_000): Promise<void> {
  const end = performance.now() + ms;
  while (!ok()) {
    if (performance.now() > end) assert.fail(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/** The body's length once read to its end, failing past 10 s. */
async function bodyLength(res: UpstreamResponse, what: string): Promise<number> {
  const read = new Response(res.body as ReadableStream<Uint8Array>).arrayBuffer();
  return (await withTimeout(read, 10_000, `${what}'s body`)).byteLength;
}

Deno.test("#32.2: the session window is max(4 MiB, 16 stream windows), its credit returned on consume", () => {
  assert.equal(STREAM_WINDOW, 256 * 1024);
  assert.equal(CONNECTION_WINDOW, 4 * 1024 * 1024);
  assert.equal(sessionCodecOptions({ streamWindow: 1 << 20 }).connectionWindow, 16 << 20);
  assert.equal(sessionCodecOptions({ connectionWindow: 1 << 20 }).connectionWindow, 1 << 20);
  assert.equal(
    sessionCodecOptions({ connectionCredit: "on-arrival" }).connectionCredit,
    "on-consume",
  );
});

Deno.test({
  name:
    "#32.2: readers that stall stop the backend at the connection window in total; what they drop or read returns it, and every body completes",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    // 24 bodies of 200 KiB, each within a stream window: 4.8 MiB the stream
    // windows alone would let through, 0.8 MiB past the connection's.
    const count = 24;
    const size = 200 * 1024;
    assert.ok(count * Math.min(size, STREAM_WINDOW) > CONNECTION_WINDOW);
    const backend = flowBackend();
    const t = createH2Transport();
    try {
      const responses = await Promise.all(
        Array.from({ length: count }, (_, i) => get(t, backend.address, `/${size}/${i}`)),
      );
      for (const res of responses) assert.equal(res.status, 200);
      // Nobody reads: the backend sends what the windows allow, then stops.
      await until(
        "the backend to run out of credit",
        () => backend.requests === count && backend.blocked,
      );
      await sleep(300);
      assert.ok(
        backend.sent <= CONNECTION_WINDOW,
        `${backend.sent} octets sent to stalled readers, past the ${CONNECTION_WINDOW}-octet connection window`,
      );
      assert.equal(backend.connection, 0, "the connection window is what stopped it");
      const ended = backend.ended();
      assert.ok(
        ended.length >= 16 && ended.length < count,
        "some bodies wait for connection credit",
      );

      // 16 of the bodies sent whole are dropped unread (their streams are
      // over: only the body gives their credit back), the rest are read. The
      // reads alone return less than half the window, the point at which
      // credit goes back: the bodies still being sent finish only if the
      // dropped octets were given back.
      const dropped = new Set(ended.slice(0, 16));
      const byPath = new Map(responses.map((r, i) => [`/${size}/${i}`, r]));
      const reads: Array<Promise<number>> = [];
      for (const [path, res] of byPath) {
        if (dropped.has(path)) await (res.body as ReadableStream).cancel();
        else reads.push(bodyLength(res, path));
      }
      const lengths = await Promise.all(reads);
      assert.deepEqual(lengths, lengths.map(() => size));
      assert.equal(backend.sent, count * size);
      // What was read or dropped came back (credit returns by half windows).
      await until("the connection credit back", () => backend.connection >= CONNECTION_WINDOW / 2);
    } finally {
      await t.close();
      await backend.close();
    }
  },
});

Deno.test({
  name:
    "#32.2: a handful of stalled readers leave the other streams of their session room to finish",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const stalled = 8;
    const big = 1 << 20;
    const backend = flowBackend();
    const t = createH2Transport();
    try {
      const held = await Promise.all(
        Array.from({ length: stalled }, (_, i) => get(t, backend.address, `/${big}/${i}`)),
      );
      // Each stalled reader holds one stream window.
      await until(
        "the stalled bodies to fill their windows",
        () => backend.requests === stalled && backend.blocked,
      );
      assert.equal(backend.sent, stalled * STREAM_WINDOW, "each holds one stream window");
      assert.ok(backend.connection > 0, "the connection window has room left");
      const fresh = await get(t, backend.address, `/${2 * big}/fresh`);
      assert.equal(backend.streams.size, stalled + 1);
      assert.equal(await bodyLength(fresh, "the fresh request"), 2 * big);
      for (const res of held) await (res.body as ReadableStream).cancel();
    } finally {
      await t.close();
      await backend.close();
    }
  },
});

Deno.test({
  name:
    "#32.2: a backend that sends stalled readers past the connection window gets FLOW_CONTROL_ERROR; their bodies fail `protocol`",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    // 20 bodies of two stream windows: the stream windows let 5 MiB through,
    // sent whatever the connection window (4 MiB) says.
    const count = 20;
    const backend = flowBackend(true);
    const t = createH2Transport();
    try {
      // Nobody reads. Requests whose head came before the overrun get a
      // body that fails; the others fail outright.
      const outcomes = Array.from(
        { length: count },
        (_, i) =>
          get(t, backend.address, `/${2 * STREAM_WINDOW}/${i}`).then(
            (r) => ({ r }),
            (e: Error) => ({ e }),
          ),
      );
      await until("the client's GOAWAY", () => backend.goaway >= 0);
      assert.equal(backend.goaway, H2Code.FLOW_CONTROL_ERROR);
      assert.ok(backend.sent > CONNECTION_WINDOW);
      const failures = await Promise.all(outcomes.map(async (settled) => {
        const o = await settled;
        if ("e" in o) return o.e;
        return await bodyLength(o.r, "a stalled body").then(() => null, (e: Error) => e);
      }));
      for (const e of failures) {
        assert.ok(e instanceof UpstreamError, `every request fails: ${e}`);
        assert.equal(e.kind, "protocol", e.message);
        assert.match(e.message, /FLOW_CONTROL_ERROR: connection window overrun/);
      }
    } finally {
      await t.close();
      await backend.close();
    }
  },
});
