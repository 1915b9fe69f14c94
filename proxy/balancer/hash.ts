/**
 * Small, dependency-free hashing for the consistent-hash ring:
 * FNV-1a 64 over the UTF-8 bytes of a string, folded to 32 bits through the
 * MurmurHash3 finaliser (FNV alone mixes its last bytes poorly).
 *
 * @module
 */

/** MurmurHash3's 32-bit finaliser: a bijection with full avalanche. */
export function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

const FNV_OFFSET_HI = 0xcbf29ce4;
const FNV_OFFSET_LO = 0x84222325;

/**
 * FNV-1a 64 of the UTF-8 encoding of `s` (lone surrogates encode as U+FFFD,
 * like `TextEncoder`). Returns `[high 32 bits, low 32 bits]`, both unsigned.
 *
 * @example
 * ```ts
 * fnv1a64("a"); // [0xaf63dc4c, 0x8601ec8c]
 * ```
 */
export function fnv1a64(s: string): [number, number] {
  let hi = FNV_OFFSET_HI;
  let lo = FNV_OFFSET_LO;
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdfff) {
      const next = i + 1 < s.length ? s.charCodeAt(i + 1) : 0;
      if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        c = 0x10000 + ((c - 0xd800) << 10) + (next - 0xdc00);
        i++;
      } else {
        c = 0xfffd;
      }
    }
    if (c < 0x80) {
      BYTES[0] = c;
      n = 1;
    } else if (c < 0x800) {
      BYTES[0] = 0xc0 | (c >> 6);
      BYTES[1] = 0x80 | (c & 0x3f);
      n = 2;
    } else if (c < 0x10000) {
      BYTES[0] = 0xe0 | (c >> 12);
      BYTES[1] = 0x80 | ((c >> 6) & 0x3f);
      BYTES[2] = 0x80 | (c & 0x3f);
      n = 3;
    } else {
      BYTES[0] = 0xf0 | (c >> 18);
      BYTES[1] = 0x80 | ((c >> 12) & 0x3f);
      BYTES[2] = 0x80 | ((c >> 6) & 0x3f);
      BYTES[3] = 0x80 | (c & 0x3f);
      n = 4;
    }
    for (let k = 0; k < n; k++) {
      const x = (lo ^ BYTES[k]) >>> 0;
      // (hi:x) * 0x100000001b3 mod 2^64 = (hi:x) * 0x1b3 + (x << 40)
      const xMul = x * 0x1b3; // < 2^41: exact in a double
      lo = xMul >>> 0;
      hi = (Math.imul(hi, 0x1b3) + Math.floor(xMul / 0x100000000) + (x << 8)) >>> 0;
    }
  }
  return [hi, lo];
}

const BYTES = new Uint8Array(4);

/**
 * 32-bit position of a string on the hash ring: FNV-1a 64 folded through
 * {@link fmix32}.
 */
export function hash32(s: string): number {
  const [hi, lo] = fnv1a64(s);
  return fmix32((lo ^ fmix32(hi)) >>> 0);
}

/**
 * Position of the `index`-th virtual point of a backend whose id hashes to
 * `seed` (from {@link hash32}). Depends only on the backend's own id and the
 * index, so adding or removing other backends never moves these points.
 */
export function pointHash(seed: number, index: number): number {
  return fmix32((fmix32((seed + Math.imul(index + 1, 0x9e3779b9)) >>> 0) ^ seed) >>> 0);
}
