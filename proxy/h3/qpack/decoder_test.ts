import assert from "node:assert/strict";
import fc from "fast-check";
import { H3Code, H3Error } from "../errors.ts";
import {
  BLOCKED,
  decodeRequiredInsertCount,
  FieldSectionTooLargeError,
  QpackDecoder,
} from "./decoder.ts";
import {
  concatBytes,
  encodeDuplicate,
  encodeIndexedDynamic,
  encodeIndexedPostBase,
  encodeIndexedStatic,
  encodeInsertWithLiteralName,
  encodeInsertWithNameRef,
  encodeLiteralDynamicNameRef,
  encodeLiteralPostBaseNameRef,
  encodeLiteralStaticNameRef,
  encodeLiteralWithLiteralName,
  encodeSectionPrefix,
  encodeSetCapacity,
  hex,
  toHex,
} from "./_test_util.ts";

function isH3(code: number, scope: "stream" | "connection" = "connection") {
  return (e: unknown) => e instanceof H3Error && e.code === code && e.scope === scope;
}
const DECOMP = isH3(H3Code.QPACK_DECOMPRESSION_FAILED);
const ENC_STREAM = isH3(H3Code.QPACK_ENCODER_STREAM_ERROR);

Deno.test("RFC 9204 B.1-B.5: the Appendix B exchange decodes byte for byte", () => {
  const dec = new QpackDecoder({ maxTableCapacity: 220, maxBlockedStreams: 1 });

  // B.1: Literal Field Line with Name Reference (static).
  assert.deepEqual(dec.decodeSection(0, hex("0000 510b 2f69 6e64 6578 2e68 746d 6c")), [
    [":path", "/index.html"],
  ]);
  assert.equal(dec.takeDecoderStreamBytes(), null, "RIC 0 sections are not acknowledged");

  // B.2: Dynamic Table.
  const enc2 = hex(
    "3fbd01 c00f 7777 772e 6578 616d 706c 652e 636f 6d c10c 2f73 616d 706c 652f 7061 7468",
  );
  assert.deepEqual(dec.pushEncoderStream(enc2), []);
  assert.equal(dec.table.capacity, 220);
  assert.equal(dec.table.size, 106);
  assert.deepEqual(dec.decodeSection(4, hex("0381 10 11")), [
    [":authority", "www.example.com"],
    [":path", "/sample/path"],
  ]);
  assert.equal(toHex(dec.takeDecoderStreamBytes()), "84", "Section Acknowledgment (stream=4)");

  // B.3: Speculative Insert.
  dec.pushEncoderStream(hex("4a63 7573 746f 6d2d 6b65 790c 6375 7374 6f6d 2d76 616c 7565"));
  assert.equal(dec.table.size, 160);
  assert.deepEqual(dec.table.get(2), ["custom-key", "custom-value"]);
  assert.equal(toHex(dec.takeDecoderStreamBytes()), "01", "Insert Count Increment (1)");

  // B.4: Duplicate Instruction, Stream Cancellation. The encoder stream packet is
  // delayed, so the section arrives first and blocks; then the stream is cancelled.
  assert.equal(dec.decodeSection(8, hex("0500 80 c1 81")), BLOCKED);
  assert.equal(dec.blockedStreams, 1);
  dec.cancelStream(8);
  assert.equal(dec.blockedStreams, 0);
  assert.equal(toHex(dec.takeDecoderStreamBytes()), "48", "Stream Cancellation (Stream=8)");
  assert.deepEqual(dec.pushEncoderStream(hex("02")), [], "cancelled section is not resumed");
  assert.equal(dec.table.size, 217);
  assert.deepEqual(dec.table.get(3), [":authority", "www.example.com"]);
  // The same section, sent again, now decodes.
  assert.deepEqual(dec.decodeSection(12, hex("0500 80 c1 81")), [
    [":authority", "www.example.com"],
    [":path", "/"],
    ["custom-key", "custom-value"],
  ]);
  assert.equal(toHex(dec.takeDecoderStreamBytes()), "8c", "ack of stream 12 covers the duplicate");

  // B.5: Dynamic Table Insert, Eviction.
  dec.pushEncoderStream(hex("810d 6375 7374 6f6d 2d76 616c 7565 32"));
  assert.equal(dec.table.size, 215);
  assert.equal(dec.table.droppedCount, 1);
  assert.equal(dec.table.get(0), undefined);
  assert.deepEqual(dec.table.get(4), ["custom-key", "custom-value2"]);
  assert.equal(toHex(dec.takeDecoderStreamBytes()), "01");
});

