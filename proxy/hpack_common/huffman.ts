/**
 * The static Huffman code of RFC 7541 Appendix B, used by HPACK string
 * literals (RFC 7541 §5.2) and
 * QPACK string literals (RFC 9204 §4.1.2).
 *
 * Decoding is table driven: a byte-at-a-time state machine (256 states x 256
 * input bytes) is derived from the code table the first time a string is
 * decoded, so each input byte costs one table look-up instead of eight tree
 * steps.
 *
 * @module
 */

/**
 * Code of each symbol 0..256 (256 = EOS), right-aligned, from RFC 7541 Appendix B
 * ("code as hex aligned to LSB").
 */
const CODES = new Uint32Array([
  0x1ff8,
  0x7fffd8,
  0xfffffe2,
  0xfffffe3,
  0xfffffe4,
  0xfffffe5,
  0xfffffe6,
  0xfffffe7,
  0xfffffe8,
  0xffffea,
  0x3ffffffc,
  0xfffffe9,
  0xfffffea,
  0x3ffffffd,
  0xfffffeb,
  0xfffffec,
  0xfffffed,
  0xfffffee,
  0xfffffef,
  0xffffff0,
  0xffffff1,
  0xffffff2,
  0x3ffffffe,
  0xffffff3,
  0xffffff4,
  0xffffff5,
  0xffffff6,
  0xffffff7,
  0xffffff8,
  0xffffff9,
  0xffffffa,
  0xffffffb,
  // ' ' (32) .. '/' (47)
  0x14,
  0x3f8,
  0x3f9,
  0xffa,
  0x1ff9,
  0x15,
  0xf8,
  0x7fa,
  0x3fa,
  0x3fb,
  0xf9,
  0x7fb,
  0xfa,
  0x16,
  0x17,
  0x18,
  // '0' (48) .. '?' (63)
  0x0,
  0x1,
  0x2,
  0x19,
  0x1a,
  0x1b,
  0x1c,
  0x1d,
  0x1e,
  0x1f,
  0x5c,
  0xfb,
  0x7ffc,
  0x20,
  0xffb,
  0x3fc,
  // '@' (64) .. 'O' (79)
  0x1ffa,
  0x21,
  0x5d,
  0x5e,
  0x5f,
  0x60,
  0x61,
  0x62,
  0x63,
  0x64,
  0x65,
  0x66,
  0x67,
  0x68,
  0x69,
  0x6a,
  // 'P' (80) .. '_' (95)
  0x6b,
  0x6c,
  0x6d,
  0x6e,
  0x6f,
  0x70,
  0x71,
  0x72,
  0xfc,
  0x73,
  0xfd,
  0x1ffb,
  0x7fff0,
  0x1ffc,
  0x3ffc,
  0x22,
  // '`' (96) .. 'o' (111)
  0x7ffd,
  0x3,
  0x23,
  0x4,
  0x24,
  0x5,
  0x25,
  0x26,
  0x27,
  0x6,
  0x74,
  0x75,
  0x28,
  0x29,
  0x2a,
  0x7,
  // 'p' (112) .. 127
  0x2b,
  0x76,
  0x2c,
  0x8,
  0x9,
  0x2d,
  0x77,
  0x78,
  0x79,
  0x7a,
  0x7b,
  0x7ffe,
  0x7fc,
  0x3ffd,
  0x1ffd,
  0xffffffc,
  // 128 .. 143
  0xfffe6,
  0x3fffd2,
  0xfffe7,
  0xfffe8,
  0x3fffd3,
  0x3fffd4,
  0x3fffd5,
  0x7fffd9,
  0x3fffd6,
  0x7fffda,
  0x7fffdb,
  0x7fffdc,
  0x7fffdd,
  0x7fffde,
  0xffffeb,
  0x7fffdf,
  // 144 .. 159
  0xffffec,
  0xffffed,
  0x3fffd7,
  0x7fffe0,
  0xffffee,
  0x7fffe1,
  0x7fffe2,
  0x7fffe3,
  0x7fffe4,
  0x1fffdc,
  0x3fffd8,
  0x7fffe5,
  0x3fffd9,
  0x7fffe6,
  0x7fffe7,
  0xffffef,
  // 160 .. 175
  0x3fffda,
  0x1fffdd,
  0xfffe9,
  0x3fffdb,
  0x3fffdc,
  0x7fffe8,
  0x7fffe9,
  0x1fffde,
  0x7fffea,
  0x3fffdd,
  0x3fffde,
  0xfffff0,
  0x1fffdf,
  0x3fffdf,
  0x7fffeb,
  0x7fffec,
  // 176 .. 191
  0x1fffe0,
  0x1fffe1,
  0x3fffe0,
  0x1fffe2,
  0x7fffed,
  0x3fffe1,
  0x7fffee,
  0x7fffef,
  0xfffea,
  0x3fffe2,
  0x3fffe3,
  0x3fffe4,
  0x7ffff0,
  0x3fffe5,
  0x3fffe6,
  0x7ffff1,
  // 192 .. 207
  0x3ffffe0,
  0x3ffffe1,
  0xfffeb,
  0x7fff1,
  0x3fffe7,
  0x7ffff2,
  0x3fffe8,
  0x1ffffec,
  0x3ffffe2,
  0x3ffffe3,
  0x3ffffe4,
  0x7ffffde,
  0x7ffffdf,
  0x3ffffe5,
  0xfffff1,
  0x1ffffed,
  // 208 .. 223
  0x7fff2,
  0x1fffe3,
  0x3ffffe6,
  0x7ffffe0,
  0x7ffffe1,
  0x3ffffe7,
  0x7ffffe2,
  0xfffff2,
  0x1fffe4,
  0x1fffe5,
  0x3ffffe8,
  0x3ffffe9,
  0xffffffd,
  0x7ffffe3,
  0x7ffffe4,
  0x7ffffe5,
  // 224 .. 239
  0xfffec,
  0xfffff3,
  0xfffed,
  0x1fffe6,
  0x3fffe9,
  0x1fffe7,
  0x1fffe8,
  0x7ffff3,
  0x3fffea,
  0x3fffeb,
  0x1ffffee,
  0x1ffffef,
  0xfffff4,
  0xfffff5,
  0x3ffffea,
  0x7ffff4,
  // 240 .. 255
  0x3ffffeb,
  0x7ffffe6,
  0x3ffffec,
  0x3ffffed,
  0x7ffffe7,
  0x7ffffe8,
  0x7ffffe9,
  0x7ffffea,
  0x7ffffeb,
  0xffffffe,
  0x7ffffec,
  0x7ffffed,
  0x7ffffee,
  0x7ffffef,
  0x7fffff0,
  0x3ffffee,
  // EOS (256)
  0x3fffffff,
]);

