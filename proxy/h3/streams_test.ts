import fc from "fast-check";
import { H3Code, NEED_MORE } from "./errors.ts";
import {
  encodeCancelPush,
  encodeFrame,
  encodeFrameHeader,
  encodeGoaway,
  encodeMaxPushId,
  encodeSettingsFrame,
  FrameType,
} from "./frames.ts";
import { SettingId } from "./settings.ts";
import {
  classifyUniStream,
  ControlStreamParser,
  decodeStreamType,
  type RequestEvent,
  RequestStreamParser,
  StreamType,
  UniStreamRegistry,
} from "./streams.ts";
import { encodeVarint } from "./varint.ts";
import assert from "node:assert/strict";
import { assertH3Error, concat, hex, splitAt } from "./_test_util.ts";

const SETTINGS = encodeSettingsFrame(new Map([[SettingId.MAX_FIELD_SECTION_SIZE, 8192]]));
const HEADERS = (b: string) => encodeFrame(FrameType.HEADERS, hex(b));
const DATA = (b: string) => encodeFrame(FrameType.DATA, hex(b));

// --- unidirectional streams ------------------------------------------------------------

Deno.test("RFC 9114 §6.2: stream types decode and classify", () => {
  assert.deepEqual(decodeStreamType(hex("00")), { type: 0, length: 1 });
  assert.deepEqual(decodeStreamType(hex("4002")), { type: 2, length: 2 });
  assert.equal(decodeStreamType(hex("40")), NEED_MORE);
  assert.equal(decodeStreamType(new Uint8Array(0)), NEED_MORE);
  assert.equal(classifyUniStream(StreamType.CONTROL), "control");
  assert.equal(classifyUniStream(StreamType.QPACK_ENCODER), "qpack_encoder");
  assert.equal(classifyUniStream(StreamType.QPACK_DECODER), "qpack_decoder");
  assert.equal(classifyUniStream(StreamType.PUSH, "server"), "push");
});

Deno.test("RFC 9114 §6.2.3: reserved and unknown stream types are ignored", () => {
  assert.equal(classifyUniStream(0x21), "unknown");
  assert.equal(classifyUniStream(0x21 + 0x1f * 99), "unknown");
  assert.equal(classifyUniStream(0x54), "unknown");
});

Deno.test("RFC 9114 §6.2.2: a push stream from a client is H3_STREAM_CREATION_ERROR", () => {
  assertH3Error(
    () => classifyUniStream(StreamType.PUSH),
    H3Code.STREAM_CREATION_ERROR,
    "connection",
  );
  assertH3Error(
    () => new UniStreamRegistry().open(StreamType.PUSH),
    H3Code.STREAM_CREATION_ERROR,
    "connection",
  );
});

Deno.test("RFC 9114 §6.2.1 / RFC 9204 §4.2: a second control or QPACK stream is H3_STREAM_CREATION_ERROR", () => {
  for (const t of [StreamType.CONTROL, StreamType.QPACK_ENCODER, StreamType.QPACK_DECODER]) {
    const reg = new UniStreamRegistry();
    reg.open(t);
    reg.open(0x21);
    reg.open(0x21);
    assertH3Error(() => reg.open(t), H3Code.STREAM_CREATION_ERROR, "connection");
  }
});

// --- control stream ----------------------------------------------------------------------

Deno.test("RFC 9114 §6.2.1: control stream events", () => {
  const p = new ControlStreamParser();
  const bytes = concat(
    SETTINGS,
    encodeFrame(0x21, hex("00")),
    encodeMaxPushId(10),
    encodeCancelPush(3),
    encodeGoaway(8),
    encodeGoaway(8),
  );
  const evs = splitAt(bytes, [1, 2, 5, 9, 10, 11]).flatMap((c) => p.push(c));
  assert.deepEqual(evs, [
    { type: "settings", settings: new Map([[SettingId.MAX_FIELD_SECTION_SIZE, 8192]]) },
    { type: "max_push_id", id: 10 },
    { type: "cancel_push", id: 3 },
    { type: "goaway", id: 8 },
    { type: "goaway", id: 8 },
  ]);
  assert.equal(p.settings?.get(SettingId.MAX_FIELD_SECTION_SIZE), 8192);
});

Deno.test("RFC 9114 §6.2.1: first control frame not SETTINGS is H3_MISSING_SETTINGS", () => {
  for (const first of [encodeGoaway(0), encodeMaxPushId(1), HEADERS("00"), DATA("00"), DATA("")]) {
    assertH3Error(
      () => new ControlStreamParser().push(first),
      H3Code.MISSING_SETTINGS,
      "connection",
    );
  }
  // a reserved frame before SETTINGS is also "another frame type"
  assertH3Error(
    () => new ControlStreamParser().push(concat(encodeFrame(0x21, hex("")), SETTINGS)),
    H3Code.MISSING_SETTINGS,
    "connection",
  );
});

