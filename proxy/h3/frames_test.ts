import fc from "fast-check";
import { H3Code, H3Error, NEED_MORE } from "./errors.ts";
import {
  encodeCancelPush,
  encodeFrame,
  encodeFrameHeader,
  encodeGoaway,
  encodeHeadersAndData,
  encodeMaxPushId,
  encodeSettingsFrame,
  FrameDecoder,
  type FrameEvent,
  FrameType,
  isReservedFrameType,
} from "./frames.ts";
import { SettingId } from "./settings.ts";
import { encodeVarint, VARINT_MAX } from "./varint.ts";
import assert from "node:assert/strict";
import { assertH3Error, concat, hex, splitAt } from "./_test_util.ts";

function drain(dec: FrameDecoder): FrameEvent[] {
  const out: FrameEvent[] = [];
  for (;;) {
    const ev = dec.next();
    if (ev === NEED_MORE) return out;
    out.push(ev);
  }
}

/** Merges adjacent data events so results can be compared across chunkings. */
function normalize(events: FrameEvent[]): Array<{ kind: string; type?: number; bytes: number[] }> {
  const out: Array<{ kind: string; type?: number; bytes: number[] }> = [];
  for (const ev of events) {
    if (ev.kind === "data") {
      const last = out[out.length - 1];
      if (last?.kind === "data") last.bytes.push(...ev.chunk);
      else out.push({ kind: "data", bytes: [...ev.chunk] });
    } else if (ev.kind === "frame") {
      out.push({ kind: "frame", type: ev.type, bytes: [...ev.payload] });
    } else {
      out.push({ kind: "oversized", type: ev.type, bytes: [ev.length] });
    }
  }
  return out;
}

Deno.test("RFC 9114 §7.1: frame layout is type, length, payload", () => {
  assert.deepEqual(encodeFrame(FrameType.HEADERS, hex("aabb")), hex("01 02 aabb"));
  assert.deepEqual(encodeFrameHeader(FrameType.DATA, 300), hex("00 412c"));
  assert.deepEqual(encodeFrameHeader(0x21, 0), hex("21 00"));
  // HEADERS then DATA in one buffer, each with its own header.
  assert.deepEqual(
    encodeHeadersAndData(hex("aabb"), hex("ccddee")),
    hex("01 02 aabb 00 03 ccddee"),
  );
  const big = new Uint8Array(300).fill(7);
  const out = encodeHeadersAndData(hex("aa"), big);
  assert.deepEqual(out.subarray(0, 6), hex("01 01 aa 00 412c"));
  assert.deepEqual(out.subarray(6), big);
  assert.deepEqual(encodeGoaway(4), hex("07 01 04"));
  assert.deepEqual(encodeMaxPushId(100), hex("0d 02 4064"));
  assert.deepEqual(encodeCancelPush(1), hex("03 01 01"));
  assert.deepEqual(
    encodeSettingsFrame(new Map([[SettingId.MAX_FIELD_SECTION_SIZE, 16384]])),
    hex("04 05 06 80004000"),
  );
  assert.throws(() => encodeGoaway(2n ** 62n), RangeError);
});

Deno.test("RFC 9114 §7.2.1: DATA payload is streamed as it arrives, never buffered whole", () => {
  const dec = new FrameDecoder();
  dec.push(encodeFrameHeader(FrameType.DATA, 1024 ** 3)); // a 1 GiB DATA frame
  const first = dec.next();
  assert.deepEqual(first, { kind: "data", chunk: new Uint8Array(0) });
  assert.equal(dec.next(), NEED_MORE);
  const chunk = new Uint8Array(4096).fill(7);
  let total = 0;
  for (let i = 0; i < 100; i++) {
    dec.push(chunk);
    const ev = dec.next();
    assert.ok(ev !== NEED_MORE && ev.kind === "data");
    assert.equal(ev.chunk.buffer, chunk.buffer, "zero-copy view of the pushed chunk");
    total += ev.chunk.length;
    assert.equal(dec.pendingBytes, 0);
    assert.equal(dec.next(), NEED_MORE);
  }
  assert.equal(total, 409600);
  assert.equal(dec.atFrameBoundary, false);
});

Deno.test("RFC 9114 §7.2.1: DATA frame end is honoured inside a chunk", () => {
  const dec = new FrameDecoder();
  const bytes = concat(
    encodeFrame(FrameType.DATA, hex("010203")),
    encodeFrame(FrameType.HEADERS, hex("ff")),
  );
  dec.push(bytes);
  const evs = drain(dec);
  assert.equal(evs.length, 2);
  assert.ok(evs[0].kind === "data" && evs[0].chunk.buffer === bytes.buffer);
  assert.deepEqual(normalize(evs), [
    { kind: "data", bytes: [1, 2, 3] },
    { kind: "frame", type: FrameType.HEADERS, bytes: [0xff] },
  ]);
  assert.ok(dec.atFrameBoundary);
});