Deno.test("RFC 9204 B.4: blocked section resumes when the Duplicate arrives", () => {
  const dec = new QpackDecoder({ maxTableCapacity: 220, maxBlockedStreams: 1 });
  dec.pushEncoderStream(
    hex("3fbd01 c00f 7777 772e 6578 616d 706c 652e 636f 6d c10c 2f73 616d 706c 652f 7061 7468"),
  );
  dec.pushEncoderStream(hex("4a63 7573 746f 6d2d 6b65 790c 6375 7374 6f6d 2d76 616c 7565"));
  assert.equal(toHex(dec.takeDecoderStreamBytes()), "03");
  assert.equal(dec.decodeSection(8, hex("0500 80 c1 81")), BLOCKED);
  assert.equal(dec.takeDecoderStreamBytes(), null);
  const resumed = dec.pushEncoderStream(hex("02"));
  assert.deepEqual(resumed, [{
    streamId: 8,
    fields: [[":authority", "www.example.com"], [":path", "/"], ["custom-key", "custom-value"]],
  }]);
  assert.equal(dec.blockedStreams, 0);
  assert.equal(toHex(dec.takeDecoderStreamBytes()), "88", "ack, no increment needed");
});

Deno.test("RFC 9204 §4.5.1.1: Required Insert Count decoding with wrap-around", () => {
  // MaxEntries 6 (capacity 220): FullRange 12.
  assert.equal(decodeRequiredInsertCount(0, 6, 0), 0);
  assert.equal(decodeRequiredInsertCount(3, 6, 2), 2);
  // 14 inserts so far: encoded 3 = 14 % 12 + 1 -> 14; encoded 4 -> 15 (blocked, within range).
  assert.equal(decodeRequiredInsertCount(3, 6, 14), 14);
  assert.equal(decodeRequiredInsertCount(4, 6, 14), 15);
  // Encoded 9 -> 8 + 12k; with 14 inserts, MaxValue 20 -> 20 >= 20? 12+8 = 20 ok.
  assert.equal(decodeRequiredInsertCount(9, 6, 14), 20);
  assert.equal(decodeRequiredInsertCount(10, 6, 14), 9);
  for (let total = 0; total < 60; total++) {
    for (let ric = Math.max(1, total - 5); ric <= total + 6; ric++) {
      const encoded = (ric % 12) + 1;
      assert.equal(decodeRequiredInsertCount(encoded, 6, total), ric, `total ${total} ric ${ric}`);
    }
  }
  assert.throws(() => decodeRequiredInsertCount(13, 6, 0), DECOMP);
  // Decodes beyond MaxValue with nothing to unwrap.
  assert.throws(() => decodeRequiredInsertCount(8, 6, 0), DECOMP);
  // With MaxEntries 0, any non-zero encoding is invalid.
  assert.throws(() => decodeRequiredInsertCount(1, 0, 0), DECOMP);
});

/** A decoder holding entries 0..n-1 named n0..n{n-1} with values v0..; capacity 4096. */
function filledDecoder(
  n: number,
  opts: Partial<{ maxBlockedStreams: number; maxFieldSectionSize: number }> = {},
) {
  const dec = new QpackDecoder({
    maxTableCapacity: 4096,
    maxBlockedStreams: opts.maxBlockedStreams ?? 4,
    ...opts,
  });
  const parts = [encodeSetCapacity(4096)];
  for (let i = 0; i < n; i++) parts.push(encodeInsertWithLiteralName(`n${i}`, `v${i}`));
  dec.pushEncoderStream(concatBytes(...parts));
  return dec;
}