Deno.test("RFC 9114 §7.2.4: a second SETTINGS frame is H3_FRAME_UNEXPECTED", () => {
  assertH3Error(
    () => new ControlStreamParser().push(concat(SETTINGS, SETTINGS)),
    H3Code.FRAME_UNEXPECTED,
    "connection",
  );
});

Deno.test("RFC 9114 §7.2.1/§7.2.2/§7.2.5: DATA, HEADERS, PUSH_PROMISE on the control stream are H3_FRAME_UNEXPECTED", () => {
  for (
    const f of [
      DATA("01"),
      DATA(""),
      HEADERS("00"),
      encodeFrame(FrameType.PUSH_PROMISE, hex("0000")),
    ]
  ) {
    const p = new ControlStreamParser();
    p.push(SETTINGS);
    assertH3Error(() => p.push(f), H3Code.FRAME_UNEXPECTED, "connection");
  }
});

Deno.test("RFC 9114 §7.2.4: a malformed SETTINGS payload on the control stream is a connection error", () => {
  assertH3Error(
    () => new ControlStreamParser().push(encodeFrame(4, hex("06"))),
    H3Code.FRAME_ERROR,
    "connection",
  );
  assertH3Error(
    () => new ControlStreamParser().push(encodeFrame(4, hex("0201"))),
    H3Code.SETTINGS_ERROR,
    "connection",
  );
});

Deno.test("RFC 9114 §7.1: malformed GOAWAY / MAX_PUSH_ID / CANCEL_PUSH payload is H3_FRAME_ERROR", () => {
  for (const t of [FrameType.GOAWAY, FrameType.MAX_PUSH_ID, FrameType.CANCEL_PUSH]) {
    for (const payload of ["", "40", "0101", "c0000000"]) {
      const p = new ControlStreamParser();
      p.push(SETTINGS);
      assertH3Error(() => p.push(encodeFrame(t, hex(payload))), H3Code.FRAME_ERROR, "connection");
    }
  }
});

Deno.test("RFC 9114 §5.2: a GOAWAY with a larger ID than before is H3_ID_ERROR", () => {
  const p = new ControlStreamParser();
  p.push(concat(SETTINGS, encodeGoaway(8), encodeGoaway(4)));
  assertH3Error(() => p.push(encodeGoaway(12)), H3Code.ID_ERROR, "connection");
});

Deno.test("RFC 9114 §5.2: from a server, a GOAWAY ID must be a client bidirectional stream ID", () => {
  const p = new ControlStreamParser({ peer: "server" });
  assert.deepEqual(p.push(concat(SETTINGS, encodeGoaway(8))).length, 2);
  assertH3Error(() => p.push(encodeGoaway(6)), H3Code.ID_ERROR, "connection");
});

Deno.test("RFC 9114 §7.2.7: MAX_PUSH_ID from a server is H3_FRAME_UNEXPECTED; a smaller one is H3_ID_ERROR", () => {
  const s = new ControlStreamParser({ peer: "server" });
  s.push(SETTINGS);
  assertH3Error(() => s.push(encodeMaxPushId(1)), H3Code.FRAME_UNEXPECTED, "connection");
  const c = new ControlStreamParser();
  c.push(concat(SETTINGS, encodeMaxPushId(5), encodeMaxPushId(5)));
  assertH3Error(() => c.push(encodeMaxPushId(4)), H3Code.ID_ERROR, "connection");
});

Deno.test("RFC 9114 §7.2.3: a client's CANCEL_PUSH above its MAX_PUSH_ID (or before any) is H3_ID_ERROR", () => {
  const none = new ControlStreamParser();
  none.push(SETTINGS);
  assertH3Error(() => none.push(encodeCancelPush(5)), H3Code.ID_ERROR, "connection");
  const zero = new ControlStreamParser();
  zero.push(SETTINGS);
  assertH3Error(() => zero.push(encodeCancelPush(0)), H3Code.ID_ERROR, "connection");
  const some = new ControlStreamParser();
  assert.deepEqual(some.push(concat(SETTINGS, encodeMaxPushId(4), encodeCancelPush(4))).at(-1), {
    type: "cancel_push",
    id: 4,
  });
  assertH3Error(() => some.push(encodeCancelPush(5)), H3Code.ID_ERROR, "connection");
  // A server's CANCEL_PUSH names a push it promised: the client checks that.
  const server = new ControlStreamParser({ peer: "server" });
  assert.equal(server.push(concat(SETTINGS, encodeCancelPush(7))).length, 2);
});

