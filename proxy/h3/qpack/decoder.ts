/**
 * The QPACK decoder (RFC 9204 §2.2, §4.3, §4.5): applies the peer's encoder
 * stream to a dynamic table, decodes encoded field sections (blocking those
 * that reference entries not yet received), and produces the bytes of our
 * decoder stream.
 *
 * Field names and values are byte strings: one JavaScript char per byte
 * (char codes 0..255), exactly what a Fetch `Headers` ByteString carries, so
 * any byte sequence passes through unchanged. Entry sizes therefore count
 * bytes (RFC 9204 §3.2.1).
 *
 * Errors are {@link H3Error}s:
 * - a bad field section, a reference to an evicted entry or beyond the
 *   Required Insert Count, or too many blocked streams: connection error
 *   QPACK_DECOMPRESSION_FAILED (§2.2.3, §2.1.2);
 * - a bad encoder-stream instruction (capacity above the maximum, an entry
 *   larger than the capacity, a bad reference, bad Huffman): connection error
 *   QPACK_ENCODER_STREAM_ERROR (§4.3);
 * - a decoded section larger than `maxFieldSectionSize` (RFC 9114 §4.2.2):
 *   {@link FieldSectionTooLargeError}, a **stream** error with code
 *   H3_EXCESSIVE_LOAD, so a server can answer 431.
 *
 * @module
 */

import { H3Code, H3Error } from "../errors.ts";
import { concatBytes } from "../frames.ts";
import { huffmanDecodeToScratch, huffmanScratch } from "../../hpack_common/huffman.ts";
import { prefixIntEnd, readPrefixInt } from "./prefix_int.ts";
import { STATIC_NAMES, STATIC_VALUES } from "./static_table.ts";
import { DynamicTable, ENTRY_OVERHEAD } from "./dynamic_table.ts";
import { ByteWriter, latin1 } from "../../hpack_common/bytes.ts";

/** Returned by {@link QpackDecoder.decodeSection} when the section must wait for inserts. */
export const BLOCKED: unique symbol = Symbol("qpack blocked");
/** Type of {@link BLOCKED}. */
export type Blocked = typeof BLOCKED;

/** A field line: name and value as byte strings. */
export type FieldLine = [name: string, value: string];

/** Options of {@link QpackDecoder}. */
export interface QpackDecoderOptions {
  /** Our SETTINGS_QPACK_MAX_TABLE_CAPACITY (RFC 9204 §5). */
  maxTableCapacity: number;
  /** Our SETTINGS_QPACK_BLOCKED_STREAMS (RFC 9204 §5). */
  maxBlockedStreams: number;
  /** Our SETTINGS_MAX_FIELD_SECTION_SIZE (RFC 9114 §4.2.2), in bytes; unlimited if absent. */
  maxFieldSectionSize?: number;
  /** Told of each field section decoded that referenced the dynamic table (metrics). */
  onDynamicSection?: () => void;
}

/** A previously blocked section, decoded after its entries arrived. */
export interface UnblockedSection {
  /** The request stream the section belongs to. */
  streamId: number;
  /** The decoded field lines (empty when `error` is set). */
  fields: FieldLine[];
  /** A stream-scoped error for this section (e.g. {@link FieldSectionTooLargeError}). */
  error?: H3Error;
}

/**
 * A decoded field section exceeded `maxFieldSectionSize` (RFC 9114 §4.2.2):
 * a stream error with H3_EXCESSIVE_LOAD; a server answers 431.
 */
export class FieldSectionTooLargeError extends H3Error {
  /** The configured limit in bytes. */
  readonly limit: number;

  /** Creates the stream error; `limit` (bytes) is named in the message. */
  constructor(limit: number) {
    super(H3Code.EXCESSIVE_LOAD, "stream", `field section exceeds ${limit} bytes`);
    this.name = "FieldSectionTooLargeError";
    this.limit = limit;
  }
}

const DECOMPRESSION = H3Code.QPACK_DECOMPRESSION_FAILED;
const ENCODER_STREAM = H3Code.QPACK_ENCODER_STREAM_ERROR;
const STATIC_COUNT = STATIC_NAMES.length;

function fail(code: number, message: string): never {
  throw new H3Error(code, "connection", message);
}

