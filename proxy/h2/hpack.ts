/**
 * HPACK (RFC 7541): the header compression of HTTP/2, sans-IO.
 *
 * The decoder keeps the dynamic table with eviction (§4.4) and size updates
 * (§6.3), and returns every fault as a value (RFC 9113 §4.3: a decoding
 * error is a connection error COMPRESSION_ERROR). It never throws on input.
 *
 * The encoder never inserts into the peer's dynamic table: a request is a
 * static-table index when the whole field is in the static table, else a
 * literal without indexing (never-indexed for credentials, RFC 7541 §7.1.3),
 * with a static name index when there is one and Huffman coding when it is
 * shorter. So the peer's SETTINGS_HEADER_TABLE_SIZE never constrains it.
 *
 * @example
 * ```ts
 * const block = new HpackEncoder().encode([[":method", "GET"], ["accept", "*\/*"]]);
 * const fields = new HpackDecoder(4096).decode(block); // [[":method","GET"],["accept","*\/*"]]
 * ```
 *
 * @module
 */

import { huffmanDecodeToScratch, huffmanScratch } from "../hpack_common/huffman.ts";
import { PREFIX_INT_NEED_MORE, prefixIntEnd, readPrefixInt } from "../hpack_common/prefix_int.ts";
import { ByteWriter, latin1 } from "../hpack_common/bytes.ts";
import { HPACK_STATIC_TABLE, hpackStaticLookup } from "./static_table.ts";

/** One field line: lowercase name (as sent), value. */
export type FieldLine = [name: string, value: string];

/** Per-entry overhead of the table size (RFC 7541 §4.1). */
export const HPACK_ENTRY_OVERHEAD = 32;

/** A header block the decoder refused, and why. */
export interface HpackFault {
  /** `compression`: the block breaks RFC 7541 (connection error); `too-large`: over the list limit. */
  readonly kind: "compression" | "too-large";
  /** What was wrong. */
  readonly message: string;
}

/** Names whose values are never cached in the shared string cache (secrets). */
const SECRET = new Set(["authorization", "proxy-authorization", "cookie", "set-cookie"]);

/**
 * The HPACK dynamic table (RFC 7541 §2.3.2, §4): a ring of entries, newest at
 * index 62 of the combined index space.
 */
export class HpackDynamicTable {
  #names: string[] = [];
  #values: string[] = [];
  /** Ring: slot of the newest entry. */
  #head = 0;
  #count = 0;
  #size = 0;
  #max: number;

  /** A table of `maxSize` octets. */
  constructor(maxSize: number) {
    this.#max = maxSize;
  }

  /** Current size in octets (§4.1). */
  get size(): number {
    return this.#size;
  }

  /** Entries held. */
  get length(): number {
    return this.#count;
  }

  /** Largest size in octets. */
  get maxSize(): number {
    return this.#max;
  }

  /** Sets the largest size, evicting the oldest entries to fit (§4.3). */
  setMaxSize(n: number): void {
    this.#max = n;
    this.#evict(0);
  }