Deno.test("RFC 9114 §6.2.1: closing the control stream is H3_CLOSED_CRITICAL_STREAM", () => {
  const p = new ControlStreamParser();
  p.push(SETTINGS);
  assertH3Error(() => p.end(), H3Code.CLOSED_CRITICAL_STREAM, "connection");
  assertH3Error(() => new ControlStreamParser().end(), H3Code.CLOSED_CRITICAL_STREAM, "connection");
});

// --- request stream ----------------------------------------------------------------------

function feed(p: RequestStreamParser, bytes: Uint8Array, cuts: number[] = []): RequestEvent[] {
  return [...splitAt(bytes, cuts).flatMap((c) => p.push(c)), ...p.end()];
}

Deno.test("RFC 9114 §4.1: HEADERS, DATA, trailers, end", () => {
  const bytes = concat(
    HEADERS("aa"),
    DATA("0102"),
    encodeFrame(0x21, hex("ff")),
    DATA(""),
    DATA("03"),
    HEADERS("bb"),
  );
  const evs = feed(new RequestStreamParser(), bytes);
  assert.deepEqual(evs, [
    { type: "headers", block: hex("aa") },
    { type: "data", chunk: hex("0102") },
    { type: "data", chunk: hex("03") },
    { type: "headers", block: hex("bb") },
    { type: "end" },
  ]);
  // headers only
  assert.deepEqual(feed(new RequestStreamParser(), HEADERS("aa")), [
    { type: "headers", block: hex("aa") },
    { type: "end" },
  ]);
});

Deno.test("RFC 9114 §4.1: DATA before HEADERS is H3_FRAME_UNEXPECTED", () => {
  assertH3Error(
    () => new RequestStreamParser().push(DATA("01")),
    H3Code.FRAME_UNEXPECTED,
    "connection",
  );
  assertH3Error(
    () => new RequestStreamParser().push(DATA("")),
    H3Code.FRAME_UNEXPECTED,
    "connection",
  );
  // detected as soon as the DATA frame header arrives
  assertH3Error(
    () => new RequestStreamParser().push(encodeFrameHeader(0, 100)),
    H3Code.FRAME_UNEXPECTED,
    "connection",
  );
});

Deno.test("RFC 9114 §4.1: any DATA or HEADERS after trailers is H3_FRAME_UNEXPECTED", () => {
  for (const after of [DATA("01"), DATA(""), HEADERS("cc")]) {
    const p = new RequestStreamParser();
    p.push(concat(HEADERS("aa"), HEADERS("bb")));
    assertH3Error(() => p.push(after), H3Code.FRAME_UNEXPECTED, "connection");
  }
  // unknown frames after trailers are fine
  const p = new RequestStreamParser();
  assert.deepEqual(
    feed(p, concat(HEADERS("aa"), HEADERS("bb"), encodeFrame(0x40, hex("00")))).length,
    3,
  );
});

Deno.test("RFC 9114 §7.2.3–§7.2.7: control frames on a request stream are H3_FRAME_UNEXPECTED", () => {
  for (const f of [SETTINGS, encodeGoaway(0), encodeMaxPushId(0), encodeCancelPush(0)]) {
    assertH3Error(() => new RequestStreamParser().push(f), H3Code.FRAME_UNEXPECTED, "connection");
    const p = new RequestStreamParser();
    p.push(HEADERS("aa"));
    assertH3Error(() => p.push(f), H3Code.FRAME_UNEXPECTED, "connection");
  }
});

Deno.test("RFC 9114 §7.2.5: PUSH_PROMISE from a client is H3_FRAME_UNEXPECTED", () => {
  const p = new RequestStreamParser();
  p.push(HEADERS("aa"));
  assertH3Error(
    () => p.push(encodeFrame(FrameType.PUSH_PROMISE, hex("00aa"))),
    H3Code.FRAME_UNEXPECTED,
    "connection",
  );
});

Deno.test("RFC 9114 §7.1: request stream ended inside a frame is H3_FRAME_ERROR", () => {
  for (
    const partial of [
      hex("01"),
      hex("0105aa"),
      concat(HEADERS("aa"), hex("0005")),
      concat(HEADERS("aa"), hex("00")),
      concat(HEADERS("aa"), hex("2105")),
    ]
  ) {
    const p = new RequestStreamParser();
    p.push(partial);
    assertH3Error(() => p.end(), H3Code.FRAME_ERROR, "connection");
  }
});