/**
 * Field names whose values must not go through the shared string cache (their
 * presence in it would be observable through timing), besides field lines
 * with the N bit set.
 */
function isSecret(name: string): boolean {
  switch (name.length) {
    case 6:
      return name === "cookie";
    case 10:
      return name === "set-cookie";
    case 13:
      return name === "authorization";
    case 19:
      return name === "proxy-authorization";
    default:
      return false;
  }
}

/** Offset after the last string read by {@link readString}. */
let stringEnd = 0;

/**
 * Read a string literal whose H bit is `1 << prefixBits` of `bytes[pos]`.
 * Returns null when the bytes end early. A decoded length above `limit` is an
 * error with `code`.
 */
function readString(
  bytes: Uint8Array,
  pos: number,
  end: number,
  prefixBits: number,
  code: number,
  limit: number,
  cacheable: boolean,
): string | null {
  if (pos >= end) return null;
  const huffman = (bytes[pos] & (1 << prefixBits)) !== 0;
  const len = readPrefixInt(bytes, pos, end, prefixBits, code);
  if (len < 0) return null;
  const start = prefixIntEnd;
  // Reject early, before buffering: a Huffman code is at most 30 bits a byte.
  if ((huffman ? Math.floor(len * 8 / 30) : len) > limit) {
    fail(code, `string literal of ${len} bytes exceeds limit ${limit}`);
  }
  if (end - start < len) return null;
  stringEnd = start + len;
  if (!huffman) return latin1(bytes, start, start + len, cacheable);
  let n: number;
  try {
    n = huffmanDecodeToScratch(bytes, start, start + len);
  } catch (e) {
    fail(code, (e as Error).message);
  }
  if (n > limit) fail(code, `string literal of ${n} bytes exceeds limit ${limit}`);
  return latin1(huffmanScratch(), 0, n, cacheable);
}

/**
 * The value of a literal field line, a string literal with a 7-bit prefix at
 * `pos`; it goes through the string cache unless the field line has its N
 * bit set (`neverIndexed`) or the name is secret. The bytes ending early are
 * a decompression failure.
 */
function readFieldValue(
  bytes: Uint8Array,
  pos: number,
  end: number,
  name: string,
  neverIndexed: boolean,
): string {
  const value = readString(
    bytes,
    pos,
    end,
    7,
    DECOMPRESSION,
    Infinity,
    !neverIndexed && !isSecret(name),
  );
  if (value === null) fail(DECOMPRESSION, "truncated field line");
  return value;
}

/**
 * Decode the Required Insert Count of a section prefix (RFC 9204 §4.5.1.1).
 *
 * @throws {H3Error} QPACK_DECOMPRESSION_FAILED for an impossible encoding.
 */
export function decodeRequiredInsertCount(
  encoded: number,
  maxEntries: number,
  totalInserts: number,
): number {
  if (encoded === 0) return 0;
  const fullRange = 2 * maxEntries;
  if (encoded > fullRange) fail(DECOMPRESSION, `invalid encoded Required Insert Count ${encoded}`);
  const maxValue = totalInserts + maxEntries;
  const maxWrapped = Math.floor(maxValue / fullRange) * fullRange;
  let ric = maxWrapped + encoded - 1;
  if (ric > maxValue) {
    if (ric <= fullRange) fail(DECOMPRESSION, `invalid encoded Required Insert Count ${encoded}`);
    ric -= fullRange;
  }
  if (ric === 0) fail(DECOMPRESSION, "encoded Required Insert Count decodes to 0");
  return ric;
}

interface PendingSection {
  block: Uint8Array;
  ric: number;
  base: number;
  pos: number;
}

/**
 * Sans-IO QPACK decoder for one HTTP/3 connection.
 *
 * @example
 * ```ts
 * declare const bytesFromPeerEncoderStream: Uint8Array;
 * declare const headersFramePayload: Uint8Array;
 *
 * const dec = new QpackDecoder({ maxTableCapacity: 4096, maxBlockedStreams: 16 });
 * const ready = dec.pushEncoderStream(bytesFromPeerEncoderStream); // sections now unblocked
 * const fields = dec.decodeSection(0, headersFramePayload);
 * if (fields !== BLOCKED) {
 *   for (const [name, value] of fields) console.log(name, value);
 * }
 * const out = dec.takeDecoderStreamBytes(); // write on our decoder stream if non-null
 * ```
 */