Deno.test("RFC 9114 §7.2.1: a zero-length DATA frame yields one empty data event", () => {
  const dec = new FrameDecoder();
  dec.push(encodeFrame(FrameType.DATA, new Uint8Array(0)));
  assert.deepEqual(drain(dec), [{ kind: "data", chunk: new Uint8Array(0) }]);
  assert.ok(dec.atFrameBoundary);
});

Deno.test("RFC 9114 §7.2.2: HEADERS is delivered whole, zero-copy when in one chunk", () => {
  const dec = new FrameDecoder();
  const f = encodeFrame(FrameType.HEADERS, new Uint8Array(100).fill(9));
  dec.push(f.subarray(0, 50));
  assert.equal(dec.next(), NEED_MORE);
  assert.equal(dec.pendingBytes, 47);
  assert.equal(dec.atFrameBoundary, false);
  dec.push(f.subarray(50));
  const ev = dec.next();
  assert.ok(ev !== NEED_MORE && ev.kind === "frame" && ev.payload.length === 100);
  const dec2 = new FrameDecoder();
  dec2.push(f);
  const ev2 = dec2.next();
  assert.ok(ev2 !== NEED_MORE && ev2.kind === "frame" && ev2.payload.buffer === f.buffer);
});

Deno.test("RFC 9114 §10.5: HEADERS larger than maxFrameSize is H3_EXCESSIVE_LOAD before buffering", () => {
  const dec = new FrameDecoder({ maxFrameSize: 1000 });
  dec.push(encodeFrameHeader(FrameType.HEADERS, 1001));
  assertH3Error(() => dec.next(), H3Code.EXCESSIVE_LOAD, "connection");
  const ok = new FrameDecoder({ maxFrameSize: 1000 });
  ok.push(encodeFrame(FrameType.HEADERS, new Uint8Array(1000)));
  assert.equal(drain(ok).length, 1);
  const big = new FrameDecoder();
  big.push(encodeFrameHeader(FrameType.SETTINGS, 64 * 1024 + 1));
  assertH3Error(() => big.next(), H3Code.EXCESSIVE_LOAD, "connection");
  const pp = new FrameDecoder();
  pp.push(encodeFrameHeader(FrameType.PUSH_PROMISE, 2 ** 40));
  assertH3Error(() => pp.next(), H3Code.EXCESSIVE_LOAD, "connection");
});

Deno.test("#35.4: HEADERS over maxHeadersSize is one oversized event, its payload skipped unbuffered", () => {
  const dec = new FrameDecoder({ maxFrameSize: 1000, maxHeadersSize: 100 });
  const over = encodeFrame(FrameType.HEADERS, new Uint8Array(101).fill(7));
  const next = encodeFrame(FrameType.HEADERS, new Uint8Array(100).fill(8));
  // Reported as soon as the frame header is read, before any payload arrives.
  dec.push(over.subarray(0, 3));
  assert.deepEqual(drain(dec), [{ kind: "oversized", type: FrameType.HEADERS, length: 101 }]);
  assert.equal(dec.atFrameBoundary, false);
  // Its payload is dropped as it arrives, never held.
  dec.push(over.subarray(3, 60));
  assert.deepEqual(drain(dec), []);
  assert.equal(dec.pendingBytes, 0);
  dec.push(concat(over.subarray(60), next));
  const after = drain(dec);
  assert.equal(after.length, 1);
  assert.ok(after[0].kind === "frame" && after[0].payload.length === 100);
  assert.ok(dec.atFrameBoundary);
  // Above maxFrameSize it is still the connection error, skipping or not.
  const far = new FrameDecoder({ maxFrameSize: 1000, maxHeadersSize: 100 });
  far.push(encodeFrameHeader(FrameType.HEADERS, 1001));
  assertH3Error(() => far.next(), H3Code.EXCESSIVE_LOAD, "connection");
  // Only HEADERS is skipped: SETTINGS and PUSH_PROMISE keep their own rules.
  const settings = new FrameDecoder({ maxFrameSize: 1000, maxHeadersSize: 10 });
  settings.push(encodeFrame(FrameType.SETTINGS, new Uint8Array(20)));
  const s = drain(settings);
  assert.ok(s.length === 1 && s[0].kind === "frame" && s[0].payload.length === 20);
  // Without the option nothing is skipped.
  assert.equal(new FrameDecoder({ maxFrameSize: 1000 }).maxHeadersSize, 1000);
  assert.throws(() => new FrameDecoder({ maxHeadersSize: -1 }), RangeError);
});