Deno.test("RFC 9114 §4.1: request stream ended without HEADERS is H3_REQUEST_INCOMPLETE (stream)", () => {
  assertH3Error(() => new RequestStreamParser().end(), H3Code.REQUEST_INCOMPLETE, "stream");
  const p = new RequestStreamParser();
  p.push(encodeFrame(0x21, hex("0102")));
  assertH3Error(() => p.end(), H3Code.REQUEST_INCOMPLETE, "stream");
});

Deno.test("RFC 9114 §10.5: request HEADERS over maxFrameSize is H3_EXCESSIVE_LOAD", () => {
  const p = new RequestStreamParser({ maxFrameSize: 10 });
  assertH3Error(
    () => p.push(encodeFrameHeader(FrameType.HEADERS, 11)),
    H3Code.EXCESSIVE_LOAD,
    "connection",
  );
});

Deno.test("#35.4: request HEADERS over maxHeadersSize is headers_too_large, in the head's or the trailers' place", () => {
  const big = encodeFrame(FrameType.HEADERS, new Uint8Array(11).fill(0xaa));
  const opts = { maxFrameSize: 100, maxHeadersSize: 10 };
  // As the head: reported once its frame header is in, then the body follows.
  const head = new RequestStreamParser(opts);
  assert.deepEqual(head.push(big.subarray(0, 2)), [{ type: "headers_too_large", length: 11 }]);
  assert.equal(head.headersReceived, true);
  assert.deepEqual(feed(head, concat(big.subarray(2), DATA("01"), HEADERS("bb"))), [
    { type: "data", chunk: hex("01") },
    { type: "headers", block: hex("bb") },
    { type: "end" },
  ]);
  // As the trailers: nothing may follow.
  const trailers = new RequestStreamParser(opts);
  assert.deepEqual(feed(trailers, concat(HEADERS("aa"), DATA("01"), big)), [
    { type: "headers", block: hex("aa") },
    { type: "data", chunk: hex("01") },
    { type: "headers_too_large", length: 11 },
    { type: "end" },
  ]);
  const after = new RequestStreamParser(opts);
  after.push(concat(HEADERS("aa"), HEADERS("bb")));
  assertH3Error(() => after.push(big), H3Code.FRAME_UNEXPECTED, "connection");
  // Ending inside the skipped payload is still ending inside a frame.
  const cut = new RequestStreamParser(opts);
  cut.push(big.subarray(0, 5));
  assertH3Error(() => cut.end(), H3Code.FRAME_ERROR, "connection");
  // On a control stream it is the HEADERS frame it is: unexpected there.
  const control = new ControlStreamParser(opts);
  control.push(SETTINGS);
  assertH3Error(() => control.push(big), H3Code.FRAME_UNEXPECTED, "connection");
});

Deno.test("RequestStreamParser: any chunking gives the same events (property)", () => {
  fc.assert(
    fc.property(
      fc.uint8Array({ minLength: 1, maxLength: 50 }),
      fc.array(fc.uint8Array({ maxLength: 200 }), { maxLength: 6 }),
      fc.option(fc.uint8Array({ maxLength: 30 })),
      fc.array(fc.nat(), { maxLength: 20 }),
      (head, bodies, trailers, rawCuts) => {
        const bytes = concat(
          encodeFrame(1, head),
          ...bodies.map((b) => encodeFrame(0, b)),
          ...(trailers ? [encodeFrame(1, trailers)] : []),
        );
        const cuts = [...new Set(rawCuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
        const evs = feed(new RequestStreamParser(), bytes, cuts);
        assert.deepEqual(evs[0], { type: "headers", block: head });
        const body = concat(
          ...evs.filter((e) => e.type === "data").map((e) => (e as { chunk: Uint8Array }).chunk),
        );
        assert.deepEqual(body, concat(...bodies));
        assert.ok(evs.every((e) => e.type !== "data" || e.chunk.length > 0));
        const hs = evs.filter((e) => e.type === "headers");
        assert.equal(hs.length, trailers ? 2 : 1);
        if (trailers) assert.deepEqual(hs[1], { type: "headers", block: trailers });
        assert.deepEqual(evs[evs.length - 1], { type: "end" });
      },
    ),
    { numRuns: 300 },
  );
});

Deno.test("decodeStreamType reads a varint prefix", () => {
  assert.deepEqual(decodeStreamType(concat(encodeVarint(0x21 + 0x1f), hex("ffff"))), {
    type: 0x40,
    length: 2,
  });
});
