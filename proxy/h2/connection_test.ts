import assert from "node:assert/strict";
import fc from "fast-check";
import { H2ClientConnection, type H2Event } from "./connection.ts";
import { CLIENT_PREFACE, FrameType } from "./frames.ts";
import { SettingId } from "./settings.ts";
import { H2Code } from "./errors.ts";
import { HpackDecoder } from "./hpack.ts";
import { cat, frame, headers, parseFrames, settings, u32 } from "./_test_util.ts";
import { MALFORMED_SECTIONS } from "../http/_test_util.ts";

const GET: Array<[string, string]> = [
  [":method", "GET"],
  [":scheme", "http"],
  [":path", "/"],
  [":authority", "a"],
];

/** A connection past the server's preface, with one GET open on stream 1. */
function ready(opts = {}): { c: H2ClientConnection; id: number } {
  const c = new H2ClientConnection(opts);
  c.receive(settings());
  const r = c.openStream(GET, { endStream: true });
  assert.ok("id" in r);
  c.takeOutput();
  return { c, id: r.id };
}

function only<T extends H2Event["type"]>(ev: H2Event[], type: T): Extract<H2Event, { type: T }> {
  const hit = ev.filter((e) => e.type === type);
  assert.equal(hit.length, 1, `one ${type} in ${JSON.stringify(ev.map((e) => e.type))}`);
  return hit[0] as Extract<H2Event, { type: T }>;
}

function connErr(ev: H2Event[], code: number) {
  const e = only(ev, "connection-error");
  assert.equal(e.code, code, e.message);
  assert.ok(e.local);
}

function streamErr(c: H2ClientConnection, ev: H2Event[], code: number) {
  const e = only(ev, "stream-error");
  assert.equal(e.code, code, e.message);
  assert.ok(e.local);
  const rst = parseFrames(c.takeOutput()!).find((f) => f.type === FrameType.RST_STREAM);
  assert.ok(rst, "RST_STREAM written");
  assert.equal(new DataView(rst.payload.buffer).getUint32(0), code);
  return e;
}

Deno.test("RFC 9113 §3.4: preface, SETTINGS with ENABLE_PUSH 0, connection window", () => {
  const c = new H2ClientConnection({ connectionWindow: 1 << 20 });
  const out = c.takeOutput()!;
  assert.deepEqual(out.subarray(0, 24), CLIENT_PREFACE);
  const frames = parseFrames(out, true);
  assert.equal(frames[0].type, FrameType.SETTINGS);
  const v = new DataView(frames[0].payload.buffer);
  const pairs = new Map<number, number>();
  for (let i = 0; i < frames[0].payload.length; i += 6) {
    pairs.set(v.getUint16(i), v.getUint32(i + 2));
  }
  assert.equal(pairs.get(SettingId.ENABLE_PUSH), 0);
  assert.equal(frames[1].type, FrameType.WINDOW_UPDATE);
  assert.equal(new DataView(frames[1].payload.buffer).getUint32(0), (1 << 20) - 65535);
});

Deno.test("RFC 9113 §6.5.3: the server's SETTINGS are acknowledged", () => {
  const c = new H2ClientConnection();
  c.takeOutput();
  const ev = c.receive(settings([[SettingId.MAX_CONCURRENT_STREAMS, 7]]));
  only(ev, "settings");
  assert.equal(c.peerMaxConcurrentStreams, 7);
  const ack = parseFrames(c.takeOutput()!);
  assert.equal(ack[0].type, FrameType.SETTINGS);
  assert.equal(ack[0].flags, 1);
});

Deno.test("a response head, body and trailers in pieces of any size", () => {
  const { c, id } = ready();
  const wire = cat(
    headers(id, [[":status", "200"], ["content-length", "5"], ["x-a", "1"]]),
    frame(FrameType.DATA, 0, id, new TextEncoder().encode("hel")),
    frame(FrameType.DATA, 0, id, new TextEncoder().encode("lo")),
    headers(id, [["grpc-status", "0"]], true),
  );
  for (const step of [1, 7, 1000]) {
    const { c, id: _ } = ready();
    const ev: H2Event[] = [];
    const body: number[] = [];
    for (let i = 0; i < wire.length; i += step) {
      for (const e of c.receive(wire.slice(i, i + step))) {
        if (e.type === "data") body.push(...e.data); // views valid until the next receive
        ev.push(e);
      }
    }
    const head = only(ev, "response");
    assert.equal(head.status, 200);
    assert.deepEqual(head.headers, [["content-length", "5"], ["x-a", "1"]]);
    assert.equal(new TextDecoder().decode(new Uint8Array(body)), "hello");
    assert.deepEqual(only(ev, "trailers").headers, [["grpc-status", "0"]]);
    assert.equal(c.activeStreams, 0);
  }
  assert.ok(c.activeStreams === 1);
});