Deno.test("RFC 9204 §4.5.2-§4.5.6: every field line representation decodes", () => {
  const dec = filledDecoder(6);
  const maxEntries = 128;
  // Base 3: entries 0..2 are pre-base, 3..5 post-base; RIC 6.
  const block = concatBytes(
    encodeSectionPrefix(6, 3, maxEntries),
    encodeIndexedStatic(17), // :method GET
    encodeIndexedDynamic(0), // abs 2
    encodeIndexedPostBase(0), // abs 3
    encodeIndexedPostBase(2), // abs 5
    encodeLiteralStaticNameRef(1, "/a", { huffman: true }),
    encodeLiteralStaticNameRef(95, "ua", { huffman: false, neverIndex: true }),
    encodeLiteralDynamicNameRef(2, "x", { neverIndex: true }), // name of abs 0
    encodeLiteralPostBaseNameRef(1, "y", { huffman: true }), // name of abs 4
    encodeLiteralPostBaseNameRef(0, "z", { neverIndex: true }),
    encodeLiteralWithLiteralName("literal", "value", { huffman: true }),
    encodeLiteralWithLiteralName("plain", "", { huffman: false, neverIndex: true }),
  );
  assert.deepEqual(dec.decodeSection(0, block), [
    [":method", "GET"],
    ["n2", "v2"],
    ["n3", "v3"],
    ["n5", "v5"],
    [":path", "/a"],
    ["user-agent", "ua"],
    ["n0", "x"],
    ["n4", "y"],
    ["n3", "z"],
    ["literal", "value"],
    ["plain", ""],
  ]);
  // Negative-delta base (sign bit): RIC 6, Base 2 -> relative 0 = abs 1.
  const neg = concatBytes(
    encodeSectionPrefix(6, 2, maxEntries),
    encodeIndexedDynamic(0),
    encodeIndexedPostBase(3),
  );
  assert.equal(neg[1] & 0x80, 0x80);
  assert.deepEqual(dec.decodeSection(4, neg), [["n1", "v1"], ["n5", "v5"]]);
  assert.equal(toHex(dec.takeDecoderStreamBytes()), "8084");
});

Deno.test("RFC 9204 §4.3: encoder instructions applied from arbitrary chunk splits", () => {
  const stream = concatBytes(
    encodeSetCapacity(300),
    encodeInsertWithNameRef(true, 0, "example.org", true),
    encodeInsertWithNameRef(false, 0, "example.net", false),
    encodeInsertWithLiteralName(
      "x-long-header-name",
      "a value that is fairly long ".repeat(3),
      true,
    ),
    encodeDuplicate(1),
    encodeInsertWithLiteralName("k", "v", false),
  );
  const reference = new QpackDecoder({ maxTableCapacity: 300, maxBlockedStreams: 0 });
  reference.pushEncoderStream(stream);
  const expected = [];
  for (let i = reference.table.droppedCount; i < reference.table.insertCount; i++) {
    expected.push(reference.table.get(i));
  }
  assert.equal(reference.table.insertCount, 5);
  for (let chunk = 1; chunk <= 7; chunk++) {
    const dec = new QpackDecoder({ maxTableCapacity: 300, maxBlockedStreams: 0 });
    for (let i = 0; i < stream.length; i += chunk) {
      dec.pushEncoderStream(stream.subarray(i, i + chunk));
    }
    const got = [];
    for (let i = dec.table.droppedCount; i < dec.table.insertCount; i++) got.push(dec.table.get(i));
    assert.deepEqual(got, expected, `chunk ${chunk}`);
    assert.equal(dec.table.size, reference.table.size);
  }
});