  /** Entry `i` (0 = newest), or undefined. */
  get(i: number): [string, string] | undefined {
    if (i < 0 || i >= this.#count) return undefined;
    const slot = (this.#head - i + this.#names.length) % this.#names.length;
    return [this.#names[slot], this.#values[slot]];
  }

  /** Adds an entry, evicting first (§4.4); an entry larger than the table empties it. */
  add(name: string, value: string): void {
    const size = name.length + value.length + HPACK_ENTRY_OVERHEAD;
    if (size > this.#max) {
      this.#count = 0;
      this.#size = 0;
      return;
    }
    this.#evict(size);
    const cap = this.#names.length;
    if (this.#count === cap) {
      // Grow the ring, keeping order (oldest first).
      const names: string[] = [];
      const values: string[] = [];
      for (let i = this.#count - 1; i >= 0; i--) {
        const e = this.get(i)!;
        names.push(e[0]);
        values.push(e[1]);
      }
      const grown = Math.max(8, cap * 2);
      names.length = grown;
      values.length = grown;
      this.#names = names;
      this.#values = values;
      this.#head = this.#count - 1;
    }
    this.#head = (this.#head + 1) % this.#names.length;
    this.#names[this.#head] = name;
    this.#values[this.#head] = value;
    this.#count++;
    this.#size += size;
  }

  #evict(room: number): void {
    while (this.#count > 0 && this.#size + room > this.#max) {
      const oldest = this.get(this.#count - 1)!;
      this.#size -= oldest[0].length + oldest[1].length + HPACK_ENTRY_OVERHEAD;
      this.#count--;
    }
  }
}

/** Reads a string literal (§5.2) at `pos`; sets {@link strEnd}. Returns a fault text on error. */
let strEnd = 0;
let strValue = "";
function readString(
  b: Uint8Array,
  pos: number,
  end: number,
  cacheable: boolean,
  maxLen: number,
): string | null {
  if (pos >= end) return "truncated string literal";
  const huff = (b[pos] & 0x80) !== 0;
  const len = readPrefixInt(b, pos, end, 7);
  if (len < 0) {
    return len === PREFIX_INT_NEED_MORE ? "truncated string length" : "string length too large";
  }
  const start = prefixIntEnd;
  if (len > end - start) return "string literal longer than the block";
  if (len > maxLen) return "too-large";
  if (huff) {
    let n: number;
    try {
      n = huffmanDecodeToScratch(b, start, start + len);
    } catch (e) {
      return (e as Error).message;
    }
    strValue = latin1(huffmanScratch(), 0, n, cacheable);
  } else {
    strValue = latin1(b, start, start + len, cacheable);
  }
  strEnd = start + len;
  return null;
}

/**
 * Decodes header blocks; one per connection (the dynamic table is the
 * connection's). A block must be whole (HEADERS + CONTINUATION joined).
 */
export class HpackDecoder {
  /** The connection's dynamic table (RFC 7541 §2.3.2). */
  readonly table: HpackDynamicTable;
  /** The largest table size we allow the peer to set (our SETTINGS_HEADER_TABLE_SIZE). */
  #limit: number;

  /** A decoder whose table may hold `maxTableSize` octets (our SETTINGS_HEADER_TABLE_SIZE). */
  constructor(maxTableSize = 4096) {
    this.#limit = maxTableSize;
    this.table = new HpackDynamicTable(maxTableSize);
  }

  /**
   * Decodes one whole header block. Returns the field lines, or a fault:
   * `compression` (RFC 9113 §4.3: connection error COMPRESSION_ERROR) or
   * `too-large` when the decoded list passes `maxListSize` (RFC 7541 §4.1
   * sizes): the block is still fully decoded so the table stays in step,
   * but its fields are dropped.
   */
  decode(
    block: Uint8Array,
    maxListSize = Infinity,
  ): FieldLine[] | HpackFault {
    const out: FieldLine[] = [];
    const end = block.length;
    let pos = 0;
    let listSize = 0;
    let tooLarge = false;
    let fieldsSeen = false;
    const table = this.table;
    const strMax = Number.isFinite(maxListSize) ? maxListSize : 0x7fffffff;
    const fault = (message: string): HpackFault => ({ kind: "compression", message });
    const lookup = (index: number): readonly [string, string] | undefined => {
      if (index <= 0) return undefined;
      if (index <= HPACK_STATIC_TABLE.length) return HPACK_STATIC_TABLE[index - 1];
      return table.get(index - HPACK_STATIC_TABLE.length - 1);
    };
    while (pos < end) {
      const b = block[pos];
      let name: string;
      let value: string;
      if (b & 0x80) {
        // §6.1 indexed field.
        const index = readPrefixInt(block, pos, end, 7);
        if (index < 0) return fault("bad index integer");
        pos = prefixIntEnd;
        const e = lookup(index);
        if (e === undefined) return fault(`index ${index} is not in the table`);
        name = e[0];
        value = e[1];
      } else if ((b & 0xe0) === 0x20) {
        // §6.3 dynamic table size update: only before the first field.
        if (fieldsSeen) return fault("table size update after a field");
        const size = readPrefixInt(block, pos, end, 5);
        if (size < 0) return fault("bad size integer");
        if (size > this.#limit) return fault(`table size ${size} above our ${this.#limit}`);
        pos = prefixIntEnd;
        table.setMaxSize(size);
        continue;
      } else {
        // §6.2 literals: 01 incremental indexing (6-bit), 0000 without, 0001 never indexed (4-bit).
        const indexing = (b & 0xc0) === 0x40;
        const bits = indexing ? 6 : 4;
        const index = readPrefixInt(block, pos, end, bits);
        if (index < 0) return fault("bad name index integer");
        pos = prefixIntEnd;
        if (index === 0) {
          const err = readString(block, pos, end, true, strMax);
          if (err === "too-large") return fault("name longer than the header list limit");
          if (err !== null) return fault(err);
          name = strValue;
          pos = strEnd;
        } else {
          const e = lookup(index);
          if (e === undefined) return fault(`name index ${index} is not in the table`);
          name = e[0];
        }
        const err = readString(block, pos, end, !SECRET.has(name) && b >= 0x40, strMax);
        if (err === "too-large") return fault("value longer than the header list limit");
        if (err !== null) return fault(err);
        value = strValue;
        pos = strEnd;
        if (indexing) table.add(name, value);
      }
      fieldsSeen = true;
      listSize += name.length + value.length + HPACK_ENTRY_OVERHEAD;
      if (listSize > maxListSize) tooLarge = true;
      if (!tooLarge) out.push([name, value]);
    }
    if (tooLarge) {
      return { kind: "too-large", message: `header list larger than ${maxListSize} octets` };
    }
    return out;
  }
}

/** Options of {@link HpackEncoder}. */
export interface HpackEncoderOptions {
  /** Huffman-code literals when shorter (default true). */
  huffman?: boolean;
}

/** Encodes header blocks without touching the peer's dynamic table. */
export class HpackEncoder {
  #w = new ByteWriter(512);
  #huffman: "auto" | false;

  /** An encoder; see {@link HpackEncoderOptions}. */
  constructor(opts: HpackEncoderOptions = {}) {
    this.#huffman = opts.huffman === false ? false : "auto";
  }

  /**
   * Encodes field lines into one header block (a fresh copy).
   *
   * @throws {TypeError} for a character above 0xff (a caller's bug, never input).
   */
  encode(fields: ReadonlyArray<readonly [string, string]>): Uint8Array {
    const w = this.#w;
    w.pos = 0;
    for (const [name, value] of fields) {
      // > 0: the whole field is static entry n; < 0: its name is entry -n.
      const hit = hpackStaticLookup(name, value);
      if (hit > 0) {
        w.int(hit, 7, 0x80);
        continue;
      }
      const never = SECRET.has(name);
      const flags = never ? 0x10 : 0x00;
      const nameIndex = -hit;
      if (nameIndex !== 0) {
        w.int(nameIndex, 4, flags);
      } else {
        w.int(0, 4, flags);
        w.string(name, 7, 0, this.#huffman);
      }
      w.string(value, 7, 0, this.#huffman);
    }
    return w.take();
  }
}