export class QpackDecoder {
  #table: DynamicTable;
  #maxEntries: number;
  #maxBlocked: number;
  #maxSectionSize: number;
  #pending: Uint8Array | null = null;
  #blocked = new Map<number, PendingSection[]>();
  #out = new ByteWriter(64);
  /** Insert count the peer's encoder knows we have (§2.1.4, mirrored). */
  #acked = 0;
  readonly #onDynamicSection: (() => void) | undefined;

  /** Creates a decoder with an empty dynamic table and our SETTINGS limits. */
  constructor(opts: QpackDecoderOptions) {
    this.#table = new DynamicTable(opts.maxTableCapacity, ENCODER_STREAM);
    this.#maxEntries = Math.floor(opts.maxTableCapacity / 32);
    this.#maxBlocked = opts.maxBlockedStreams;
    this.#maxSectionSize = opts.maxFieldSectionSize ?? Infinity;
    this.#onDynamicSection = opts.onDynamicSection;
  }

  /** The dynamic table (read it; do not modify it). */
  get table(): DynamicTable {
    return this.#table;
  }

  /** Number of streams with a blocked section. */
  get blockedStreams(): number {
    return this.#blocked.size;
  }

  /**
   * Feed bytes of the peer's QPACK encoder stream (any split). Applies every
   * complete instruction and returns the blocked sections that could now be
   * decoded, in the order their streams blocked.
   *
   * @throws {H3Error} QPACK_ENCODER_STREAM_ERROR for a bad instruction;
   * QPACK_DECOMPRESSION_FAILED if a resumed section is malformed.
   */
  pushEncoderStream(chunk: Uint8Array): UnblockedSection[] {
    const buf = this.#pending === null ? chunk : concatBytes(this.#pending, chunk);
    this.#pending = null;
    const before = this.#table.insertCount;
    const used = this.#applyEncoderInstructions(buf);
    if (used < buf.length) this.#pending = buf.slice(used);
    if (this.#table.insertCount === before || this.#blocked.size === 0) return [];
    return this.#resume();
  }

  #applyEncoderInstructions(buf: Uint8Array): number {
    const table = this.#table;
    const end = buf.length;
    let pos = 0;
    while (pos < end) {
      const b = buf[pos];
      if ((b & 0x80) !== 0) {
        // Insert with Name Reference (§4.3.2)
        const index = readPrefixInt(buf, pos, end, 6, ENCODER_STREAM);
        if (index < 0) break;
        const p = prefixIntEnd;
        let name: string;
        if ((b & 0x40) !== 0) {
          if (index >= STATIC_COUNT) fail(ENCODER_STREAM, `invalid static table index ${index}`);
          name = STATIC_NAMES[index];
        } else {
          const abs = table.insertCount - 1 - index;
          if (!table.has(abs)) fail(ENCODER_STREAM, `invalid dynamic name reference ${index}`);
          name = table.nameAt(abs);
        }
        const value = readString(
          buf,
          p,
          end,
          7,
          ENCODER_STREAM,
          table.capacity - name.length - ENTRY_OVERHEAD,
          false,
        );
        if (value === null) break;
        pos = stringEnd;
        table.insert(name, value);
      } else if ((b & 0x40) !== 0) {
        // Insert with Literal Name (§4.3.3)
        const room = table.capacity - ENTRY_OVERHEAD;
        const name = readString(buf, pos, end, 5, ENCODER_STREAM, room, true);
        if (name === null) break;
        const value = readString(buf, stringEnd, end, 7, ENCODER_STREAM, room - name.length, false);
        if (value === null) break;
        pos = stringEnd;
        table.insert(name, value);
      } else if ((b & 0x20) !== 0) {
        // Set Dynamic Table Capacity (§4.3.1)
        const capacity = readPrefixInt(buf, pos, end, 5, ENCODER_STREAM);
        if (capacity < 0) break;
        pos = prefixIntEnd;
        table.setCapacity(capacity);
      } else {
        // Duplicate (§4.3.4)
        const index = readPrefixInt(buf, pos, end, 5, ENCODER_STREAM);
        if (index < 0) break;
        pos = prefixIntEnd;
        const abs = table.insertCount - 1 - index;
        if (!table.has(abs)) fail(ENCODER_STREAM, `invalid Duplicate index ${index}`);
        table.insert(table.nameAt(abs), table.valueAt(abs));
      }
    }
    return pos;
  }