Deno.test("RFC 9113 §8.1: a 1xx head is skipped; the final head follows", () => {
  const { c, id } = ready();
  const ev = c.receive(
    cat(
      headers(id, [[":status", "103"], ["link", "</a>"]]),
      headers(id, [[":status", "204"]], true),
    ),
  );
  assert.equal(only(ev, "response").status, 204);
});

Deno.test("RFC 9113 §6.6 / §8.4: PUSH_PROMISE is a connection error PROTOCOL_ERROR", () => {
  const { c, id } = ready();
  const ev = c.receive(frame(FrameType.PUSH_PROMISE, 4, id, cat(u32(2), new Uint8Array([0x82]))));
  connErr(ev, H2Code.PROTOCOL_ERROR);
  const out = parseFrames(c.takeOutput()!);
  assert.equal(out.at(-1)!.type, FrameType.GOAWAY);
  assert.deepEqual(c.receive(settings()), []); // nothing more accepted
});

Deno.test("RFC 9113 §3.4: an HTTP/1.1 answer is no server preface", () => {
  const c = new H2ClientConnection();
  connErr(
    c.receive(new TextEncoder().encode("HTTP/1.1 400 Bad Request\r\n\r\n")),
    H2Code.PROTOCOL_ERROR,
  );
});

Deno.test("RFC 9113 §6.1: DATA on stream 0 and on an idle stream are connection errors", () => {
  connErr(ready().c.receive(frame(FrameType.DATA, 0, 0, [1])), H2Code.PROTOCOL_ERROR);
  connErr(ready().c.receive(frame(FrameType.DATA, 0, 9, [1])), H2Code.PROTOCOL_ERROR);
  connErr(ready().c.receive(frame(FrameType.HEADERS, 4, 2, [0x88])), H2Code.PROTOCOL_ERROR);
});

Deno.test("RFC 9113 §4.3: a bad HPACK index is a connection error COMPRESSION_ERROR", () => {
  const { c, id } = ready();
  connErr(c.receive(frame(FrameType.HEADERS, 4, id, [0xff, 0x10])), H2Code.COMPRESSION_ERROR);
});

Deno.test("RFC 9113 §4.2: a frame above our MAX_FRAME_SIZE is FRAME_SIZE_ERROR", () => {
  const { c, id } = ready();
  connErr(c.receive(frame(FrameType.DATA, 0, id, new Uint8Array(16385))), H2Code.FRAME_SIZE_ERROR);
});

Deno.test("RFC 9113 §6.9.1: a window above 2^31-1 is FLOW_CONTROL_ERROR", () => {
  connErr(
    ready().c.receive(frame(FrameType.WINDOW_UPDATE, 0, 0, u32(0x7fffffff))),
    H2Code.FLOW_CONTROL_ERROR,
  );
  const { c, id } = ready();
  streamErr(
    c,
    c.receive(frame(FrameType.WINDOW_UPDATE, 0, id, u32(0x7fffffff))),
    H2Code.FLOW_CONTROL_ERROR,
  );
  connErr(
    ready().c.receive(settings([[SettingId.INITIAL_WINDOW_SIZE, 0x80000000]])),
    H2Code.FLOW_CONTROL_ERROR,
  );
});

Deno.test("RFC 9113 §6.9: a peer overrunning our receive windows", () => {
  const { c, id } = ready({ streamWindow: 16384, connectionWindow: 1 << 20 });
  c.receive(headers(id, [[":status", "200"]]));
  c.receive(frame(FrameType.DATA, 0, id, new Uint8Array(16384)));
  streamErr(
    c,
    c.receive(frame(FrameType.DATA, 0, id, new Uint8Array(1))),
    H2Code.FLOW_CONTROL_ERROR,
  );
});

