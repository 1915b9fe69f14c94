/**
 * The QPACK dynamic table (RFC 9204 §3.2): a FIFO of field lines with a byte
 * budget, addressed by absolute index (§3.2.4).
 *
 * Names and values are byte strings: one JavaScript char per byte (char codes
 * 0..255), so `name.length + value.length + 32` is the entry size of §3.2.1.
 *
 * @module
 */

import { H3Code, H3Error } from "../errors.ts";

/** Per-entry overhead in bytes (RFC 9204 §3.2.1). */
export const ENTRY_OVERHEAD = 32;

/**
 * A dynamic table. Errors are connection-scoped {@link H3Error}s carrying the
 * code given to the constructor (QPACK_ENCODER_STREAM_ERROR by default, as the
 * table is changed only by encoder-stream instructions).
 *
 * @example
 * ```ts
 * const t = new DynamicTable(4096);
 * t.setCapacity(220);
 * t.insert(":authority", "www.example.com"); // absolute index 0
 * t.nameAt(0); // ":authority"
 * ```
 */
export class DynamicTable {
  /** Upper bound for {@link capacity} (SETTINGS_QPACK_MAX_TABLE_CAPACITY). */
  readonly maxCapacity: number;
  /** Number of entries the peer is known to have received (§2.1.4), encoder side. */
  knownReceivedCount = 0;

  #errorCode: number;
  #capacity = 0;
  #size = 0;
  #insertCount = 0;
  #dropped = 0; // absolute index of the oldest entry still present
  // Ring buffer of entries: absolute index i lives at (i & mask).
  #names: string[] = new Array(16);
  #values: string[] = new Array(16);
  #mask = 15;

  /**
   * Creates an empty table of capacity 0.
   *
   * @param maxCapacity the largest capacity the peer may set.
   * @param errorCode the connection error raised when the peer breaks a rule.
   */
  constructor(maxCapacity: number, errorCode: number = H3Code.QPACK_ENCODER_STREAM_ERROR) {
    if (!Number.isSafeInteger(maxCapacity) || maxCapacity < 0) {
      throw new RangeError(`invalid maximum table capacity ${maxCapacity}`);
    }
    this.maxCapacity = maxCapacity;
    this.#errorCode = errorCode;
  }

  /** Current capacity in bytes (§3.2.3). */
  get capacity(): number {
    return this.#capacity;
  }
  /** Sum of entry sizes in bytes (§3.2.1). */
  get size(): number {
    return this.#size;
  }
  /** Total number of insertions so far (§3.2.4). */
  get insertCount(): number {
    return this.#insertCount;
  }
  /** Absolute index of the oldest entry present (= number of evicted entries). */
  get droppedCount(): number {
    return this.#dropped;
  }
  /** Number of entries present. */
  get length(): number {
    return this.#insertCount - this.#dropped;
  }

  /** Whether absolute index `abs` refers to an entry that is present. */
  has(abs: number): boolean {
    return abs >= this.#dropped && abs < this.#insertCount;
  }
  /** Name of the entry at absolute index `abs`; the caller checks {@link has}. */
  nameAt(abs: number): string {
    return this.#names[abs & this.#mask];
  }
  /** Value of the entry at absolute index `abs`; the caller checks {@link has}. */
  valueAt(abs: number): string {
    return this.#values[abs & this.#mask];
  }
  /** The entry at absolute index `abs`, or undefined when evicted or not yet inserted. */
  get(abs: number): [string, string] | undefined {
    if (!this.has(abs)) return undefined;
    return [this.nameAt(abs), this.valueAt(abs)];
  }

  #fail(message: string): never {
    throw new H3Error(this.#errorCode, "connection", message);
  }

  /** Set Dynamic Table Capacity (§4.3.1): evicts as needed; above the maximum is an error. */
  setCapacity(capacity: number): void {
    if (capacity > this.maxCapacity) {
      this.#fail(`dynamic table capacity ${capacity} exceeds maximum ${this.maxCapacity}`);
    }
    this.#evictTo(capacity);
    this.#capacity = capacity;
  }

  /**
   * Insert an entry (§3.2.2), evicting from the oldest. An entry larger than
   * the capacity is an error. Returns its absolute index.
   */
  insert(name: string, value: string): number {
    const size = name.length + value.length + ENTRY_OVERHEAD;
    if (size > this.#capacity) {
      this.#fail(`entry of ${size} bytes exceeds dynamic table capacity ${this.#capacity}`);
    }
    this.#evictTo(this.#capacity - size);
    if (this.length > this.#mask) this.#grow();
    const abs = this.#insertCount++;
    this.#names[abs & this.#mask] = name;
    this.#values[abs & this.#mask] = value;
    this.#size += size;
    return abs;
  }

  /** Record a Section Acknowledgment of a section with this Required Insert Count (§4.4.1). */
  acknowledgeSection(requiredInsertCount: number): void {
    if (requiredInsertCount > this.knownReceivedCount) {
      this.knownReceivedCount = requiredInsertCount;
    }
  }

  /** Apply an Insert Count Increment (§4.4.3); zero or beyond the insert count is an error. */
  incrementKnownReceived(increment: number): void {
    if (increment === 0 || this.knownReceivedCount + increment > this.#insertCount) {
      throw new H3Error(
        H3Code.QPACK_DECODER_STREAM_ERROR,
        "connection",
        `invalid Insert Count Increment ${increment}`,
      );
    }
    this.knownReceivedCount += increment;
  }

  #evictTo(target: number): void {
    while (this.#size > target) {
      const i = this.#dropped & this.#mask;
      this.#size -= this.#names[i].length + this.#values[i].length + ENTRY_OVERHEAD;
      this.#names[i] = "";
      this.#values[i] = "";
      this.#dropped++;
    }
  }

  #grow(): void {
    const oldMask = this.#mask;
    const cap = (oldMask + 1) * 2;
    const names: string[] = new Array(cap);
    const values: string[] = new Array(cap);
    const mask = cap - 1;
    for (let abs = this.#dropped; abs < this.#insertCount; abs++) {
      names[abs & mask] = this.#names[abs & oldMask];
      values[abs & mask] = this.#values[abs & oldMask];
    }
    this.#names = names;
    this.#values = values;
    this.#mask = mask;
  }
}