/** Code length in bits of each symbol 0..256, from RFC 7541 Appendix B. */
const LENGTHS = new Uint8Array([
  13,
  23,
  28,
  28,
  28,
  28,
  28,
  28,
  28,
  24,
  30,
  28,
  28,
  30,
  28,
  28,
  28,
  28,
  28,
  28,
  28,
  28,
  30,
  28,
  28,
  28,
  28,
  28,
  28,
  28,
  28,
  28,
  6,
  10,
  10,
  12,
  13,
  6,
  8,
  11,
  10,
  10,
  8,
  11,
  8,
  6,
  6,
  6,
  5,
  5,
  5,
  6,
  6,
  6,
  6,
  6,
  6,
  6,
  7,
  8,
  15,
  6,
  12,
  10,
  13,
  6,
  7,
  7,
  7,
  7,
  7,
  7,
  7,
  7,
  7,
  7,
  7,
  7,
  7,
  7,
  7,
  7,
  7,
  7,
  7,
  7,
  7,
  7,
  8,
  7,
  8,
  13,
  19,
  13,
  14,
  6,
  15,
  5,
  6,
  5,
  6,
  5,
  6,
  6,
  6,
  5,
  7,
  7,
  6,
  6,
  6,
  5,
  6,
  7,
  6,
  5,
  5,
  6,
  7,
  7,
  7,
  7,
  7,
  15,
  11,
  14,
  13,
  28,
  20,
  22,
  20,
  20,
  22,
  22,
  22,
  23,
  22,
  23,
  23,
  23,
  23,
  23,
  24,
  23,
  24,
  24,
  22,
  23,
  24,
  23,
  23,
  23,
  23,
  21,
  22,
  23,
  22,
  23,
  23,
  24,
  22,
  21,
  20,
  22,
  22,
  23,
  23,
  21,
  23,
  22,
  22,
  24,
  21,
  22,
  23,
  23,
  21,
  21,
  22,
  21,
  23,
  22,
  23,
  23,
  20,
  22,
  22,
  22,
  23,
  22,
  22,
  23,
  26,
  26,
  20,
  19,
  22,
  23,
  22,
  25,
  26,
  26,
  26,
  27,
  27,
  26,
  24,
  25,
  19,
  21,
  26,
  27,
  27,
  26,
  27,
  24,
  21,
  21,
  26,
  26,
  28,
  27,
  27,
  27,
  20,
  24,
  20,
  21,
  22,
  21,
  21,
  23,
  22,
  22,
  25,
  25,
  24,
  24,
  26,
  23,
  26,
  27,
  26,
  26,
  27,
  27,
  27,
  27,
  27,
  28,
  27,
  27,
  27,
  27,
  27,
  26,
  30,
]);