Deno.test("RFC 9113 §6.4: RST_STREAM on stream 0, and a reset reported as the peer's", () => {
  connErr(ready().c.receive(frame(FrameType.RST_STREAM, 0, 0, u32(8))), H2Code.PROTOCOL_ERROR);
  const { c, id } = ready();
  const e = only(c.receive(frame(FrameType.RST_STREAM, 0, id, u32(2))), "stream-error");
  assert.equal(e.code, 2);
  assert.equal(e.local, false);
  assert.equal(c.activeStreams, 0);
});

Deno.test("RFC 9113 §6.5.2: invalid SETTINGS values are connection errors", () => {
  connErr(ready().c.receive(settings([[SettingId.ENABLE_PUSH, 1]])), H2Code.PROTOCOL_ERROR);
  connErr(ready().c.receive(settings([[SettingId.MAX_FRAME_SIZE, 100]])), H2Code.PROTOCOL_ERROR);
  connErr(ready().c.receive(frame(FrameType.SETTINGS, 0, 0, [0, 1, 0])), H2Code.FRAME_SIZE_ERROR);
  connErr(
    ready().c.receive(frame(FrameType.SETTINGS, 1, 0, [0, 1, 0, 0, 0, 0])),
    H2Code.FRAME_SIZE_ERROR,
  );
});

Deno.test("RFC 9113 §8.3.2: malformed response heads are stream errors PROTOCOL_ERROR, marked invalidHead", () => {
  for (const fields of [...MALFORMED_SECTIONS, [[":status", "101"]] as Array<[string, string]>]) {
    const { c, id } = ready();
    const e = streamErr(c, c.receive(headers(id, fields)), H2Code.PROTOCOL_ERROR);
    assert.equal(e.invalidHead, true, JSON.stringify(fields));
  }
  // A 1xx with END_STREAM breaks the framing, not the head.
  const { c, id } = ready();
  const e = streamErr(c, c.receive(headers(id, [[":status", "103"]], true)), H2Code.PROTOCOL_ERROR);
  assert.equal(e.invalidHead, false);
});

Deno.test("RFC 9113 §8.1.1: a body that disagrees with content-length is malformed", () => {
  let { c, id } = ready();
  c.receive(headers(id, [[":status", "200"], ["content-length", "3"]]));
  streamErr(c, c.receive(frame(FrameType.DATA, 1, id, [1, 2])), H2Code.PROTOCOL_ERROR);
  ({ c, id } = ready());
  c.receive(headers(id, [[":status", "200"], ["content-length", "1"]]));
  streamErr(c, c.receive(frame(FrameType.DATA, 0, id, [1, 2])), H2Code.PROTOCOL_ERROR);
  ({ c, id } = ready());
  const e = streamErr(c, c.receive(frame(FrameType.DATA, 0, id, [1])), H2Code.PROTOCOL_ERROR); // DATA before HEADERS
  assert.equal(e.invalidHead, false, "a body's framing is no invalid head");
});

Deno.test("RFC 9113 §6.10: CONTINUATION floods and strays end the connection", () => {
  let { c, id } = ready({ maxContinuations: 4 });
  let ev: H2Event[] = c.receive(frame(FrameType.HEADERS, 0, id, [0x88]));
  for (let i = 0; i < 5 && ev.length === 0; i++) {
    ev = c.receive(frame(FrameType.CONTINUATION, 0, id, [0x40, 1, 0x61, 1, 0x62]));
  }
  connErr(ev, H2Code.ENHANCE_YOUR_CALM);
  ({ c, id } = ready());
  c.receive(frame(FrameType.HEADERS, 0, id, [0x88]));
  connErr(c.receive(frame(FrameType.PING, 0, 0, new Uint8Array(8))), H2Code.PROTOCOL_ERROR);
  ({ c, id } = ready());
  connErr(c.receive(frame(FrameType.CONTINUATION, 4, id, [0x88])), H2Code.PROTOCOL_ERROR);
  ({ c, id } = ready({ maxHeaderBlock: 100 }));
  connErr(
    c.receive(frame(FrameType.HEADERS, 0, id, new Uint8Array(101))),
    H2Code.ENHANCE_YOUR_CALM,
  );
});

Deno.test("HEADERS split over CONTINUATION frames decode as one block", () => {
  const { c, id } = ready();
  const ev = [
    ...c.receive(frame(FrameType.HEADERS, 1, id, [0x88])),
    ...c.receive(frame(FrameType.CONTINUATION, 0, id, [0x40, 1, 0x61])),
    ...c.receive(frame(FrameType.CONTINUATION, 4, id, [1, 0x62])),
  ];
  const head = only(ev, "response");
  assert.deepEqual(head.headers, [["a", "b"]]);
  assert.ok(head.endStream);
});