Deno.test("RFC 9204 §2.1.2: a section arriving before its inserts blocks, then resumes", () => {
  const dec = new QpackDecoder({ maxTableCapacity: 4096, maxBlockedStreams: 2 });
  dec.pushEncoderStream(encodeSetCapacity(4096));
  const section = concatBytes(
    encodeSectionPrefix(2, 2, 128),
    encodeIndexedDynamic(1),
    encodeIndexedDynamic(0),
  );
  assert.equal(dec.decodeSection(0, section), BLOCKED);
  const section2 = concatBytes(encodeSectionPrefix(1, 0, 128), encodeIndexedPostBase(0));
  assert.equal(dec.decodeSection(4, section2), BLOCKED);
  assert.equal(dec.blockedStreams, 2);
  section.fill(0); // the decoder kept its own copy
  // First insert unblocks stream 4 only.
  assert.deepEqual(dec.pushEncoderStream(encodeInsertWithLiteralName("a", "1")), [
    { streamId: 4, fields: [["a", "1"]] },
  ]);
  assert.deepEqual(dec.pushEncoderStream(encodeInsertWithLiteralName("b", "2")), [
    { streamId: 0, fields: [["a", "1"], ["b", "2"]] },
  ]);
  assert.equal(dec.blockedStreams, 0);
  assert.equal(toHex(dec.takeDecoderStreamBytes()), "8480");
});

Deno.test("RFC 9204 §2.2.1: exceeding SETTINGS_QPACK_BLOCKED_STREAMS is QPACK_DECOMPRESSION_FAILED", () => {
  const dec = new QpackDecoder({ maxTableCapacity: 4096, maxBlockedStreams: 1 });
  dec.pushEncoderStream(encodeSetCapacity(4096));
  const section = concatBytes(encodeSectionPrefix(1, 1, 128), encodeIndexedDynamic(0));
  assert.equal(dec.decodeSection(0, section), BLOCKED);
  assert.equal(dec.decodeSection(0, section), BLOCKED, "same stream does not count twice");
  assert.throws(() => dec.decodeSection(4, section), DECOMP);
  const none = new QpackDecoder({ maxTableCapacity: 4096, maxBlockedStreams: 0 });
  assert.throws(() => none.decodeSection(0, section), DECOMP);
});

Deno.test("RFC 9204 §3.2.2: inserting at capacity evicts the oldest entries", () => {
  const dec = new QpackDecoder({ maxTableCapacity: 100, maxBlockedStreams: 0 });
  dec.pushEncoderStream(encodeSetCapacity(100));
  dec.pushEncoderStream(encodeInsertWithLiteralName("aaaa", "bbbb")); // 40
  dec.pushEncoderStream(encodeInsertWithLiteralName("cccc", "dddd")); // 80
  assert.equal(dec.table.size, 80);
  dec.pushEncoderStream(encodeInsertWithLiteralName("eeee", "ffff")); // evicts abs 0
  assert.equal(dec.table.size, 80);
  assert.equal(dec.table.droppedCount, 1);
  // A reference to the evicted entry is QPACK_DECOMPRESSION_FAILED (§2.2.3).
  const evicted = concatBytes(encodeSectionPrefix(3, 3, 3), encodeIndexedDynamic(2));
  assert.throws(() => dec.decodeSection(0, evicted), DECOMP);
  const ok = concatBytes(encodeSectionPrefix(3, 3, 3), encodeIndexedDynamic(1));
  assert.deepEqual(dec.decodeSection(0, ok), [["cccc", "dddd"]]);
  // Reducing the capacity evicts too (§4.3.1).
  dec.pushEncoderStream(encodeSetCapacity(40));
  assert.equal(dec.table.length, 1);
  assert.deepEqual(dec.table.get(2), ["eeee", "ffff"]);
  // Duplicate of an evicted entry is an encoder stream error.
  assert.throws(() => dec.pushEncoderStream(encodeDuplicate(1)), ENC_STREAM);
});