  #resume(): UnblockedSection[] {
    const results: UnblockedSection[] = [];
    const insertCount = this.#table.insertCount;
    for (const [streamId, queue] of this.#blocked) {
      while (queue.length > 0 && queue[0].ric <= insertCount) {
        const s = queue.shift()!;
        try {
          results.push({
            streamId,
            fields: this.#decodeLines(streamId, s.block, s.ric, s.base, s.pos),
          });
        } catch (e) {
          if (e instanceof H3Error && e.scope === "stream") {
            results.push({ streamId, fields: [], error: e });
          } else {
            throw e;
          }
        }
      }
      if (queue.length === 0) this.#blocked.delete(streamId);
    }
    return results;
  }

  /**
   * Decode one encoded field section (the payload of a HEADERS frame) of
   * `streamId`. Returns {@link BLOCKED} when it references entries not yet
   * received; it is then returned later by {@link pushEncoderStream}.
   *
   * @throws {H3Error} QPACK_DECOMPRESSION_FAILED (connection) for a bad
   * section or too many blocked streams; {@link FieldSectionTooLargeError}
   * (stream, H3_EXCESSIVE_LOAD) above `maxFieldSectionSize`.
   */
  decodeSection(streamId: number, block: Uint8Array): FieldLine[] | Blocked {
    const end = block.length;
    const encoded = readPrefixInt(block, 0, end, 8, DECOMPRESSION);
    if (encoded < 0) fail(DECOMPRESSION, "truncated field section prefix");
    const ric = decodeRequiredInsertCount(encoded, this.#maxEntries, this.#table.insertCount);
    let pos = prefixIntEnd;
    if (pos >= end) fail(DECOMPRESSION, "truncated field section prefix");
    const sign = block[pos] & 0x80;
    const delta = readPrefixInt(block, pos, end, 7, DECOMPRESSION);
    if (delta < 0) fail(DECOMPRESSION, "truncated field section prefix");
    pos = prefixIntEnd;
    let base: number;
    if (sign === 0) {
      base = ric + delta;
    } else {
      base = ric - delta - 1;
      if (base < 0) fail(DECOMPRESSION, "negative Base");
    }
    if (ric > this.#table.insertCount) {
      const queue = this.#blocked.get(streamId);
      if (queue !== undefined) {
        queue.push({ block: block.slice(), ric, base, pos });
      } else {
        if (this.#blocked.size >= this.#maxBlocked) {
          fail(DECOMPRESSION, `more than ${this.#maxBlocked} blocked streams`);
        }
        this.#blocked.set(streamId, [{ block: block.slice(), ric, base, pos }]);
      }
      return BLOCKED;
    }
    return this.#decodeLines(streamId, block, ric, base, pos);
  }

  #decodeLines(
    streamId: number,
    block: Uint8Array,
    ric: number,
    base: number,
    start: number,
  ): FieldLine[] {
    const table = this.#table;
    const end = block.length;
    const maxSize = this.#maxSectionSize;
    const fields: FieldLine[] = [];
    let size = 0;
    let pos = start;
    while (pos < end) {
      const b = block[pos];
      let name: string;
      let value: string | null;
      if ((b & 0x80) !== 0) {
        // Indexed Field Line (§4.5.2)
        const index = readPrefixInt(block, pos, end, 6, DECOMPRESSION);
        if (index < 0) fail(DECOMPRESSION, "truncated field line");
        pos = prefixIntEnd;
        if ((b & 0x40) !== 0) {
          if (index >= STATIC_COUNT) fail(DECOMPRESSION, `invalid static table index ${index}`);
          name = STATIC_NAMES[index];
          value = STATIC_VALUES[index];
        } else {
          const abs = base - 1 - index;
          if (abs < 0 || abs >= ric || !table.has(abs)) {
            fail(DECOMPRESSION, `invalid dynamic table reference ${index}`);
          }
          name = table.nameAt(abs);
          value = table.valueAt(abs);
        }
      } else if ((b & 0x40) !== 0) {
        // Literal Field Line with Name Reference (§4.5.4)
        const index = readPrefixInt(block, pos, end, 4, DECOMPRESSION);
        if (index < 0) fail(DECOMPRESSION, "truncated field line");
        if ((b & 0x10) !== 0) {
          if (index >= STATIC_COUNT) fail(DECOMPRESSION, `invalid static table index ${index}`);
          name = STATIC_NAMES[index];
        } else {
          const abs = base - 1 - index;
          if (abs < 0 || abs >= ric || !table.has(abs)) {
            fail(DECOMPRESSION, `invalid dynamic name reference ${index}`);
          }
          name = table.nameAt(abs);
        }
        value = readFieldValue(block, prefixIntEnd, end, name, (b & 0x20) !== 0);
        pos = stringEnd;
      } else if ((b & 0x20) !== 0) {
        // Literal Field Line with Literal Name (§4.5.6)
        const n = readString(block, pos, end, 3, DECOMPRESSION, Infinity, true);
        if (n === null) fail(DECOMPRESSION, "truncated field line");
        name = n;
        value = readFieldValue(block, stringEnd, end, name, (b & 0x10) !== 0);
        pos = stringEnd;
      } else if ((b & 0x10) !== 0) {
        // Indexed Field Line with Post-Base Index (§4.5.3)
        const index = readPrefixInt(block, pos, end, 4, DECOMPRESSION);
        if (index < 0) fail(DECOMPRESSION, "truncated field line");
        pos = prefixIntEnd;
        const abs = base + index;
        if (abs >= ric || !table.has(abs)) {
          fail(DECOMPRESSION, `invalid post-base reference ${index}`);
        }
        name = table.nameAt(abs);
        value = table.valueAt(abs);
      } else {
        // Literal Field Line with Post-Base Name Reference (§4.5.5)
        const index = readPrefixInt(block, pos, end, 3, DECOMPRESSION);
        if (index < 0) fail(DECOMPRESSION, "truncated field line");
        const abs = base + index;
        if (abs >= ric || !table.has(abs)) {
          fail(DECOMPRESSION, `invalid post-base name reference ${index}`);
        }
        name = table.nameAt(abs);
        value = readFieldValue(block, prefixIntEnd, end, name, (b & 0x08) !== 0);
        pos = stringEnd;
      }
      size += name.length + value.length + ENTRY_OVERHEAD;
      if (size > maxSize) {
        // The section's references are released: acknowledge it (§4.4.1).
        this.#acknowledge(streamId, ric);
        throw new FieldSectionTooLargeError(maxSize);
      }
      fields.push([name, value]);
    }
    this.#acknowledge(streamId, ric);
    return fields;
  }

  #acknowledge(streamId: number, ric: number): void {
    if (ric === 0) return;
    this.#onDynamicSection?.();
    this.#out.int(streamId, 7, 0x80);
    if (ric > this.#acked) this.#acked = ric;
  }

  /**
   * Abandon a stream (reset, or stopped reading): drops its blocked sections
   * and queues a Stream Cancellation (§4.4.2), omitted when our maximum table
   * capacity is 0 (as §4.4.2 allows).
   */
  cancelStream(streamId: number): void {
    this.#blocked.delete(streamId);
    if (this.#table.maxCapacity > 0) this.#out.int(streamId, 6, 0x40);
  }

  /**
   * The bytes to write on our QPACK decoder stream: queued Section
   * Acknowledgments and Stream Cancellations, then an Insert Count Increment
   * (§4.4.3) for inserts not yet acknowledged otherwise. Null when there is
   * nothing to send.
   */
  takeDecoderStreamBytes(): Uint8Array | null {
    const inserts = this.#table.insertCount;
    if (inserts > this.#acked) {
      this.#out.int(inserts - this.#acked, 6, 0x00);
      this.#acked = inserts;
    }
    if (this.#out.pos === 0) return null;
    return this.#out.take();
  }
}