Deno.test("a PING flood that is never read ends with ENHANCE_YOUR_CALM", () => {
  const { c } = ready({ maxPendingControl: 50 });
  let ev: H2Event[] = [];
  for (let i = 0; i < 60 && ev.length === 0; i++) {
    ev = c.receive(frame(FrameType.PING, 0, 0, new Uint8Array(8)));
  }
  connErr(ev, H2Code.ENHANCE_YOUR_CALM);
  // Taken output resets the count: a peer pinging a reader that keeps up is fine.
  const r = ready({ maxPendingControl: 50 });
  for (let i = 0; i < 200; i++) {
    assert.deepEqual(r.c.receive(frame(FrameType.PING, 0, 0, new Uint8Array(8))), []);
    r.c.takeOutput();
  }
});

Deno.test("RFC 9113 §6.8: streams above GOAWAY's last id are refused, earlier ones go on", () => {
  const c = new H2ClientConnection();
  c.receive(settings());
  const a = c.openStream(GET, { endStream: true });
  const b = c.openStream(GET, { endStream: true });
  assert.ok("id" in a && "id" in b);
  const ev = c.receive(frame(FrameType.GOAWAY, 0, 0, cat(u32(a.id), u32(0))));
  const refused = only(ev, "stream-error");
  assert.equal(refused.stream, b.id);
  assert.equal(refused.code, H2Code.REFUSED_STREAM);
  assert.equal(only(ev, "goaway").lastStreamId, a.id);
  assert.ok(c.closedForNewStreams);
  assert.ok(c.hasStream(a.id));
  assert.deepEqual(c.openStream(GET, { endStream: true }), { refused: "closed" });
});

Deno.test("#35.1: RFC 9113 §8.7: a stream's end says whether a response head (1xx included) had come, whatever a refusal claims", () => {
  const refused = (c: H2ClientConnection, bytes: Uint8Array) => {
    const e = only(c.receive(bytes), "stream-error");
    assert.equal(e.code, H2Code.REFUSED_STREAM);
    assert.equal(e.local, false);
    return e.answered;
  };
  const rst = (id: number) => frame(FrameType.RST_STREAM, 0, id, u32(H2Code.REFUSED_STREAM));
  const goaway0 = frame(FrameType.GOAWAY, 0, 0, cat(u32(0), u32(0)));
  // Refused before any head: not processed.
  let r = ready();
  assert.equal(refused(r.c, rst(r.id)), false);
  r = ready();
  assert.equal(refused(r.c, goaway0), false);
  // After a 103: processed.
  r = ready();
  assert.deepEqual(r.c.receive(headers(r.id, [[":status", "103"]])), []);
  assert.equal(refused(r.c, rst(r.id)), true);
  r = ready();
  r.c.receive(headers(r.id, [[":status", "103"]]));
  assert.equal(refused(r.c, goaway0), true);
  // After the final head and part of a declared body: processed.
  for (const end of [rst, () => goaway0]) {
    r = ready();
    const head = [[":status", "200"], ["content-length", "10"]] as Array<[string, string]>;
    r.c.receive(cat(headers(r.id, head), frame(FrameType.DATA, 0, r.id, new Uint8Array(3))));
    assert.equal(refused(r.c, end(r.id)), true);
  }
});

Deno.test("RFC 9113 §5.1.2: MAX_CONCURRENT_STREAMS is honoured", () => {
  const c = new H2ClientConnection();
  c.receive(settings([[SettingId.MAX_CONCURRENT_STREAMS, 2]]));
  assert.ok("id" in c.openStream(GET, { endStream: true }));
  assert.ok("id" in c.openStream(GET, { endStream: true }));
  assert.deepEqual(c.openStream(GET, { endStream: true }), { refused: "busy" });
  c.receive(frame(FrameType.RST_STREAM, 0, 1, u32(0)));
  assert.ok("id" in c.openStream(GET, { endStream: true }));
});