Deno.test("RFC 9204 §2.2.3: invalid references in field sections are QPACK_DECOMPRESSION_FAILED", () => {
  const dec = filledDecoder(3);
  const cases: Uint8Array[] = [
    // Reference at or beyond the Required Insert Count.
    concatBytes(encodeSectionPrefix(2, 2, 128), encodeIndexedPostBase(0)),
    concatBytes(encodeSectionPrefix(2, 0, 128), encodeIndexedPostBase(2)),
    concatBytes(encodeSectionPrefix(2, 0, 128), encodeLiteralPostBaseNameRef(2, "v")),
    // Relative index before the table start.
    concatBytes(encodeSectionPrefix(2, 2, 128), encodeIndexedDynamic(2)),
    concatBytes(encodeSectionPrefix(2, 2, 128), encodeLiteralDynamicNameRef(5, "v")),
    // Dynamic reference in a section with RIC 0.
    concatBytes(encodeSectionPrefix(0, 0, 128), encodeIndexedDynamic(0)),
    // Static index out of range.
    concatBytes(encodeSectionPrefix(0, 0, 128), encodeIndexedStatic(99)),
    concatBytes(encodeSectionPrefix(0, 0, 128), encodeLiteralStaticNameRef(120, "v")),
    // Required Insert Count too large for the table (encoded > 2 * MaxEntries).
    hex("ff80 02 00"),
    // Negative Base.
    hex("02 81"),
    // Truncated prefix / lines / strings.
    hex(""),
    hex("00"),
    hex("0000 5f"),
    hex("0000 510b 2f69"),
    hex("0000 27"),
    // Bad Huffman: padding of 8 ones; EOS.
    hex("0000 51 82 07ff"),
    hex("0000 51 84 ffffffff"),
  ];
  for (const [i, block] of cases.entries()) {
    assert.throws(() => dec.decodeSection(0, block), DECOMP, `case ${i}: ${toHex(block)}`);
  }
});

Deno.test("#32.1: a pre-base reference at or beyond the Required Insert Count is QPACK_DECOMPRESSION_FAILED", () => {
  // Defends the `abs >= ric` checks of the pre-base forms (§4.5.2 Indexed Field Line,
  // §4.5.4 Literal Field Line with Name Reference): deleting either one makes the decoder
  // return the entry (the table holds it; only the section's own RIC excludes it), and the
  // matching case below fails. Base above RIC (positive Delta Base) is what makes a pre-base
  // index reach past RIC; the table holds entries 0..3, so `table.has` alone does not catch it.
  const dec = filledDecoder(4);
  // RIC 2, Base 4: relative 0 = abs 3, relative 1 = abs 2, relative 2 = abs 1 (the last allowed).
  const prefix = encodeSectionPrefix(2, 4, 128);
  assert.equal(prefix[1], 0x02, "Delta Base +2, sign bit clear");
  assert.deepEqual(
    dec.decodeSection(0, concatBytes(prefix, encodeIndexedDynamic(2))),
    [["n1", "v1"]],
    "abs RIC - 1 decodes",
  );
  assert.deepEqual(
    dec.decodeSection(0, concatBytes(prefix, encodeLiteralDynamicNameRef(2, "x"))),
    [["n1", "x"]],
    "name of abs RIC - 1 decodes",
  );
  const beyond: [string, Uint8Array][] = [
    ["indexed abs = RIC", concatBytes(prefix, encodeIndexedDynamic(1))],
    ["indexed abs > RIC", concatBytes(prefix, encodeIndexedDynamic(0))],
    ["name ref abs = RIC", concatBytes(prefix, encodeLiteralDynamicNameRef(1, "x"))],
    ["name ref abs > RIC", concatBytes(prefix, encodeLiteralDynamicNameRef(0, "x"))],
  ];
  for (const [what, block] of beyond) {
    assert.throws(() => dec.decodeSection(0, block), DECOMP, `${what}: ${toHex(block)}`);
  }
});

