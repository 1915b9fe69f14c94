import fc from "fast-check";
import { NEED_MORE } from "./errors.ts";
import {
  decodeVarint,
  decodeVarintBig,
  encodeVarint,
  VARINT_MAX,
  varintLength,
  writeVarint,
} from "./varint.ts";
import assert from "node:assert/strict";
import { hex } from "./_test_util.ts";

Deno.test("RFC 9000 A.1: 8-byte example 0xc2197c5eff14e88c = 151288809941952652", () => {
  const buf = hex("c2197c5eff14e88c");
  const big = decodeVarintBig(buf, 0);
  assert.deepEqual(big, { value: 151288809941952652n, length: 8 });
  const d = decodeVarint(buf, 0);
  assert.notEqual(d, NEED_MORE);
  if (d === NEED_MORE) return;
  assert.equal(d.length, 8);
  assert.equal(d.value, Number(151288809941952652n)); // approximate above 2^53
  assert.deepEqual(encodeVarint(151288809941952652n), buf);
});

Deno.test("RFC 9000 A.1: 4-byte example 0x9d7f3e7d = 494878333", () => {
  assert.deepEqual(decodeVarint(hex("9d7f3e7d"), 0), { value: 494878333, length: 4 });
  assert.deepEqual(encodeVarint(494878333), hex("9d7f3e7d"));
});

Deno.test("RFC 9000 A.1: 2-byte example 0x7bbd = 15293", () => {
  assert.deepEqual(decodeVarint(hex("7bbd"), 0), { value: 15293, length: 2 });
  assert.deepEqual(encodeVarint(15293), hex("7bbd"));
});

Deno.test("RFC 9000 A.1: 1-byte example 0x25 = 37", () => {
  assert.deepEqual(decodeVarint(hex("25"), 0), { value: 37, length: 1 });
  assert.deepEqual(encodeVarint(37), hex("25"));
});

Deno.test("RFC 9000 A.1: non-minimal 0x4025 also decodes to 37", () => {
  assert.deepEqual(decodeVarint(hex("4025"), 0), { value: 37, length: 2 });
});

Deno.test("RFC 9000 §16: boundaries of each length", () => {
  const cases: Array<[number | bigint, number]> = [
    [0, 1],
    [63, 1],
    [64, 2],
    [16383, 2],
    [16384, 4],
    [2 ** 30 - 1, 4],
    [2 ** 30, 8],
    [Number.MAX_SAFE_INTEGER, 8],
    [VARINT_MAX, 8],
  ];
  for (const [v, len] of cases) {
    assert.equal(varintLength(v), len, `length of ${v}`);
    const enc = encodeVarint(v);
    assert.equal(enc.length, len);
    const big = decodeVarintBig(enc, 0);
    assert.notEqual(big, NEED_MORE);
    if (big !== NEED_MORE) assert.equal(big.value, BigInt(v));
  }
});

Deno.test("RFC 9000 §16: values >= 2^62, negative or fractional are rejected", () => {
  assert.throws(() => encodeVarint(2 ** 62), RangeError);
  assert.throws(() => encodeVarint(1n << 62n), RangeError);
  assert.throws(() => encodeVarint(-1), RangeError);
  assert.throws(() => encodeVarint(-1n), RangeError);
  assert.throws(() => encodeVarint(1.5), RangeError);
  assert.throws(() => encodeVarint(NaN), RangeError);
  assert.throws(() => varintLength(Infinity), RangeError);
});

Deno.test("decodeVarint: truncated input and offsets return NEED_MORE", () => {
  assert.equal(decodeVarint(new Uint8Array(0), 0), NEED_MORE);
  assert.equal(decodeVarint(hex("7b"), 0), NEED_MORE);
  assert.equal(decodeVarint(hex("9d7f3e"), 0), NEED_MORE);
  assert.equal(decodeVarint(hex("c2197c5eff14e8"), 0), NEED_MORE);
  assert.equal(decodeVarintBig(hex("c2"), 0), NEED_MORE);
  assert.deepEqual(decodeVarint(hex("ff 25"), 1), { value: 37, length: 1 });
  assert.equal(decodeVarint(hex("25"), 1), NEED_MORE);
});

Deno.test("writeVarint: returns the new offset and rejects short buffers", () => {
  const buf = new Uint8Array(7);
  let o = writeVarint(buf, 0, 37);
  o = writeVarint(buf, o, 15293);
  o = writeVarint(buf, o, 494878333);
  assert.equal(o, 7);
  assert.deepEqual(buf, hex("25 7bbd 9d7f3e7d"));
  assert.throws(() => writeVarint(new Uint8Array(1), 0, 64), RangeError);
});

Deno.test("varint round trip (property)", () => {
  fc.assert(
    fc.property(fc.bigInt({ min: 0n, max: VARINT_MAX }), (v) => {
      const enc = encodeVarint(v);
      assert.equal(enc.length, varintLength(v));
      const big = decodeVarintBig(enc, 0);
      assert.deepEqual(big, { value: v, length: enc.length });
      const d = decodeVarint(enc, 0);
      assert.notEqual(d, NEED_MORE);
      if (d !== NEED_MORE) assert.equal(d.value, Number(v));
    }),
  );
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 2 ** 31 }), (v) => {
      assert.deepEqual(decodeVarint(encodeVarint(v), 0), { value: v, length: varintLength(v) });
    }),
  );
});
