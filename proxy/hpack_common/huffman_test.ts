import assert from "node:assert/strict";
import {
  HUFFMAN_TABLE,
  huffmanDecode,
  HuffmanDecodeError,
  huffmanEncode,
  huffmanEncodedLength,
} from "./huffman.ts";
import { hex, toHex } from "./_test_util.ts";

const te = new TextEncoder();
const td = new TextDecoder();

const VECTORS: Array<[string, string]> = [
  // RFC 7541 C.4.1 - C.4.3
  ["www.example.com", "f1e3c2e5f23a6ba0ab90f4ff"],
  ["no-cache", "a8eb10649cbf"],
  ["custom-key", "25a849e95ba97d7f"],
  ["custom-value", "25a849e95bb8e8b4bf"],
  // RFC 7541 C.6.1
  ["302", "6402"],
  ["private", "aec3771a4b"],
  ["Mon, 21 Oct 2013 20:13:21 GMT", "d07abe941054d444a8200595040b8166e082a62d1bff"],
  ["https://www.example.com", "9d29ad171863c78f0b97c8e9ae82ae43d3"],
];

Deno.test("RFC 7541 C.4/C.6: Huffman encoding matches the RFC byte for byte", () => {
  for (const [text, code] of VECTORS) {
    assert.equal(toHex(huffmanEncode(te.encode(text))), code, text);
    assert.equal(huffmanEncodedLength(te.encode(text)), code.length / 2, text);
  }
});

Deno.test("RFC 7541 C.4/C.6: Huffman decoding matches the RFC", () => {
  for (const [text, code] of VECTORS) {
    assert.equal(td.decode(huffmanDecode(hex(code))), text);
  }
});

Deno.test("RFC 7541 Appendix B: the code is canonical and complete (Kraft sum 1)", () => {
  const { codes, lengths } = HUFFMAN_TABLE;
  assert.equal(codes.length, 257);
  const order = [...Array(257).keys()].sort((a, b) => lengths[a] - lengths[b] || a - b);
  let code = 0;
  let prev = lengths[order[0]];
  let kraft = 0;
  for (const s of order) {
    code *= 2 ** (lengths[s] - prev);
    prev = lengths[s];
    assert.equal(codes[s], code, `symbol ${s}`);
    code++;
    kraft += 2 ** -lengths[s];
  }
  assert.equal(kraft, 1);
  assert.equal(codes[256], 0x3fffffff);
  assert.equal(lengths[256], 30);
});

Deno.test("RFC 7541 §5.2: every byte value round-trips, alone and in sequence", () => {
  const all = new Uint8Array(256).map((_, i) => i);
  assert.deepEqual(huffmanDecode(huffmanEncode(all)), all);
  for (let i = 0; i < 256; i++) {
    const one = new Uint8Array([i, 255 - i, i]);
    assert.deepEqual(huffmanDecode(huffmanEncode(one)), one);
  }
  assert.deepEqual(huffmanDecode(new Uint8Array(0)), new Uint8Array(0));
});

Deno.test("RFC 7541 §5.2: padding longer than 7 bits is an error", () => {
  assert.throws(() => huffmanDecode(hex("ff")), HuffmanDecodeError);
  // "0" is 00000, padded with 111 -> 07; adding a whole byte of ones is too long.
  assert.deepEqual(huffmanDecode(hex("07")), te.encode("0"));
  assert.throws(() => huffmanDecode(hex("07ff")), HuffmanDecodeError);
});

Deno.test("RFC 7541 §5.2: padding that is not all ones is an error", () => {
  // "0" (00000) followed by 110 instead of 111.
  assert.throws(() => huffmanDecode(hex("06")), HuffmanDecodeError);
  // Truncated code: the first 8 bits of a 13-bit code (NUL = 1ff8) are all ones but
  // then a 0 bit follows within the padding region.
  assert.throws(() => huffmanDecode(hex("fffe")), HuffmanDecodeError);
});

Deno.test("RFC 7541 §5.2: an EOS symbol in the data is an error", () => {
  // EOS = 30 ones; followed by two ones of padding -> ffffffff.
  assert.throws(() => huffmanDecode(hex("ffffffff")), HuffmanDecodeError);
  // "a" (00011) + EOS (30 ones) + 5 bits: 00011111 11111111 11111111 11111111 11111000
  assert.throws(() => huffmanDecode(hex("1fffffff f8")), HuffmanDecodeError);
});