Deno.test("RFC 9113 §6.9: sending respects the peer's windows and resumes on WINDOW_UPDATE", () => {
  const c = new H2ClientConnection();
  c.receive(settings([[SettingId.INITIAL_WINDOW_SIZE, 10]]));
  const r = c.openStream([[":method", "POST"], [":scheme", "http"], [":path", "/"]], {
    endStream: false,
  });
  assert.ok("id" in r);
  c.takeOutput();
  const body = new Uint8Array(25).fill(7);
  assert.equal(c.sendData(r.id, body, true), 10);
  assert.equal(c.sendCapacity(r.id), 0);
  const ev = c.receive(frame(FrameType.WINDOW_UPDATE, 0, r.id, u32(100)));
  assert.equal(only(ev, "send-window").stream, r.id);
  assert.equal(c.sendData(r.id, body.subarray(10), true), 15);
  const data = parseFrames(c.takeOutput()!).filter((f) => f.type === FrameType.DATA);
  assert.deepEqual(data.map((f) => [f.payload.length, f.flags]), [[10, 0], [15, 1]]);
});

Deno.test("RFC 9113 §6.9: consumed DATA returns credit with WINDOW_UPDATE", () => {
  const { c, id } = ready({ streamWindow: 100, connectionWindow: 65535 });
  c.receive(headers(id, [[":status", "200"]]));
  c.receive(frame(FrameType.DATA, 0, id, new Uint8Array(60)));
  c.consume(id, 60);
  const wu = parseFrames(c.takeOutput()!).filter((f) => f.type === FrameType.WINDOW_UPDATE);
  assert.deepEqual(wu.map((f) => [f.stream, new DataView(f.payload.buffer).getUint32(0)]), [[
    id,
    60,
  ]]);
});

Deno.test("requests: headers split into CONTINUATION by the peer's MAX_FRAME_SIZE, trailers sent", () => {
  const c = new H2ClientConnection();
  c.receive(settings());
  c.takeOutput();
  const big: Array<[string, string]> = [...GET, ["x-big", "v".repeat(40_000)]];
  const r = c.openStream(big, { endStream: false });
  assert.ok("id" in r);
  assert.ok(c.sendTrailers(r.id, [["x-t", "1"]]));
  const frames = parseFrames(c.takeOutput()!);
  assert.deepEqual(frames.map((f) => f.type), [1, 9, 9, 1]);
  const block = cat(...frames.slice(0, 3).map((f) => f.payload));
  assert.deepEqual(new HpackDecoder().decode(block), big);
  assert.equal(frames[3].flags, 5);
});

Deno.test("a stream we reset ignores the peer's late frames but keeps HPACK in step", () => {
  const { c, id } = ready();
  c.resetStream(id);
  assert.deepEqual(c.receive(frame(FrameType.HEADERS, 4, id, [0x40, 1, 0x61, 1, 0x62])), []);
  assert.deepEqual(c.receive(frame(FrameType.DATA, 0, id, [1, 2, 3])), []);
  const r = c.openStream(GET, { endStream: true });
  assert.ok("id" in r);
  // Index 62 is the entry the ignored block inserted.
  const ev = c.receive(frame(FrameType.HEADERS, 5, r.id, [0x88, 0xbe]));
  assert.deepEqual(only(ev, "response").headers, [["a", "b"]]);
});

Deno.test("the codec never throws on arbitrary server bytes (fuzz)", () => {
  const frames = fc.oneof(
    fc.uint8Array({ maxLength: 40 }),
    fc.tuple(
      fc.integer({ min: 0, max: 12 }),
      fc.integer({ min: 0, max: 255 }),
      fc.integer({ min: 0, max: 7 }),
      fc.uint8Array({ maxLength: 30 }),
    )
      .map(([t, f, s, p]) => frame(t, f, s, p)),
  );
  fc.assert(
    fc.property(fc.array(frames, { maxLength: 12 }), fc.boolean(), (parts, preface) => {
      const c = new H2ClientConnection();
      if (preface) c.receive(settings());
      c.openStream(GET, { endStream: true });
      c.openStream(GET, { endStream: false });
      for (const p of parts) {
        c.receive(p);
        c.takeOutput();
      }
    }),
    { numRuns: 3000 },
  );
});

/** A connection past the server's preface whose stream 1 is a POST, its body not sent yet. */
function post(peerSettings: Array<[number, number]> = []): { c: H2ClientConnection; id: number } {
  const c = new H2ClientConnection();
  c.receive(settings(peerSettings));
  const r = c.openStream([[":method", "POST"], [":scheme", "http"], [":path", "/"]], {
    endStream: false,
  });
  assert.ok("id" in r);
  c.takeOutput();
  return { c, id: r.id };
}

