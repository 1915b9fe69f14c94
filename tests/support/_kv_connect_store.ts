/**
 * The key space of the test KV Connect server (`kv_connect_server.ts`):
 * sorted raw byte keys with versionstamped entries, expiry, and atomic writes
 * with checks, SET, DELETE and SUM / MIN / MAX on LE64 values, as denokv
 * applies them.
 *
 * @module
 */

import {
  type AtomicWrite,
  HttpError,
  M_DELETE,
  M_MAX,
  M_MIN,
  M_SET,
  M_SET_SUFFIX_VERSIONSTAMPED_KEY,
  M_SUM,
  type ReadRange,
  VE_LE64,
} from "./_kv_connect_wire.ts";

/** One stored key with its value, encoding, versionstamp and expiry. */
export interface Entry {
  key: Uint8Array;
  value: Uint8Array;
  encoding: number;
  versionstamp: Uint8Array;
  /** Milliseconds since the epoch; 0 = never. */
  expireAtMs: number;
}

/**
 * A key as a string of one char per byte: JavaScript compares such strings
 * by char code, which is exactly the byte-wise lexicographic order of keys.
 */
function byteString(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return s;
}

function le64(v: bigint): Uint8Array {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, BigInt.asUintN(64, v), true);
  return out;
}

function readLe64(bytes: Uint8Array, what: string): bigint {
  if (bytes.length !== 8) throw new HttpError(400, `${what} is not an 8-byte LE64 value`);
  return new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true);
}

/** Sorted in-memory key space with versionstamped entries. */
export class MemoryKv {
  readonly #entries = new Map<string, Entry>();
  /** All keys, sorted. */
  #keys: string[] = [];
  #version = 0n;

  constructor(readonly now: () => number) {}

  /** Number of live keys. */
  get size(): number {
    this.#expire();
    return this.#entries.size;
  }

  /** Index of the first key >= `k`. */
  #lowerBound(k: string): number {
    let lo = 0;
    let hi = this.#keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#keys[mid] < k) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  #put(k: string, e: Entry | null): void {
    const had = this.#entries.has(k);
    if (e) {
      this.#entries.set(k, e);
      if (!had) this.#keys.splice(this.#lowerBound(k), 0, k);
    } else if (had) {
      this.#entries.delete(k);
      this.#keys.splice(this.#lowerBound(k), 1);
    }
  }

  /** Drop every expired entry. */
  #expire(): void {
    const now = this.now();
    for (const [k, e] of this.#entries) {
      if (e.expireAtMs !== 0 && e.expireAtMs <= now) this.#put(k, null);
    }
  }

  read(ranges: ReadRange[]): Entry[][] {
    this.#expire();
    return ranges.map((r) => {
      const start = byteString(r.start);
      const end = byteString(r.end);
      const out: Entry[] = [];
      if (r.reverse) {
        for (let i = this.#lowerBound(end) - 1; i >= 0 && out.length < r.limit; i--) {
          if (this.#keys[i] < start) break;
          out.push(this.#entries.get(this.#keys[i])!);
        }
      } else {
        for (let i = this.#lowerBound(start); i < this.#keys.length && out.length < r.limit; i++) {
          if (this.#keys[i] >= end) break;
          out.push(this.#entries.get(this.#keys[i])!);
        }
      }
      return out;
    });
  }

  /**
   * Apply a validated write: all checks, then all mutations, or nothing.
   * Returns the indexes of the failed checks, or the new versionstamp.
   * Throws {@link HttpError} (writing nothing) when a mutation cannot apply.
   */
  write(w: AtomicWrite): { failed: number[] } | { versionstamp: Uint8Array } {
    this.#expire();
    const failed: number[] = [];
    w.checks.forEach((c, i) => {
      const cur = this.#entries.get(byteString(c.key));
      const ok = cur ? sameBytes(cur.versionstamp, c.versionstamp) : c.versionstamp.length === 0;
      if (!ok) failed.push(i);
    });
    if (failed.length > 0) return { failed };

    const versionstamp = new Uint8Array(10);
    new DataView(versionstamp.buffer).setBigUint64(0, this.#version + 1n, false);
    // Mutations go to a staging map first, so that a failing one writes nothing.
    const staged = new Map<string, Entry | null>();
    const current = (k: string) => staged.has(k) ? staged.get(k) : this.#entries.get(k);
    for (const m of w.mutations) {
      let key = m.key;
      if (m.mutationType === M_SET_SUFFIX_VERSIONSTAMPED_KEY) {
        // the versionstamp appended as a string key part: 0x02, 20 hex digits, 0x00
        const hex = [...versionstamp].map((b) => b.toString(16).padStart(2, "0")).join("");
        key = new Uint8Array([...m.key, 0x02, ...new TextEncoder().encode(hex), 0x00]);
      }
      const k = byteString(key);
      const expireAtMs = m.expireAtMs > 0n ? Number(m.expireAtMs) : 0;
      const entry = (value: Uint8Array, encoding: number, expiry: number): Entry => ({
        key,
        value,
        encoding,
        versionstamp,
        expireAtMs: expiry,
      });
      switch (m.mutationType) {
        case M_SET:
        case M_SET_SUFFIX_VERSIONSTAMPED_KEY:
          staged.set(k, entry(m.value!.data, m.value!.encoding, expireAtMs));
          break;
        case M_DELETE:
          staged.set(k, null);
          break;
        case M_SUM:
        case M_MIN:
        case M_MAX: {
          const op = m.mutationType === M_SUM ? "sum" : m.mutationType === M_MIN ? "min" : "max";
          if (m.value!.encoding !== VE_LE64) {
            throw new HttpError(400, `'${op}' of a non-LE64 operand is not supported`);
          }
          const operand = readLe64(m.value!.data, `the '${op}' operand`);
          const old = current(k);
          let result = operand;
          if (old) {
            if (old.encoding !== VE_LE64) {
              throw new HttpError(
                400,
                `Failed to perform '${op}' mutation on a non-U64 value in the database`,
              );
            }
            const a = readLe64(old.value, "the stored value");
            result = op === "sum"
              ? BigInt.asUintN(64, a + operand)
              : op === "min"
              ? (a < operand ? a : operand)
              : (a > operand ? a : operand);
          }
          // Like the real server, a sum/min/max result never expires.
          staged.set(k, entry(le64(result), VE_LE64, 0));
          break;
        }
      }
    }
    this.#version++;
    for (const [k, e] of staged) this.#put(k, e);
    return { versionstamp };
  }
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
