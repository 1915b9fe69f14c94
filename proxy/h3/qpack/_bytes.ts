/**
 * Internal helpers: byte strings (one char per byte) and a growable writer
 * for QPACK integers and string literals.
 *
 * @module
 */

import { writePrefixInt, prefixIntLength } from "./prefix_int.ts";
import { huffmanEncodedLengthOfString, huffmanEncodeStringInto } from "./huffman.ts";

const asciiDecoder = new TextDecoder("utf-8", { ignoreBOM: true });

/**
 * Convert `bytes[start, end)` to a byte string (char code = byte value).
 * Pure-ASCII runs use a cached TextDecoder; others map byte by byte.
 */
export function latin1(bytes: Uint8Array, start: number, end: number): string {
  const len = end - start;
  if (len === 0) return "";
  if (len <= 24) {
    let s = "";
    for (let i = start; i < end; i++) s += String.fromCharCode(bytes[i]);
    return s;
  }
  let ascii = true;
  for (let i = start; i < end; i++) {
    if (bytes[i] > 0x7f) {
      ascii = false;
      break;
    }
  }
  if (ascii) return asciiDecoder.decode(bytes.subarray(start, end));
  let s = "";
  for (let i = start; i < end; i += 4096) {
    s += String.fromCharCode.apply(
      null,
      bytes.subarray(i, Math.min(end, i + 4096)) as unknown as number[],
    );
  }
  return s;
}

/** Byte string to bytes; a char above 0xff is a TypeError (like Fetch's ByteString). */
export function latin1Bytes(s: string): Uint8Array {
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c > 0xff) throw new TypeError(`character U+${c.toString(16)} is not a byte`);
    out[i] = c;
  }
  return out;
}

/** How to choose Huffman coding for a string literal: always, never, or when shorter. */
export type HuffmanChoice = boolean | "auto";

/** A growable byte buffer for building QPACK instructions. */
export class ByteWriter {
  buf: Uint8Array;
  pos = 0;

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
    for (let i = 0; i < s.length; i++) {
      if (s.charCodeAt(i) > 0xff) {
        throw new TypeError(`character U+${s.charCodeAt(i).toString(16)} is not a byte`);
      }
    }
    let useHuffman = huffman === true;
    let hlen = 0;
    if (huffman !== false) {
      hlen = huffmanEncodedLengthOfString(s);
      if (huffman === "auto") useHuffman = hlen < s.length;
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
