import assert from "node:assert/strict";
import fc from "fast-check";
import { H3Code, H3Error } from "../errors.ts";
import { QpackEncoder } from "./encoder.ts";
import { QpackDecoder } from "./decoder.ts";
import {
  encodeInsertCountIncrement,
  encodeSectionAck,
  encodeStreamCancel,
  toHex,
} from "./_test_util.ts";

const DEC_STREAM = (e: unknown) =>
  e instanceof H3Error && e.code === H3Code.QPACK_DECODER_STREAM_ERROR && e.scope === "connection";

Deno.test("RFC 9204 §4.5.2: exact static matches are indexed field lines", () => {
  const enc = new QpackEncoder();
  // Prefix 0000, then :status 200 = static 25 -> 0xc0 | 25 = d9.
  assert.equal(toHex(enc.encodeSection([[":status", "200"]])), "0000d9");
  // Index 63 needs a continuation byte: ff 00.
  assert.equal(toHex(enc.encodeSection([[":status", "100"]])), "0000ff00");
});

Deno.test("RFC 9204 §4.5.4: name matches use a static name reference with Huffman when shorter", () => {
  const enc = new QpackEncoder();
  // :path (index 1) with "/index.html": 0x51, then Huffman (shorter) value.
  const b = enc.encodeSection([[":path", "/index.html"]]);
  assert.equal(b[2], 0x51);
  assert.equal(b[3] & 0x80, 0x80, "Huffman flag");
  const plain = new QpackEncoder({ huffman: false });
  assert.equal(
    toHex(plain.encodeSection([[":path", "/index.html"]])),
    "0000510b2f696e6465782e68746d6c",
  );
});

Deno.test("RFC 9204 §4.5.6: unknown names are literal names", () => {
  const enc = new QpackEncoder({ huffman: false });
  assert.equal(toHex(enc.encodeSection([["x-a", "b"]])), "000023782d610162");
  // Huffman is not used when it is not shorter ("\xff" takes 26 bits).
  const auto = new QpackEncoder();
  const b = auto.encodeSection([["x", "\u00ff"]]);
  assert.equal(toHex(b), "00002178" + "01ff");
});

Deno.test("RFC 9204 §4.5: encoder output decodes to the same fields", () => {
  const fields: Array<[string, string]> = [
    [":status", "200"],
    ["content-type", "application/json"],
    ["content-length", "1234"],
    ["date", "Sun, 22 Nov 2026 02:00:00 GMT"],
    ["server", "spooky"],
    ["x-request-id", "0b6f0f5e-8f3e-4a43-9b5a-7d2c1f0e6a11"],
    ["set-cookie", "a=b; Path=/; HttpOnly"],
    ["empty", ""],
  ];
  const enc = new QpackEncoder();
  const dec = new QpackDecoder({ maxTableCapacity: 0, maxBlockedStreams: 0 });
  assert.deepEqual(dec.decodeSection(0, enc.encodeSection(fields)), fields);
  assert.deepEqual(dec.decodeSection(0, enc.encodeSection([])), []);
});

Deno.test("RFC 9204 §4.5: chars above 0xff are rejected (field values are bytes)", () => {
  assert.throws(() => new QpackEncoder().encodeSection([["x", "\u0100"]]), TypeError);
});

Deno.test("RFC 9204 §4.4: Stream Cancellation is accepted from any split", () => {
  const enc = new QpackEncoder();
  const bytes = new Uint8Array([...encodeStreamCancel(4), ...encodeStreamCancel(123456)]);
  for (let i = 0; i < bytes.length; i++) enc.pushDecoderStream(bytes.subarray(i, i + 1));
});

Deno.test("RFC 9204 §4.4.1: Section Acknowledgment without dynamic references is QPACK_DECODER_STREAM_ERROR", () => {
  assert.throws(() => new QpackEncoder().pushDecoderStream(encodeSectionAck(0)), DEC_STREAM);
  const enc = new QpackEncoder();
  const ack = encodeSectionAck(1000);
  enc.pushDecoderStream(ack.subarray(0, 1)); // incomplete: wait
  assert.throws(() => enc.pushDecoderStream(ack.subarray(1)), DEC_STREAM);
});

Deno.test("RFC 9204 §4.4.3: any Insert Count Increment is QPACK_DECODER_STREAM_ERROR (we never insert)", () => {
  assert.throws(
    () => new QpackEncoder().pushDecoderStream(encodeInsertCountIncrement(1)),
    DEC_STREAM,
  );
  assert.throws(
    () => new QpackEncoder().pushDecoderStream(encodeInsertCountIncrement(0)),
    DEC_STREAM,
  );
  assert.throws(
    () =>
      new QpackEncoder().pushDecoderStream(
        new Uint8Array([0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]),
      ),
    DEC_STREAM,
  );
});

const lowercaseName = fc.stringMatching(/^[a-z0-9!#$%&'*+.^_`|~-]{1,40}$/);
const byteString = fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 200 })
  .map((a) => String.fromCharCode(...a));
const staticFields = fc.constantFrom<[string, string]>(
  [":method", "GET"],
  [":path", "/"],
  ["accept", "*/*"],
  ["user-agent", "x"],
  ["cookie", "a=b"],
);

Deno.test("RFC 9204 §4.5 (property): encodeSection -> decodeSection round-trips arbitrary field lists", () => {
  const enc = new QpackEncoder();
  const dec = new QpackDecoder({ maxTableCapacity: 4096, maxBlockedStreams: 0 });
  fc.assert(
    fc.property(
      fc.array(fc.oneof(fc.tuple(lowercaseName, byteString), staticFields), { maxLength: 30 }),
      fc.constantFrom<boolean | "auto">(true, false, "auto"),
      (fields, huffman) => {
        const e = huffman === "auto" ? enc : new QpackEncoder({ huffman });
        assert.deepEqual(dec.decodeSection(0, e.encodeSection(fields)), fields);
      },
    ),
    { numRuns: 400, seed: 9204 },
  );
});