Deno.test("RFC 9114 §7.1: GOAWAY/MAX_PUSH_ID/CANCEL_PUSH longer than one varint is H3_FRAME_ERROR", () => {
  for (const t of [FrameType.GOAWAY, FrameType.MAX_PUSH_ID, FrameType.CANCEL_PUSH]) {
    const dec = new FrameDecoder();
    dec.push(encodeFrameHeader(t, 9));
    assertH3Error(() => dec.next(), H3Code.FRAME_ERROR, "connection");
  }
});

Deno.test("RFC 9114 §7.2.8: reserved frame types are skipped without buffering", () => {
  assert.ok(isReservedFrameType(0x21));
  assert.ok(isReservedFrameType(0x21n + 0x1fn * 1000000000000n));
  assert.ok(!isReservedFrameType(0x20));
  const dec = new FrameDecoder({ maxFrameSize: 16 });
  dec.push(encodeFrameHeader(0x21 + 0x1f * 7, 2 ** 40));
  const junk = new Uint8Array(1 << 20);
  for (let i = 0; i < 4; i++) {
    dec.push(junk);
    assert.equal(dec.next(), NEED_MORE);
    assert.equal(dec.pendingBytes, 0);
  }
  // the largest reserved type and a 2^62-1 type are skipped too
  const dec2 = new FrameDecoder();
  dec2.push(
    concat(encodeVarint(VARINT_MAX), encodeVarint(3), hex("010203"), encodeFrame(1, hex("aa"))),
  );
  assert.deepEqual(normalize(drain(dec2)), [{ kind: "frame", type: 1, bytes: [0xaa] }]);
});

Deno.test("RFC 9114 §9: unknown frame types are ignored", () => {
  const dec = new FrameDecoder();
  dec.push(
    concat(
      encodeFrame(0x2f, hex("0102")),
      encodeFrame(0xabcd, new Uint8Array(10)),
      encodeFrame(1, hex("bb")),
    ),
  );
  assert.deepEqual(normalize(drain(dec)), [{ kind: "frame", type: 1, bytes: [0xbb] }]);
  assert.equal(dec.framesStarted, 3);
});

Deno.test("RFC 9114 §7.2.8: HTTP/2 frame types 0x2, 0x6, 0x8, 0x9 are H3_FRAME_UNEXPECTED", () => {
  for (const t of [0x2, 0x6, 0x8, 0x9]) {
    const dec = new FrameDecoder();
    dec.push(encodeFrame(t, hex("00")));
    assertH3Error(() => dec.next(), H3Code.FRAME_UNEXPECTED, "connection");
    // detected from the type alone, before the length arrives
    const early = new FrameDecoder();
    early.push(new Uint8Array([0x40, t]));
    assertH3Error(() => early.next(), H3Code.FRAME_UNEXPECTED, "connection");
  }
});

Deno.test("FrameDecoder: an error is sticky", () => {
  const dec = new FrameDecoder();
  dec.push(encodeFrame(0x6, hex("00")));
  const e = assertH3Error(() => dec.next(), H3Code.FRAME_UNEXPECTED, "connection");
  dec.push(encodeFrame(1, hex("00")));
  try {
    dec.next();
    assert.fail("no throw");
  } catch (e2) {
    assert.equal(e2, e);
  }
});

Deno.test("FrameDecoder: headers split byte by byte, incl. non-minimal 8-byte varints", () => {
  const bytes = concat(
    hex("c000000000000001 c000000000000002 abcd"), // HEADERS, len 2, 8-byte varints
    hex("00 4003 010203"), // DATA, len 3
    encodeFrame(1, hex("ee")),
  );
  const dec = new FrameDecoder();
  const evs: FrameEvent[] = [];
  for (let i = 0; i < bytes.length; i++) {
    dec.push(bytes.subarray(i, i + 1));
    evs.push(...drain(dec));
    // frames end after bytes 17, 23 and 26
    assert.equal(dec.atFrameBoundary, [17, 23, 26].includes(i), `boundary at ${i}`);
  }
  assert.deepEqual(normalize(evs), [
    { kind: "frame", type: 1, bytes: [0xab, 0xcd] },
    { kind: "data", bytes: [1, 2, 3] },
    { kind: "frame", type: 1, bytes: [0xee] },
  ]);
  assert.ok(dec.atFrameBoundary);
  assert.equal(dec.pendingBytes, 0);
});