function dataSent(c: H2ClientConnection): number {
  return parseFrames(c.takeOutput() ?? new Uint8Array(0))
    .filter((f) => f.type === FrameType.DATA)
    .reduce((n, f) => n + f.payload.length, 0);
}

Deno.test("#32: RFC 9113 §6.9.1: sendData keeps to the connection window, not only the stream's", () => {
  // Mutant: the connection window dropped from the minimum in sendData. It
  // sends 200,000 bytes against the 65,535 octets of the connection window
  // (a strict backend answers FLOW_CONTROL_ERROR and fails every stream).
  const { c, id } = post([[SettingId.INITIAL_WINDOW_SIZE, 1 << 20]]);
  const body = new Uint8Array(200_000);
  assert.equal(c.sendData(id, body, true), 65_535);
  assert.equal(dataSent(c), 65_535);
  assert.equal(c.sendCapacity(id), 0);
  const ev = c.receive(frame(FrameType.WINDOW_UPDATE, 0, 0, u32(100_000)));
  assert.equal(only(ev, "send-window").stream, 0);
  assert.equal(c.sendCapacity(id), 100_000);
  assert.equal(c.sendData(id, body.subarray(65_535), true), 100_000);
  assert.equal(dataSent(c), 100_000);
});

Deno.test("#32: more than 10,000 frames in a row that carry nothing end the connection", () => {
  // Mutant: the bound on frames that carry nothing disabled (#idleFrame never
  // fails): a peer keeps the client busy for free, for ever.
  const unknown = frame(0xfa, 0, 1, new Uint8Array(0));
  const flood = (n: number) => cat(...Array.from({ length: n }, () => unknown));
  let { c, id } = ready();
  assert.deepEqual(c.receive(flood(10_000)), [], "10,000 are tolerated");
  connErr(c.receive(unknown), H2Code.ENHANCE_YOUR_CALM);
  // The count is of frames in a row: one that carries something starts it again.
  ({ c, id } = ready());
  c.receive(flood(10_000));
  c.receive(headers(id, [[":status", "200"]]));
  assert.deepEqual(c.receive(flood(10_000)), []);
  // Empty DATA frames and PRIORITY frames count too; the bound is an option.
  ({ c, id } = ready({ maxIdleFrames: 3 }));
  c.receive(headers(id, [[":status", "200"]]));
  const idle = cat(
    frame(FrameType.DATA, 0, id),
    frame(FrameType.PRIORITY, 0, id, new Uint8Array(5)),
  );
  assert.ok(c.receive(idle).every((e) => e.type === "data"));
  connErr(c.receive(idle), H2Code.ENHANCE_YOUR_CALM);
});

/** A connection with `on-consume` credit, windows of `window` octets, stream 1 answered 200. */
function consuming(window: number): { c: H2ClientConnection; id: number } {
  const r = ready({
    connectionWindow: window,
    streamWindow: 1 << 20,
    connectionCredit: "on-consume",
  });
  r.c.receive(headers(r.id, [[":status", "200"]]));
  r.c.takeOutput();
  return r;
}

/** `n` octets of DATA on `id` in frames of 10,000 octets, END_STREAM on the last with `end`. */
function body(id: number, n: number, end = false): Uint8Array {
  const frames: Uint8Array[] = [];
  for (let at = 0; at < n; at += 10_000) {
    const last = at + 10_000 >= n;
    frames.push(
      frame(FrameType.DATA, last && end ? 1 : 0, id, new Uint8Array(Math.min(10_000, n - at))),
    );
  }
  return cat(...frames);
}

function updates(c: H2ClientConnection): Array<[number, number]> {
  return parseFrames(c.takeOutput() ?? new Uint8Array(0))
    .filter((f) => f.type === FrameType.WINDOW_UPDATE)
    .map((f) => [f.stream, new DataView(f.payload.buffer).getUint32(0)]);
}

