import assert from "node:assert/strict";
import { H3Code, H3Error, NEED_MORE } from "../errors.ts";
import { decodePrefixInt, encodePrefixInt, MAX_PREFIX_INT, prefixIntLength } from "./prefix_int.ts";
import { hex, toHex } from "./_test_util.ts";

Deno.test("RFC 7541 C.1.1: 10 with a 5-bit prefix is one byte", () => {
  assert.equal(toHex(encodePrefixInt(10, 5)), "0a");
  assert.deepEqual(decodePrefixInt(hex("0a"), 0, 5), { value: 10, next: 1 });
});

Deno.test("RFC 7541 C.1.2: 1337 with a 5-bit prefix", () => {
  assert.equal(toHex(encodePrefixInt(1337, 5)), "1f9a0a");
  assert.deepEqual(decodePrefixInt(hex("1f9a0a"), 0, 5), { value: 1337, next: 3 });
  // Bits above the prefix are ignored by the decoder and set by the encoder.
  assert.deepEqual(decodePrefixInt(hex("ff9a0a"), 0, 5), { value: 1337, next: 3 });
  assert.equal(toHex(encodePrefixInt(1337, 5, 0xe0)), "ff9a0a");
});

Deno.test("RFC 7541 C.1.3: 42 with an 8-bit prefix", () => {
  assert.equal(toHex(encodePrefixInt(42, 8)), "2a");
  assert.deepEqual(decodePrefixInt(hex("2a"), 0, 8), { value: 42, next: 1 });
});

Deno.test("RFC 7541 §5.1: value equal to the prefix maximum takes a continuation byte", () => {
  assert.equal(toHex(encodePrefixInt(31, 5)), "1f00");
  assert.deepEqual(decodePrefixInt(hex("1f00"), 0, 5), { value: 31, next: 2 });
  assert.equal(prefixIntLength(30, 5), 1);
  assert.equal(prefixIntLength(31, 5), 2);
});

Deno.test("RFC 7541 §5.1: truncated integers return NEED_MORE at every split", () => {
  const bytes = encodePrefixInt(123456789, 3);
  for (let cut = 0; cut < bytes.length; cut++) {
    assert.equal(decodePrefixInt(bytes.subarray(0, cut), 0, 3), NEED_MORE);
  }
  assert.deepEqual(decodePrefixInt(bytes, 0, 3), { value: 123456789, next: bytes.length });
});

Deno.test("RFC 7541 §5.1: round trip over prefixes 1..8 and large values", () => {
  const values = [
    0,
    1,
    2,
    6,
    7,
    126,
    127,
    128,
    254,
    255,
    256,
    16383,
    16384,
    2 ** 31,
    2 ** 32 + 5,
    MAX_PREFIX_INT,
  ];
  for (let p = 1; p <= 8; p++) {
    for (const v of values) {
      const b = encodePrefixInt(v, p);
      assert.equal(b.length, prefixIntLength(v, p));
      assert.deepEqual(decodePrefixInt(b, 0, p), { value: v, next: b.length });
    }
  }
});

Deno.test("RFC 9204 §2.1.5: values above 2^53-1 are rejected with the given code", () => {
  // 2^62 - 1 with an 8-bit prefix (a valid QUIC-sized value) exceeds our limit.
  const big = hex("ff80ffffffffffffff3f");
  assert.throws(
    () => decodePrefixInt(big, 0, 8),
    (e: unknown) => e instanceof H3Error && e.code === H3Code.QPACK_DECOMPRESSION_FAILED,
  );
  assert.throws(
    () => decodePrefixInt(big, 0, 8, H3Code.QPACK_ENCODER_STREAM_ERROR),
    (e: unknown) => e instanceof H3Error && e.code === H3Code.QPACK_ENCODER_STREAM_ERROR,
  );
  // Endless continuation bytes are rejected rather than read forever.
  const long = new Uint8Array(20).fill(0x80);
  long[0] = 0xff;
  assert.throws(() => decodePrefixInt(long, 0, 8), H3Error);
  assert.throws(() => encodePrefixInt(2 ** 53, 8), RangeError);
});