Deno.test("FrameDecoder: many tiny chunks do not grow the chunk list", () => {
  const dec = new FrameDecoder({ maxFrameSize: 1 << 20 });
  const f = encodeFrame(FrameType.HEADERS, new Uint8Array(50000).map((_, i) => i & 0xff));
  for (let i = 0; i < f.length; i += 7) {
    dec.push(f.subarray(i, i + 7));
  }
  const ev = dec.next();
  assert.ok(ev !== NEED_MORE && ev.kind === "frame");
  assert.deepEqual(ev.payload, f.subarray(f.length - 50000));
  assert.ok(dec.atFrameBoundary);
});

// --- property: any chunking decodes to the same events ------------------------------------

type Spec = { type: number; payload: Uint8Array; wide: number };

const frameSpec: fc.Arbitrary<Spec> = fc.oneof(
  fc.record({ type: fc.constant(0), payload: fc.uint8Array({ maxLength: 300 }), wide: fc.nat(3) }),
  fc.record({
    type: fc.constantFrom(1, 4, 5),
    payload: fc.uint8Array({ maxLength: 200 }),
    wide: fc.nat(3),
  }),
  fc.record({
    type: fc.constantFrom(3, 7, 0xd),
    payload: fc.bigInt({ min: 0n, max: VARINT_MAX }).map((v) => encodeVarint(v)),
    wide: fc.nat(3),
  }),
  fc.record({
    type: fc.oneof(
      fc.nat(1000).map((n) => 0x21 + 0x1f * n),
      fc.constantFrom(0xa, 0xb, 0xc, 0xe, 0x2f, 0x4000),
    ),
    payload: fc.uint8Array({ maxLength: 100 }),
    wide: fc.nat(3),
  }),
);

/** Encodes with a type/length varint at least `1 << wide` bytes long (non-minimal allowed). */
function encodeWide(s: Spec): Uint8Array {
  const w = Math.max(
    1 << s.wide,
    encodeVarint(s.type).length,
    encodeVarint(s.payload.length).length,
  );
  const v = (n: number) => {
    const out = new Uint8Array(w);
    let x = BigInt(n);
    for (let i = w - 1; i >= 0; i--) {
      out[i] = Number(x & 0xffn);
      x >>= 8n;
    }
    out[0] |= [0, 1, 0, 2, 0, 0, 0, 3][w - 1] << 6;
    return out;
  };
  return concat(v(s.type), v(s.payload.length), s.payload);
}

Deno.test("RFC 9114 §7.1: decoding is independent of chunk boundaries (property)", () => {
  fc.assert(
    fc.property(
      fc.array(frameSpec, { maxLength: 12 }),
      fc.array(fc.nat(), { maxLength: 40 }),
      fc.boolean(),
      fc.option(fc.nat(200), { nil: undefined }),
      (specs, rawCuts, wide, maxHeadersSize) => {
        const bytes = concat(
          ...specs.map((s) => wide ? encodeWide(s) : encodeFrame(s.type, s.payload)),
        );
        const expected: FrameEvent[] = [];
        for (const s of specs) {
          if (s.type === 0) expected.push({ kind: "data", chunk: s.payload });
          else if (s.type === 1 && s.payload.length > (maxHeadersSize ?? Infinity)) {
            expected.push({ kind: "oversized", type: 1, length: s.payload.length });
          } else if ([1, 3, 4, 5, 7, 0xd].includes(s.type)) {
            expected.push({ kind: "frame", type: s.type, payload: s.payload });
          }
        }
        const cuts = [
          ...new Set(rawCuts.map((c) => bytes.length === 0 ? 0 : c % (bytes.length + 1))),
        ].sort((a, b) => a - b);
        const dec = new FrameDecoder({ maxHeadersSize });
        const got: FrameEvent[] = [];
        for (const piece of splitAt(bytes, cuts)) {
          dec.push(piece);
          got.push(...drain(dec));
        }
        assert.deepEqual(normalize(got), normalize(expected));
        assert.ok(dec.atFrameBoundary);
        assert.equal(dec.pendingBytes, 0);
        // every DATA frame yields at least one event even when empty
        const dataFrames = specs.filter((s) => s.type === 0).length;
        assert.ok(got.filter((e) => e.kind === "data").length >= dataFrames);
      },
    ),
    { numRuns: 500 },
  );
});

Deno.test("FrameDecoder only throws H3Error on truncated or random input (property)", () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
      const dec = new FrameDecoder({ maxFrameSize: 64 });
      dec.push(bytes);
      try {
        drain(dec);
      } catch (e) {
        assert.ok(e instanceof H3Error);
      }
    }),
  );
});