Deno.test("#32.2: with on-consume credit a peer sending past the connection window gets FLOW_CONTROL_ERROR", () => {
  // Mutant: the connection window's overrun check removed: a backend sends
  // without bound while the client's readers hold everything unread.
  const { c, id } = consuming(65_535);
  const chunk = frame(FrameType.DATA, 0, id, new Uint8Array(16_384));
  for (let i = 0; i < 3; i++) assert.equal(only(c.receive(chunk), "data").data.length, 16_384);
  assert.equal(c.heldOctets, 3 * 16_384);
  assert.deepEqual(updates(c), [], "no credit before the reader takes anything");
  c.receive(frame(FrameType.DATA, 0, id, new Uint8Array(16_383)));
  connErr(c.receive(frame(FrameType.DATA, 0, id, new Uint8Array(1))), H2Code.FLOW_CONTROL_ERROR);
});

Deno.test("#32.2: with on-arrival credit (the default) the connection window returns as DATA arrives", () => {
  const { c, id } = ready({ connectionWindow: 65_535, streamWindow: 1 << 20 });
  c.receive(headers(id, [[":status", "200"]]));
  for (let i = 0; i < 8; i++) {
    assert.equal(
      only(c.receive(frame(FrameType.DATA, 0, id, new Uint8Array(16_384))), "data")
        .endStream,
      false,
    );
  }
  assert.equal(c.heldOctets, 0);
  assert.ok(updates(c).some(([stream]) => stream === 0), "the connection is credited");
});

Deno.test("#32.2: with on-consume credit the connection window returns as readers take, reset or drop", () => {
  // Consumed octets return once half the window is owed, on the stream and the connection.
  let { c, id } = consuming(65_535);
  c.receive(body(id, 40_000));
  c.consume(id, 30_000);
  assert.deepEqual(updates(c), []);
  c.consume(id, 10_000);
  assert.deepEqual(updates(c), [[0, 40_000]]);
  assert.equal(c.heldOctets, 0);
  c.consume(id, 50_000); // more than it was handed: no credit out of thin air
  assert.deepEqual(updates(c), []);
  // A stream reset by us, by the peer, or failed for the peer's fault: its octets return.
  for (
    const end of [
      (c: H2ClientConnection, id: number) => c.resetStream(id),
      (c: H2ClientConnection, id: number) => c.receive(frame(FrameType.RST_STREAM, 0, id, u32(8))),
      // Trailers without END_STREAM: a stream error.
      (c: H2ClientConnection, id: number) => c.receive(headers(id, [["x", "1"]])),
    ]
  ) {
    ({ c, id } = consuming(65_535));
    c.receive(body(id, 40_000));
    end(c, id);
    assert.equal(c.heldOctets, 0);
    assert.deepEqual(updates(c).filter(([s]) => s === 0), [[0, 40_000]]);
  }
  // A stream that ended normally keeps its octets held until the reader takes or drops them.
  ({ c, id } = consuming(65_535));
  c.receive(body(id, 40_000, true));
  assert.equal(c.hasStream(id), false);
  assert.equal(c.heldOctets, 40_000);
  c.discard(id);
  assert.deepEqual(updates(c), [[0, 40_000]]);
  c.discard(id);
  assert.deepEqual(updates(c), [], "dropped once");
});

Deno.test("#28.3: RFC 9113 §5.1: a stream is open, then half-closed each way, then closed", () => {
  const c = new H2ClientConnection();
  c.receive(settings());
  const r = c.openStream([[":method", "POST"], [":scheme", "http"], [":path", "/"]], {
    endStream: false,
  });
  assert.ok("id" in r);
  // Open: both sides may send.
  c.receive(headers(r.id, [[":status", "200"]]));
  assert.ok(c.sendCapacity(r.id) > 0);
  // Half-closed (remote): the peer ended; we may still send, and the peer may not.
  only(c.receive(frame(FrameType.DATA, 1, r.id, [1])), "data");
  assert.ok(c.hasStream(r.id));
  assert.equal(c.sendData(r.id, new Uint8Array([1]), false), 1);
  // Closed once we end too: it is gone.
  assert.equal(c.sendData(r.id, new Uint8Array(0), true), 0);
  assert.equal(c.hasStream(r.id), false);
  assert.equal(c.sendData(r.id, new Uint8Array([1]), true), 0);
  // Half-closed (local): a request sent whole; the peer's END_STREAM closes it.
  const { c: c2, id } = ready();
  assert.equal(c2.sendCapacity(id), 0, "nothing more to send on a half-closed (local) stream");
  c2.receive(headers(id, [[":status", "204"]], true));
  assert.equal(c2.hasStream(id), false);
});
