/**
 * Byte strings (one char per byte) and a growable writer for the integers
 * and string literals of HPACK (RFC 7541 §5) and QPACK (RFC 9204 §4.1), shared
 * by both codecs.
 *
 * @module
 */

import { prefixIntLength, writePrefixInt } from "./prefix_int.ts";
import { HUFFMAN_TABLE, huffmanEncodeStringInto } from "./huffman.ts";

const HUFFMAN_LENGTHS = HUFFMAN_TABLE.lengths;

function notBytes(s: string): never {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c > 0xff) throw new TypeError(`character U+${c.toString(16)} is not a byte`);
  }
  throw new TypeError("not a byte string");
}

const asciiDecoder = new TextDecoder("utf-8", { ignoreBOM: true });

const CACHE_SLOTS = 2048;
const CACHE_MAX_LEN = 128;
const cache: string[] = new Array(CACHE_SLOTS).fill("");

/**
 * Convert `bytes[start, end)` to a byte string (char code = byte value).
 *
 * With `cacheable`, strings of up to 128 bytes are looked up in a small
 * process-wide cache first (hash, then a full comparison), so header names
 * and common values that repeat across requests cost no allocation. Pass
 * `cacheable = false` for possibly secret values (cookies, credentials): a
 * shared cache would make their presence observable through timing.
 */
export function latin1(bytes: Uint8Array, start: number, end: number, cacheable = false): string {
  const len = end - start;
  if (len === 0) return "";
  let slot = -1;
  if (cacheable && len <= CACHE_MAX_LEN) {
    let h = len;
    for (let i = start; i < end; i++) h = Math.imul(h ^ bytes[i], 0x01000193);
    slot = (h ^ (h >>> 15)) & (CACHE_SLOTS - 1);
    const hit = cache[slot];
    if (hit.length === len) {
      let i = 0;
      while (i < len && hit.charCodeAt(i) === bytes[start + i]) i++;
      if (i === len) return hit;
    }
  }
  let s: string;
  if (len <= 24) {
    s = "";
    for (let i = start; i < end; i++) s += String.fromCharCode(bytes[i]);
  } else {
    let ascii = true;
    for (let i = start; i < end; i++) {
      if (bytes[i] > 0x7f) {
        ascii = false;
        break;
      }
    }
    if (ascii) {
      s = asciiDecoder.decode(bytes.subarray(start, end));
    } else {
      s = "";
      for (let i = start; i < end; i += 4096) {
        s += String.fromCharCode.apply(
          null,
          bytes.subarray(i, Math.min(end, i + 4096)) as unknown as number[],
        );
      }
    }
  }
  if (slot >= 0) cache[slot] = s;
  return s;
}

/** How to choose Huffman coding for a string literal: always, never, or when shorter. */
export type HuffmanChoice = boolean | "auto";

/** A growable byte buffer for building QPACK instructions. */
export class ByteWriter {
  /** The buffer; bytes `[0, pos)` are written. Replaced by a larger one when it fills. */
  buf: Uint8Array;
  /** Bytes written so far. */
  pos = 0;

  /** Creates an empty writer with `initial` bytes of capacity. */
  constructor(initial = 256) {
    this.buf = new Uint8Array(initial);
  }

  /** Make room for `n` more bytes. */
  ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const next = new Uint8Array(Math.max(this.buf.length * 2, this.pos + n));
    next.set(this.buf.subarray(0, this.pos));
    this.buf = next;
  }

  /** Append a prefixed integer with `flags` in the high bits of the first byte. */
  int(value: number, prefixBits: number, flags: number): void {
    this.ensure(10);
    this.pos = writePrefixInt(this.buf, this.pos, value, prefixBits, flags);
  }

  /**
   * Append a string literal: H bit at `1 << prefixBits`, length with a
   * `prefixBits` prefix, `flags` in the bits above H.
   */
  string(s: string, prefixBits: number, flags: number, huffman: HuffmanChoice): void {
    let useHuffman = huffman === true;
    let hlen = 0;
    if (huffman !== false) {
      // One pass: Huffman length and the byte check.
      let bits = 0;
      let or = 0;
      for (let i = 0; i < s.length; i++) {
        const c = s.charCodeAt(i);
        or |= c;
        bits += HUFFMAN_LENGTHS[c & 0xff];
      }
      if (or > 0xff) notBytes(s);
      hlen = (bits + 7) >>> 3;
      if (huffman === "auto") useHuffman = hlen < s.length;
    } else {
      let or = 0;
      for (let i = 0; i < s.length; i++) or |= s.charCodeAt(i);
      if (or > 0xff) notBytes(s);
    }
    const len = useHuffman ? hlen : s.length;
    this.ensure(prefixIntLength(len, prefixBits) + len);
    const h = useHuffman ? 1 << prefixBits : 0;
    this.pos = writePrefixInt(this.buf, this.pos, len, prefixBits, flags | h);
    if (useHuffman) {
      this.pos = huffmanEncodeStringInto(s, this.buf, this.pos);
    } else {
      const buf = this.buf;
      let p = this.pos;
      for (let i = 0; i < s.length; i++) buf[p++] = s.charCodeAt(i);
      this.pos = p;
    }
  }

  /** A copy of the written bytes; the writer is reset for reuse. */
  take(): Uint8Array {
    const out = this.buf.slice(0, this.pos);
    this.pos = 0;
    return out;
  }
}