/** The EOS symbol (RFC 7541 §5.2). */
const EOS = 256;

/**
 * Read-only views of the code table, for tests that check it against the RFC's
 * properties (canonical, complete prefix code).
 */
export const HUFFMAN_TABLE: { readonly codes: Uint32Array; readonly lengths: Uint8Array } = {
  codes: CODES,
  lengths: LENGTHS,
};

/** Thrown by {@link huffmanDecode} for an invalid Huffman string (RFC 7541 §5.2). */
export class HuffmanDecodeError extends Error {
  /** Creates the error; `message` says what is wrong with the string. */
  constructor(message: string) {
    super(message);
    this.name = "HuffmanDecodeError";
  }
}

// ---------------------------------------------------------------------------
// Decoder state machine.
//
// The code tree has 257 leaves, hence exactly 256 internal nodes: each internal
// node is a state (0 = root). For each state and each input byte, TRANSITIONS
// holds, packed into one 32-bit word:
//   bits 0..7   next state
//   bits 8..15  first emitted symbol
//   bits 16..23 second emitted symbol
//   bits 24..25 number of emitted symbols (0..2)
//   bit  26     failure (EOS decoded)
//   bit  27     the next state is a valid end of string (padding of at most 7
//               bits, all ones)
// ---------------------------------------------------------------------------

const FAIL = 1 << 26;
const ACCEPT = 1 << 27;

let transitions: Int32Array | null = null;

function buildTransitions(): Int32Array {
  // Build the tree: children[node*2 + bit] = child; child >= 0 is an internal
  // node id, child < 0 is leaf -(symbol + 1).
  const children = new Int32Array(256 * 2);
  let nodes = 1;
  for (let sym = 0; sym <= EOS; sym++) {
    const len = LENGTHS[sym];
    const code = CODES[sym];
    let node = 0;
    for (let i = len - 1; i >= 0; i--) {
      const bit = (code >>> i) & 1;
      const slot = node * 2 + bit;
      if (i === 0) {
        children[slot] = -(sym + 1);
      } else {
        let next = children[slot];
        if (next === 0) {
          next = nodes++;
          children[slot] = next;
        }
        node = next;
      }
    }
  }
  // Which states are acceptable ends: reached from the root by at most 7 one bits.
  const accept = new Uint8Array(256);
  let n = 0;
  accept[0] = 1;
  for (let depth = 1; depth <= 7; depth++) {
    n = children[n * 2 + 1];
    accept[n] = 1;
  }
  const table = new Int32Array(256 * 256);
  for (let state = 0; state < 256; state++) {
    for (let byte = 0; byte < 256; byte++) {
      let node = state;
      let count = 0;
      let syms = 0;
      let fail = 0;
      for (let i = 7; i >= 0; i--) {
        const child = children[node * 2 + ((byte >>> i) & 1)];
        if (child < 0) {
          const sym = -child - 1;
          if (sym === EOS) {
            fail = FAIL;
            break;
          }
          syms |= sym << (8 + 8 * count);
          count++;
          node = 0;
        } else {
          node = child;
        }
      }
      table[state * 256 + byte] = fail !== 0
        ? FAIL
        : node | syms | (count << 24) | (accept[node] ? ACCEPT : 0);
    }
  }
  return table;
}

let scratch = new Uint8Array(256);

/**
 * Decode `bytes[start, end)` into a reusable scratch buffer; returns the number
 * of decoded bytes, available in {@link huffmanScratch} until the next call.
 */
