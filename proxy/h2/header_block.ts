/**
 * Reassembly of a header block sent as HEADERS and CONTINUATION frames
 * (RFC 9113 §4.3, §6.10), bounded in octets and in frames: a peer that
 * grows a block without end is refused before it costs memory.
 *
 * @example
 * ```ts
 * import { HeaderBlock } from "./header_block.ts";
 * const block = new HeaderBlock({ maxOctets: 1024, maxContinuations: 4 });
 * block.begin(1, true);
 * block.append(new Uint8Array([0x88]), 0, 1); // null: within bounds
 * block.finish(); // Uint8Array [0x88]
 * ```
 *
 * @module
 */

/** Bounds of one header block. */
export interface HeaderBlockLimits {
  /** Largest block (HEADERS and CONTINUATION payloads together), in octets. */
  maxOctets: number;
  /** Most CONTINUATION frames in one block. */
  maxContinuations: number;
}

/** The header block being assembled, if any. */
export class HeaderBlock {
  /** Stream whose block is being assembled, or 0 when none is. */
  stream = 0;
  /** Whether its HEADERS frame carried END_STREAM. */
  endStream = false;

  readonly #limits: HeaderBlockLimits;
  #buf: Uint8Array = new Uint8Array(1024);
  #len = 0;
  #continuations = 0;

  /** A reassembler within `limits`. */
  constructor(limits: HeaderBlockLimits) {
    this.#limits = limits;
  }

  /** Starts the block of a HEADERS frame on `stream`. */
  begin(stream: number, endStream: boolean): void {
    this.stream = stream;
    this.endStream = endStream;
    this.#len = 0;
    this.#continuations = 0;
  }

  /**
   * Counts one CONTINUATION frame; why the block has too many
   * (ENHANCE_YOUR_CALM), or null.
   */
  continuation(): string | null {
    if (++this.#continuations <= this.#limits.maxContinuations) return null;
    return `more than ${this.#limits.maxContinuations} CONTINUATION frames`;
  }

  /** Adds a fragment, `b[start, end)`; why the block is too large (ENHANCE_YOUR_CALM), or null. */
  append(b: Uint8Array, start: number, end: number): string | null {
    const n = end - start;
    if (this.#len + n > this.#limits.maxOctets) {
      return `header block above ${this.#limits.maxOctets} bytes`;
    }
    if (this.#buf.length < this.#len + n) {
      const grown = new Uint8Array(Math.max(this.#len + n, this.#buf.length * 2));
      grown.set(this.#buf.subarray(0, this.#len));
      this.#buf = grown;
    }
    this.#buf.set(b.subarray(start, end), this.#len);
    this.#len += n;
    return null;
  }

  /** The complete block (a view valid until the next `begin`); no block is open after. */
  finish(): Uint8Array {
    this.stream = 0;
    return this.#buf.subarray(0, this.#len);
  }
}
