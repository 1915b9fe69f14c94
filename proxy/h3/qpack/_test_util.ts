/**
 * Test helpers of the QPACK tests: hex conversion (`hex` is the codec
 * tests' one), and encoders for every QPACK instruction (RFC 9204 §4.3,
 * §4.4) and field line representation (§4.5), for tests and test clients
 * that build arbitrary encoder streams and field sections, post-base
 * references included (the encoder never emits those). The codec's own
 * encoder writes its instructions itself.
 *
 * Strings are byte strings (one char per byte, char codes 0..255). `huffman`
 * chooses the string encoding: `true`, `false`, or `"auto"` (the default:
 * Huffman when strictly shorter).
 *
 * @module
 */

import { ByteWriter, type HuffmanChoice } from "../../hpack_common/bytes.ts";

export { concatBytes } from "../frames.ts";
export { hex } from "../_test_util.ts";

/** Options of literal field line encoders. */
export interface LiteralOptions {
  /** String encoding of the value (and literal name): true, false or "auto" (default). */
  huffman?: HuffmanChoice;
  /** The N bit (§4.5.4): intermediaries must not index this field line. */
  neverIndex?: boolean;
}

function build(fn: (w: ByteWriter) => void): Uint8Array {
  const w = new ByteWriter(64);
  fn(w);
  return w.take();
}

// --- Encoder stream (§4.3) --------------------------------------------------

/** Set Dynamic Table Capacity (§4.3.1): `001` + capacity(5+). */
export function encodeSetCapacity(capacity: number): Uint8Array {
  return build((w) => w.int(capacity, 5, 0x20));
}

/**
 * Insert with Name Reference (§4.3.2): `1T` + index(6+) + value. A dynamic
 * `index` is relative to the insert count (0 = most recent entry).
 */
export function encodeInsertWithNameRef(
  isStatic: boolean,
  index: number,
  value: string,
  huffman: HuffmanChoice = "auto",
): Uint8Array {
  return build((w) => {
    w.int(index, 6, isStatic ? 0xc0 : 0x80);
    w.string(value, 7, 0, huffman);
  });
}

/** Insert with Literal Name (§4.3.3): `01H` + name length(5+) + name + value. */
export function encodeInsertWithLiteralName(
  name: string,
  value: string,
  huffman: HuffmanChoice = "auto",
): Uint8Array {
  return build((w) => {
    w.string(name, 5, 0x40, huffman);
    w.string(value, 7, 0, huffman);
  });
}

/** Duplicate (§4.3.4): `000` + relative index(5+). */
export function encodeDuplicate(relIndex: number): Uint8Array {
  return build((w) => w.int(relIndex, 5, 0x00));
}

// --- Decoder stream (§4.4) --------------------------------------------------

/** Section Acknowledgment (§4.4.1): `1` + stream ID(7+). */
export function encodeSectionAck(streamId: number): Uint8Array {
  return build((w) => w.int(streamId, 7, 0x80));
}

/** Stream Cancellation (§4.4.2): `01` + stream ID(6+). */
export function encodeStreamCancel(streamId: number): Uint8Array {
  return build((w) => w.int(streamId, 6, 0x40));
}

/** Insert Count Increment (§4.4.3): `00` + increment(6+). */
export function encodeInsertCountIncrement(increment: number): Uint8Array {
  return build((w) => w.int(increment, 6, 0x00));
}

// --- Field sections (§4.5) ---------------------------------------------------

/**
 * Encoded Field Section Prefix (§4.5.1): Required Insert Count encoded modulo
 * `2 * maxEntries` (§4.5.1.1), then Base as sign bit + Delta Base(7+).
 * `maxEntries` is floor(decoder's max table capacity / 32).
 */
export function encodeSectionPrefix(
  requiredInsertCount: number,
  base: number,
  maxEntries: number,
): Uint8Array {
  return build((w) => {
    const encoded = requiredInsertCount === 0 ? 0 : (requiredInsertCount % (2 * maxEntries)) + 1;
    w.int(encoded, 8, 0);
    if (base >= requiredInsertCount) w.int(base - requiredInsertCount, 7, 0x00);
    else w.int(requiredInsertCount - base - 1, 7, 0x80);
  });
}

/** Indexed Field Line, static table (§4.5.2): `11` + index(6+). */
export function encodeIndexedStatic(index: number): Uint8Array {
  return build((w) => w.int(index, 6, 0xc0));
}

/** Indexed Field Line, dynamic table (§4.5.2): `10` + relative index(6+); abs = Base - 1 - index. */
export function encodeIndexedDynamic(relIndex: number): Uint8Array {
  return build((w) => w.int(relIndex, 6, 0x80));
}

/** Indexed Field Line with Post-Base Index (§4.5.3): `0001` + index(4+); abs = Base + index. */
export function encodeIndexedPostBase(index: number): Uint8Array {
  return build((w) => w.int(index, 4, 0x10));
}

/** Literal Field Line with Name Reference, static (§4.5.4): `01N1` + index(4+) + value. */
export function encodeLiteralStaticNameRef(
  index: number,
  value: string,
  opts: LiteralOptions = {},
): Uint8Array {
  return build((w) => {
    w.int(index, 4, 0x50 | (opts.neverIndex ? 0x20 : 0));
    w.string(value, 7, 0, opts.huffman ?? "auto");
  });
}

/** Literal Field Line with Name Reference, dynamic (§4.5.4): `01N0` + relative index(4+) + value. */
export function encodeLiteralDynamicNameRef(
  relIndex: number,
  value: string,
  opts: LiteralOptions = {},
): Uint8Array {
  return build((w) => {
    w.int(relIndex, 4, 0x40 | (opts.neverIndex ? 0x20 : 0));
    w.string(value, 7, 0, opts.huffman ?? "auto");
  });
}

/** Literal Field Line with Post-Base Name Reference (§4.5.5): `0000N` + index(3+) + value. */
export function encodeLiteralPostBaseNameRef(
  index: number,
  value: string,
  opts: LiteralOptions = {},
): Uint8Array {
  return build((w) => {
    w.int(index, 3, opts.neverIndex ? 0x08 : 0);
    w.string(value, 7, 0, opts.huffman ?? "auto");
  });
}

/** Literal Field Line with Literal Name (§4.5.6): `001NH` + name length(3+) + name + value. */
export function encodeLiteralWithLiteralName(
  name: string,
  value: string,
  opts: LiteralOptions = {},
): Uint8Array {
  return build((w) => {
    w.string(name, 3, 0x20 | (opts.neverIndex ? 0x10 : 0), opts.huffman ?? "auto");
    w.string(value, 7, 0, opts.huffman ?? "auto");
  });
}

/** Hex string of bytes. */
export function toHex(b: Uint8Array | null): string {
  if (b === null) return "";
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}