export function huffmanDecodeToScratch(bytes: Uint8Array, start: number, end: number): number {
  const t = transitions ??= buildTransitions();
  // Each input byte yields at most 2 symbols.
  const max = (end - start) * 2;
  if (scratch.length < max) scratch = new Uint8Array(Math.max(max, scratch.length * 2));
  const out = scratch;
  let state = 0;
  let entry = ACCEPT;
  let n = 0;
  for (let i = start; i < end; i++) {
    entry = t[(state << 8) | bytes[i]];
    if ((entry & FAIL) !== 0) throw new HuffmanDecodeError("EOS symbol in Huffman string");
    const count = (entry >>> 24) & 3;
    if (count !== 0) {
      out[n++] = (entry >>> 8) & 0xff;
      if (count === 2) out[n++] = (entry >>> 16) & 0xff;
    }
    state = entry & 0xff;
  }
  if ((entry & ACCEPT) === 0) {
    throw new HuffmanDecodeError(
      "invalid Huffman padding (longer than 7 bits or not all ones)",
    );
  }
  return n;
}

/** The scratch buffer filled by {@link huffmanDecodeToScratch}. */
export function huffmanScratch(): Uint8Array {
  return scratch;
}

/**
 * Decode a Huffman-encoded string (RFC 7541 §5.2).
 *
 * @throws {HuffmanDecodeError} on padding longer than 7 bits, padding that is
 * not all ones, or an EOS symbol in the data.
 *
 * @example
 * ```ts
 * huffmanDecode(new Uint8Array([0xa8, 0xeb, 0x10, 0x64, 0x9c, 0xbf])); // "no-cache"
 * ```
 */
export function huffmanDecode(bytes: Uint8Array): Uint8Array {
  const n = huffmanDecodeToScratch(bytes, 0, bytes.length);
  return scratch.slice(0, n);
}

/** Number of bytes {@link huffmanEncode} produces for `bytes`. */
export function huffmanEncodedLength(bytes: Uint8Array): number {
  let bits = 0;
  for (let i = 0; i < bytes.length; i++) bits += LENGTHS[bytes[i]];
  return (bits + 7) >>> 3;
}

/**
 * Number of bytes the Huffman encoding of a byte string (one char per byte,
 * char codes 0..255) takes; char codes above 255 count as their low byte.
 */
export function huffmanEncodedLengthOfString(s: string): number {
  let bits = 0;
  for (let i = 0; i < s.length; i++) bits += LENGTHS[s.charCodeAt(i) & 0xff];
  return (bits + 7) >>> 3;
}

/**
 * Huffman-encode the byte string `s` (one char per byte) into `out` at
 * `offset`; returns the offset after the last written byte. `out` must have
 * room for {@link huffmanEncodedLengthOfString} bytes.
 */
export function huffmanEncodeStringInto(s: string, out: Uint8Array, offset: number): number {
  let acc = 0; // pending bits, right-aligned
  let n = 0; // number of pending bits (< 8 between symbols)
  let o = offset;
  for (let i = 0; i < s.length; i++) {
    const sym = s.charCodeAt(i) & 0xff;
    let len = LENGTHS[sym];
    const code = CODES[sym];
    if (len > 24) {
      // Push the high part first so that acc never holds more than 31 bits.
      const hi = len - 16;
      acc = (acc << hi) | (code >>> 16);
      n += hi;
      while (n >= 8) {
        n -= 8;
        out[o++] = (acc >>> n) & 0xff;
      }
      acc &= (1 << n) - 1;
      len = 16;
      acc = (acc << 16) | (code & 0xffff);
    } else {
      acc = (acc << len) | code;
    }
    n += len;
    while (n >= 8) {
      n -= 8;
      out[o++] = (acc >>> n) & 0xff;
    }
    acc &= (1 << n) - 1;
  }
  if (n > 0) {
    // Pad with the most significant bits of EOS (all ones).
    out[o++] = ((acc << (8 - n)) | (0xff >>> n)) & 0xff;
  }
  return o;
}

/**
 * Huffman-encode `bytes` (RFC 7541 §5.2), padding the last byte with ones.
 *
 * @example
 * ```ts
 * huffmanEncode(new TextEncoder().encode("no-cache")); // a8 eb 10 64 9c bf
 * ```
 */
export function huffmanEncode(bytes: Uint8Array): Uint8Array {
  let s = "";
  for (let i = 0; i < bytes.length; i++) s += String.fromCharCode(bytes[i]);
  const out = new Uint8Array(huffmanEncodedLength(bytes));
  huffmanEncodeStringInto(s, out, 0);
  return out;
}
