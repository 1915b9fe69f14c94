import assert from "node:assert/strict";
import {
  encodeDuplicate,
  encodeIndexedDynamic,
  encodeIndexedPostBase,
  encodeIndexedStatic,
  encodeInsertCountIncrement,
  encodeInsertWithLiteralName,
  encodeInsertWithNameRef,
  encodeLiteralDynamicNameRef,
  encodeLiteralPostBaseNameRef,
  encodeLiteralStaticNameRef,
  encodeLiteralWithLiteralName,
  encodeSectionAck,
  encodeSectionPrefix,
  encodeSetCapacity,
  encodeStreamCancel,
  toHex,
} from "./_test_util.ts";

Deno.test("RFC 9204 B.2/B.3/B.5: encoder instructions match the RFC bytes", () => {
  assert.equal(toHex(encodeSetCapacity(220)), "3fbd01");
  assert.equal(
    toHex(encodeInsertWithNameRef(true, 0, "www.example.com", false)),
    "c00f7777772e6578616d706c652e636f6d",
  );
  assert.equal(
    toHex(encodeInsertWithNameRef(true, 1, "/sample/path", false)),
    "c10c2f73616d706c652f70617468",
  );
  assert.equal(
    toHex(encodeInsertWithLiteralName("custom-key", "custom-value", false)),
    "4a637573746f6d2d6b65790c637573746f6d2d76616c7565",
  );
  assert.equal(toHex(encodeDuplicate(2)), "02");
  assert.equal(
    toHex(encodeInsertWithNameRef(false, 1, "custom-value2", false)),
    "810d637573746f6d2d76616c756532",
  );
});

Deno.test("RFC 9204 §4.3.3: Huffman literal names set the H bit above a 5-bit length", () => {
  // custom-key Huffman = 25a849e95ba97d7f (8 bytes): 0x40 | 0x20 | 8 = 0x68.
  assert.equal(toHex(encodeInsertWithLiteralName("custom-key", "", true)), "6825a849e95ba97d7f80");
});

Deno.test("RFC 9204 B.2/B.4: decoder instructions match the RFC bytes", () => {
  assert.equal(toHex(encodeSectionAck(4)), "84");
  assert.equal(toHex(encodeStreamCancel(8)), "48");
  assert.equal(toHex(encodeInsertCountIncrement(1)), "01");
  assert.equal(toHex(encodeSectionAck(127)), "ff00");
  assert.equal(toHex(encodeStreamCancel(63)), "7f00");
  assert.equal(toHex(encodeInsertCountIncrement(64)), "3f01");
});

Deno.test("RFC 9204 §4.5.1: section prefixes of B.1, B.2 and B.4", () => {
  assert.equal(toHex(encodeSectionPrefix(0, 0, 6)), "0000");
  assert.equal(toHex(encodeSectionPrefix(2, 0, 6)), "0381");
  assert.equal(toHex(encodeSectionPrefix(4, 4, 6)), "0500");
  // Wrap-around: RIC 14 with MaxEntries 6 encodes as 14 % 12 + 1 = 3.
  assert.equal(toHex(encodeSectionPrefix(14, 16, 6)), "0302");
});

Deno.test("RFC 9204 §4.5.2-§4.5.6: field line representations have the right patterns", () => {
  assert.equal(toHex(encodeIndexedStatic(1)), "c1");
  assert.equal(toHex(encodeIndexedDynamic(0)), "80");
  assert.equal(toHex(encodeIndexedPostBase(1)), "11");
  assert.equal(toHex(encodeIndexedPostBase(15)), "1f00");
  assert.equal(toHex(encodeLiteralStaticNameRef(1, "/a", { huffman: false })), "51022f61");
  assert.equal(
    toHex(encodeLiteralStaticNameRef(1, "/a", { huffman: false, neverIndex: true })),
    "71022f61",
  );
  assert.equal(toHex(encodeLiteralDynamicNameRef(2, "x", { huffman: false })), "420178");
  assert.equal(
    toHex(encodeLiteralPostBaseNameRef(1, "x", { huffman: false, neverIndex: true })),
    "090178",
  );
  assert.equal(toHex(encodeLiteralWithLiteralName("ab", "c", { huffman: false })), "2261620163");
  assert.equal(
    toHex(encodeLiteralWithLiteralName("ab", "c", { huffman: false, neverIndex: true })),
    "3261620163",
  );
  // "ab" = 00011 100011 + 11111 padding = 1c7f; an empty Huffman value is 80.
  assert.equal(toHex(encodeLiteralWithLiteralName("ab", "", { huffman: true })), "2a1c7f80");
});
