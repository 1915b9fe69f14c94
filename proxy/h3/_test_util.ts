// Test helpers for proxy/h3 tests (not part of the codec).
import { h3CodeName, H3Error, type H3ErrorScope, MalformedMessageError } from "./errors.ts";

/** Runs `fn` and asserts it throws an H3Error with `code` and `scope`. */
export function assertH3Error(fn: () => unknown, code: number, scope: H3ErrorScope): H3Error {
  try {
    fn();
  } catch (e) {
    if (!(e instanceof H3Error)) throw new Error(`expected H3Error, got ${e}`);
    if (e.code !== code) throw new Error(`expected ${h3CodeName(code)}, got: ${e.message}`);
    if (e.scope !== scope) {
      throw new Error(`expected a ${scope} error, got: ${e.scope} ${e.message}`);
    }
    return e;
  }
  throw new Error(`expected ${h3CodeName(code)} to be thrown`);
}

/** Asserts a MalformedMessageError naming `field`. */
export function assertMalformed(fn: () => unknown, field: string): MalformedMessageError {
  try {
    fn();
  } catch (e) {
    if (!(e instanceof MalformedMessageError)) {
      throw new Error(`expected MalformedMessageError, got ${e}`);
    }
    if (e.field !== field) throw new Error(`expected field ${field}, got ${e.field}: ${e.message}`);
    if (e.scope !== "stream") throw new Error(`expected a stream error: ${e.message}`);
    return e;
  }
  throw new Error(`expected a malformed message on ${field}`);
}

export { concatBytes as concat } from "./frames.ts";

/** Bytes from a hex string; spaces and newlines are ignored. */
export function hex(s: string): Uint8Array {
  const clean = s.replace(/\s+/g, "");
  const out = new Uint8Array(clean.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(clean.slice(i * 2, i * 2 + 2), 16);
  return out;
}

/** Splits `buf` at the given sorted cut points (subarrays). */
export function splitAt(buf: Uint8Array, cuts: number[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  let prev = 0;
  for (const c of cuts) {
    out.push(buf.subarray(prev, c));
    prev = c;
  }
  out.push(buf.subarray(prev));
  return out;
}

/** Deterministic PRNG (mulberry32). */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