Deno.test("RFC 9204 §4.3: invalid encoder instructions are QPACK_ENCODER_STREAM_ERROR", () => {
  const mk = () => {
    const d = new QpackDecoder({ maxTableCapacity: 100, maxBlockedStreams: 0 });
    d.pushEncoderStream(encodeSetCapacity(100));
    return d;
  };
  // Capacity above the maximum (§4.3.1).
  assert.throws(() => mk().pushEncoderStream(encodeSetCapacity(101)), ENC_STREAM);
  // Insert larger than the capacity (§3.2.2), detected from the length alone.
  assert.throws(
    () => mk().pushEncoderStream(encodeInsertWithLiteralName("n", "x".repeat(68))),
    ENC_STREAM,
  );
  assert.throws(
    () => mk().pushEncoderStream(encodeInsertWithLiteralName("n", "x".repeat(500)).subarray(0, 5)),
    ENC_STREAM,
  );
  assert.doesNotThrow(() =>
    mk().pushEncoderStream(encodeInsertWithLiteralName("n", "x".repeat(67)))
  );
  // Insert with zero capacity.
  const zero = new QpackDecoder({ maxTableCapacity: 100, maxBlockedStreams: 0 });
  assert.throws(() => zero.pushEncoderStream(encodeInsertWithLiteralName("a", "b")), ENC_STREAM);
  // Bad references.
  assert.throws(() => mk().pushEncoderStream(encodeInsertWithNameRef(true, 99, "v")), ENC_STREAM);
  assert.throws(() => mk().pushEncoderStream(encodeInsertWithNameRef(false, 0, "v")), ENC_STREAM);
  assert.throws(() => mk().pushEncoderStream(encodeDuplicate(0)), ENC_STREAM);
  // Bad Huffman in an inserted value.
  assert.throws(() => mk().pushEncoderStream(hex("c0 82 07ff")), ENC_STREAM);
  // Integer overflow.
  assert.throws(() => mk().pushEncoderStream(hex("3f ffffffffffffffffff01")), ENC_STREAM);
});

Deno.test("RFC 9114 §4.2.2: a section above maxFieldSectionSize is a stream error (H3_EXCESSIVE_LOAD)", () => {
  const dec = filledDecoder(2, { maxFieldSectionSize: 100 });
  const small = concatBytes(
    encodeSectionPrefix(0, 0, 128),
    encodeLiteralWithLiteralName("a", "b".repeat(67)),
  );
  assert.deepEqual(dec.decodeSection(0, small), [["a", "b".repeat(67)]]);
  const big = concatBytes(
    encodeSectionPrefix(0, 0, 128),
    encodeLiteralWithLiteralName("a", "b".repeat(68)),
  );
  assert.throws(
    () => dec.decodeSection(0, big),
    (e: unknown) =>
      e instanceof FieldSectionTooLargeError && e.code === H3Code.EXCESSIVE_LOAD &&
      e.scope === "stream",
  );
  // A dynamic section that is too large is still acknowledged (its references are released).
  const dyn = concatBytes(
    encodeSectionPrefix(2, 2, 128),
    encodeIndexedDynamic(0),
    encodeLiteralWithLiteralName("a", "b".repeat(60)),
  );
  assert.throws(() => dec.decodeSection(4, dyn), FieldSectionTooLargeError);
  assert.equal(toHex(dec.takeDecoderStreamBytes()), "84");
  // The decoder keeps working after a stream error.
  assert.deepEqual(dec.decodeSection(8, hex("0000 d1")), [[":method", "GET"]]);
  // Blocked then resumed: the error is reported per stream, not thrown.
  const dec2 = filledDecoder(0, { maxFieldSectionSize: 50 });
  const blocked = concatBytes(
    encodeSectionPrefix(1, 1, 128),
    encodeIndexedDynamic(0),
    encodeIndexedDynamic(0),
  );
  assert.equal(dec2.decodeSection(0, blocked), BLOCKED);
  const [r] = dec2.pushEncoderStream(encodeInsertWithLiteralName("k", "v"));
  assert.equal(r.streamId, 0);
  assert.deepEqual(r.fields, []);
  assert.ok(r.error instanceof FieldSectionTooLargeError);
});

