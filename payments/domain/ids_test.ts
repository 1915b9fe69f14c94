import assert from "node:assert/strict";
import { createIdGenerator, randomCode } from "./ids.ts";

Deno.test("ids sort in creation order, also within one millisecond", () => {
  let t = 1_700_000_000_000;
  const next = createIdGenerator(() => t);
  const ids = [next("x_"), next("x_"), next("x_")];
  t += 1;
  ids.push(next("x_"));
  assert.deepEqual([...ids].sort(), ids);
  assert.equal(new Set(ids).size, 4);
});

/** The BigInt implementation the generator replaced, as a reference. */
function referenceGenerator(now: () => number, random: (b: Uint8Array) => void) {
  const ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
  const encode = (value: bigint, length: number) => {
    let out = "";
    for (let i = 0; i < length; i++) {
      out = ALPHABET[Number(value % 32n)] + out;
      value /= 32n;
    }
    return out;
  };
  let lastMs = -1;
  let lastTail = 0n;
  const MAX_TAIL = 32n ** 14n - 1n;
  return (prefix: string) => {
    const ms = Math.max(now(), lastMs);
    let tail: bigint;
    if (ms === lastMs && lastTail < MAX_TAIL) {
      tail = lastTail + 1n;
    } else {
      const bytes = new Uint8Array(9);
      random(bytes);
      tail = 0n;
      for (const b of bytes) tail = (tail << 8n) | BigInt(b);
      tail = tail % (MAX_TAIL / 2n);
    }
    lastMs = ms;
    lastTail = tail;
    return `${prefix}${encode(BigInt(ms), 10)}${encode(tail, 14)}`;
  };
}

Deno.test("ids: same ids as the BigInt reference for the same clock and random bytes", () => {
  // A seeded byte source (xorshift) and a clock that repeats, jumps and goes back.
  const source = (seed: number) => (b: Uint8Array) => {
    for (let i = 0; i < b.length; i++) {
      seed ^= seed << 13;
      seed ^= seed >>> 17;
      seed ^= seed << 5;
      b[i] = seed & 0xff;
    }
  };
  const clock = () => {
    let t = 1_700_000_000_000;
    let i = 0;
    return () => {
      i++;
      if (i % 7 === 0) t += 1;
      if (i % 31 === 0) t -= 3;
      if (i % 97 === 0) t += 86_400_000;
      return t;
    };
  };
  const mine = createIdGenerator(clock(), source(42));
  const ref = referenceGenerator(clock(), source(42));
  for (let i = 0; i < 5000; i++) assert.equal(mine("ch_"), ref("ch_"));
  // All-ones random bytes (largest tail) and a carry across the 35-bit halves.
  const ones = (b: Uint8Array) => b.fill(0xff);
  const a = createIdGenerator(() => 5, ones);
  const b = referenceGenerator(() => 5, ones);
  for (let i = 0; i < 100; i++) assert.equal(a("x"), b("x"));
  const carry = (b: Uint8Array) => b.set([0, 0, 0, 0, 0x07, 0xff, 0xff, 0xff, 0xfe]);
  const c = createIdGenerator(() => 9, carry);
  const d = referenceGenerator(() => 9, carry);
  for (let i = 0; i < 5; i++) assert.equal(c("x"), d("x"));
});

Deno.test("randomCode: length and alphabet", () => {
  const bytes = [0, 31, 32, 255, 7, 100];
  const code = randomCode(6, (b) => b.set(bytes));
  assert.equal(code, "0Z0Z74");
  const ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
  assert.equal(code, bytes.map((b) => ALPHABET[b % 32]).join(""));
});
