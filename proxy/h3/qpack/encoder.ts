/**
 * The QPACK encoder (RFC 9204 §2.1), in its simplest compliant form: it never
 * inserts into the dynamic table, so every field section has Required Insert
 * Count 0 and can never block the peer. Each field line is an indexed static
 * reference, a literal with a static name reference, or a literal with a
 * literal name; strings use Huffman coding when that is shorter.
 *
 * @module
 */

import { H3Code, H3Error } from "../errors.ts";
import { concatBytes } from "../frames.ts";
import { ByteWriter, type HuffmanChoice } from "../../hpack_common/bytes.ts";
import { prefixIntEnd, readPrefixInt } from "./prefix_int.ts";
import { staticLookup } from "./static_table.ts";

/** Options of {@link QpackEncoder}. */
export interface QpackEncoderOptions {
  /** String encoding: true, false, or "auto" (default: Huffman when strictly shorter). */
  huffman?: HuffmanChoice;
}

const DECODER_STREAM = H3Code.QPACK_DECODER_STREAM_ERROR;

/**
 * Sans-IO QPACK encoder for one HTTP/3 connection (static table only).
 *
 * @example
 * ```ts
 * declare const bytesFromPeerDecoderStream: Uint8Array;
 *
 * const enc = new QpackEncoder();
 * const block = enc.encodeSection([[":status", "200"], ["content-type", "text/plain"]]);
 * enc.pushDecoderStream(bytesFromPeerDecoderStream); // validates the peer's feedback
 * ```
 */
export class QpackEncoder {
  #w = new ByteWriter(512);
  #huffman: HuffmanChoice;
  #pending: Uint8Array | null = null;

  /** Creates an encoder (static table and literals only; Huffman per `opts.huffman`). */
  constructor(opts: QpackEncoderOptions = {}) {
    this.#huffman = opts.huffman ?? "auto";
  }

  /**
   * Encode a field section (RFC 9204 §4.5) with Required Insert Count 0.
   * Names and values are byte strings (char codes 0..255); names should
   * already be lowercase (RFC 9114 §4.2).
   *
   * @throws {TypeError} for a char code above 255.
   */
  encodeSection(fields: ReadonlyArray<readonly [string, string]>): Uint8Array {
    const w = this.#w;
    const huffman = this.#huffman;
    w.pos = 0;
    w.ensure(2);
    w.buf[0] = 0; // Required Insert Count 0
    w.buf[1] = 0; // Base 0 (sign 0, delta 0)
    w.pos = 2;
    for (let i = 0; i < fields.length; i++) {
      const [name, value] = fields[i];
      const r = staticLookup(name, value);
      if (r >= 0) {
        w.int(r, 6, 0xc0); // Indexed Field Line, static (§4.5.2)
      } else if (r <= -2) {
        w.int(-2 - r, 4, 0x50); // Literal with static Name Reference (§4.5.4)
        w.string(value, 7, 0, huffman);
      } else {
        w.string(name, 3, 0x20, huffman); // Literal with Literal Name (§4.5.6)
        w.string(value, 7, 0, huffman);
      }
    }
    return w.take();
  }

  /**
   * Feed bytes of the peer's QPACK decoder stream (any split). As we never
   * insert, a Section Acknowledgment (nothing is outstanding, §4.4.1) or an
   * Insert Count Increment (beyond our insert count, §4.4.3) is a connection
   * error QPACK_DECODER_STREAM_ERROR; Stream Cancellations are accepted.
   *
   * @throws {H3Error} QPACK_DECODER_STREAM_ERROR.
   */
  pushDecoderStream(chunk: Uint8Array): void {
    const buf = this.#pending === null ? chunk : concatBytes(this.#pending, chunk);
    this.#pending = null;
    const end = buf.length;
    let pos = 0;
    while (pos < end) {
      const b = buf[pos];
      if ((b & 0x80) !== 0) {
        const streamId = readPrefixInt(buf, pos, end, 7, DECODER_STREAM);
        if (streamId < 0) break;
        throw new H3Error(
          DECODER_STREAM,
          "connection",
          `Section Acknowledgment for stream ${streamId} with no outstanding dynamic references`,
        );
      } else if ((b & 0x40) !== 0) {
        const streamId = readPrefixInt(buf, pos, end, 6, DECODER_STREAM);
        if (streamId < 0) break;
        pos = prefixIntEnd; // Stream Cancellation: nothing to release.
      } else {
        const increment = readPrefixInt(buf, pos, end, 6, DECODER_STREAM);
        if (increment < 0) break;
        throw new H3Error(
          DECODER_STREAM,
          "connection",
          `Insert Count Increment ${increment} beyond insert count 0`,
        );
      }
    }
    if (pos < end) this.#pending = buf.slice(pos);
  }
}