Deno.test("RFC 9204 §4.4.2: Stream Cancellation is omitted when the maximum capacity is 0", () => {
  const dec = new QpackDecoder({ maxTableCapacity: 0, maxBlockedStreams: 0 });
  dec.cancelStream(4);
  assert.equal(dec.takeDecoderStreamBytes(), null);
  const dec2 = new QpackDecoder({ maxTableCapacity: 64, maxBlockedStreams: 0 });
  dec2.cancelStream(200);
  assert.equal(toHex(dec2.takeDecoderStreamBytes()), "7f89 01".replace(" ", ""));
});

Deno.test("RFC 9204 §4.5: byte values 0x80-0xff in strings pass through unchanged", () => {
  const dec = new QpackDecoder({ maxTableCapacity: 0, maxBlockedStreams: 0 });
  const value = "\u00e9\u00ff\u0080 caf\u00c3\u00a9 " + "\u00fe".repeat(40);
  for (const huffman of [true, false]) {
    const block = concatBytes(
      encodeSectionPrefix(0, 0, 0),
      encodeLiteralWithLiteralName("x-bytes", value, { huffman }),
    );
    assert.deepEqual(dec.decodeSection(0, block), [["x-bytes", value]]);
  }
});

Deno.test("RFC 9204 §4.3 (property): encoder-stream bytes split at arbitrary points give the same table", () => {
  const nameArb = fc.stringMatching(/^[a-z-]{1,12}$/);
  const valueArb = fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 40 }).map((a) =>
    String.fromCharCode(...a)
  );
  const huffArb = fc.constantFrom<boolean | "auto">(true, false, "auto");
  const instr = fc.oneof(
    fc.tuple(fc.integer({ min: 0, max: 98 }), valueArb, huffArb).map(([i, v, h]) => (_n: number) =>
      encodeInsertWithNameRef(true, i, v, h)
    ),
    fc.tuple(fc.nat(), valueArb, huffArb).map(([i, v, h]) => (n: number) =>
      n > 0
        ? encodeInsertWithNameRef(false, i % Math.min(n, 3), v, h)
        : encodeInsertWithLiteralName("a", v, h)
    ),
    fc.tuple(nameArb, valueArb, huffArb).map(([k, v, h]) => (_n: number) =>
      encodeInsertWithLiteralName(k, v, h)
    ),
    fc.nat().map((i) => (n: number) =>
      n > 0 ? encodeDuplicate(i % Math.min(n, 3)) : encodeSetCapacity(400)
    ),
    fc.integer({ min: 300, max: 400 }).map((c) => (_n: number) => encodeSetCapacity(c)),
  );
  fc.assert(
    fc.property(
      fc.array(instr, { maxLength: 30 }),
      fc.array(fc.nat(), { maxLength: 10 }),
      (makers, cutsRaw) => {
        // Build a valid stream, tracking how many entries are present (a lower bound).
        const parts = [encodeSetCapacity(400)];
        const model = new QpackDecoder({ maxTableCapacity: 400, maxBlockedStreams: 0 });
        model.pushEncoderStream(parts[0]);
        for (const make of makers) {
          const bytes = make(model.table.length);
          try {
            model.pushEncoderStream(bytes);
            parts.push(bytes);
          } catch {
            // e.g. an entry that does not fit: leave it out of the stream
            return;
          }
        }
        const stream = concatBytes(...parts);
        const cuts = [...new Set(cutsRaw.map((c) => c % (stream.length + 1)))].sort((a, b) =>
          a - b
        );
        const dec = new QpackDecoder({ maxTableCapacity: 400, maxBlockedStreams: 0 });
        let prev = 0;
        for (const c of [...cuts, stream.length]) {
          dec.pushEncoderStream(stream.subarray(prev, c));
          prev = c;
        }
        assert.equal(dec.table.insertCount, model.table.insertCount);
        assert.equal(dec.table.size, model.table.size);
        for (let i = model.table.droppedCount; i < model.table.insertCount; i++) {
          assert.deepEqual(dec.table.get(i), model.table.get(i));
        }
      },
    ),
    { numRuns: 300, seed: 7541 },
  );
});
