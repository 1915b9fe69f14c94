import assert from "node:assert/strict";
import { H3Error } from "../errors.ts";
import { BLOCKED, QpackDecoder } from "./decoder.ts";
import { QpackEncoder } from "./encoder.ts";
import {
  concatBytes,
  encodeDuplicate,
  encodeIndexedDynamic,
  encodeIndexedPostBase,
  encodeInsertCountIncrement,
  encodeInsertWithLiteralName,
  encodeInsertWithNameRef,
  encodeLiteralDynamicNameRef,
  encodeLiteralPostBaseNameRef,
  encodeSectionAck,
  encodeSectionPrefix,
  encodeSetCapacity,
  encodeStreamCancel,
} from "./_test_util.ts";
import { rng } from "../_test_util.ts";

const rand = rng(0x9204);
const int = (n: number) => Math.floor(rand() * n);

function randomBytes(max: number): Uint8Array {
  const out = new Uint8Array(int(max + 1));
  for (let i = 0; i < out.length; i++) out[i] = int(256);
  return out;
}

function mutate(input: Uint8Array): Uint8Array {
  let b: Uint8Array = input.slice();
  const ops = 1 + int(4);
  for (let k = 0; k < ops; k++) {
    const op = int(6);
    if (op === 0 && b.length > 0) b[int(b.length)] ^= 1 << int(8); // bit flip
    else if (op === 1 && b.length > 0) b[int(b.length)] = int(256); // byte set
    else if (op === 2) b = b.subarray(0, int(b.length + 1)).slice(); // truncate
    else if (op === 3) { // insert random bytes
      const at = int(b.length + 1);
      b = concatBytes(b.subarray(0, at), randomBytes(4), b.subarray(at));
    } else if (op === 4 && b.length > 0) b[int(b.length)] = [0x00, 0x7f, 0x80, 0xff][int(4)]; // boundaries
    else if (op === 5 && b.length > 1) { // duplicate a slice
      const s = int(b.length);
      b = concatBytes(b, b.subarray(s, s + 1 + int(8)));
    }
  }
  return b;
}

function randomString(max: number): string {
  let s = "";
  const n = int(max + 1);
  for (let i = 0; i < n; i++) s += String.fromCharCode(rand() < 0.8 ? 0x61 + int(26) : int(256));
  return s;
}

function validEncoderStream(): Uint8Array {
  const parts = [encodeSetCapacity(100 + int(300))];
  for (let i = 0, n = int(8); i < n; i++) {
    const h = [true, false, "auto" as const][int(3)];
    switch (int(4)) {
      case 0:
        parts.push(encodeInsertWithNameRef(true, int(99), randomString(20), h));
        break;
      case 1:
        parts.push(encodeInsertWithNameRef(false, int(2), randomString(20), h));
        break;
      case 2:
        parts.push(encodeInsertWithLiteralName(randomString(10), randomString(20), h));
        break;
      default:
        parts.push(encodeDuplicate(int(2)));
    }
  }
  return concatBytes(...parts);
}

function validSection(encoder: QpackEncoder): Uint8Array {
  if (rand() < 0.5) {
    const fields: Array<[string, string]> = [];
    for (let i = 0, n = int(8); i < n; i++) {
      fields.push([randomString(12) || "x", randomString(30)]);
    }
    return encoder.encodeSection(fields);
  }
  const ric = int(6);
  const base = ric === 0 ? 0 : int(ric + 1);
  return concatBytes(
    encodeSectionPrefix(ric, base, 12),
    encodeIndexedDynamic(int(3)),
    encodeIndexedPostBase(int(3)),
    encodeLiteralDynamicNameRef(int(3), randomString(8)),
    encodeLiteralPostBaseNameRef(int(3), randomString(8), { huffman: true }),
  );
}

function newDecoder(): QpackDecoder {
  const d = new QpackDecoder({
    maxTableCapacity: 400,
    maxBlockedStreams: 4,
    maxFieldSectionSize: 4096,
  });
  try {
    d.pushEncoderStream(concatBytes(encodeSetCapacity(400), validEncoderStream().subarray(0)));
  } catch (e) {
    if (!(e instanceof H3Error)) throw e;
  }
  return d;
}

/** Run `fn`, allowing only H3Error to escape; returns whether it threw. */
function onlyH3Error(fn: () => void, input: Uint8Array): boolean {
  try {
    fn();
    return false;
  } catch (e) {
    if (e instanceof H3Error) return true;
    throw new Error(
      `non-H3Error for input ${
        Array.from(input, (x) => x.toString(16).padStart(2, "0")).join("")
      }: ${e}`,
    );
  }
}

Deno.test("RFC 9204 §2.2.3 (fuzz): decodeSection throws only H3Error on random and mutated sections", () => {
  const encoder = new QpackEncoder();
  let dec = newDecoder();
  let runs = 0;
  const start = performance.now();
  for (let i = 0; i < 4000; i++) {
    const input = rand() < 0.4 ? randomBytes(64) : mutate(validSection(encoder));
    const threw = onlyH3Error(() => {
      const r = dec.decodeSection(int(100) * 4, input);
      if (r !== BLOCKED) assert.ok(Array.isArray(r));
      dec.takeDecoderStreamBytes();
    }, input);
    if (threw || i % 50 === 0) dec = newDecoder();
    runs++;
  }
  assert.equal(runs, 4000);
  assert.ok(performance.now() - start < 20_000, "no input may hang the decoder");
});

Deno.test("RFC 9204 §4.3 (fuzz): pushEncoderStream throws only H3Error on random and mutated streams, any split", () => {
  let dec = newDecoder();
  const pendingSection = concatBytes(encodeSectionPrefix(3, 3, 12), encodeIndexedDynamic(0));
  for (let i = 0; i < 4000; i++) {
    const input = rand() < 0.3 ? randomBytes(64) : mutate(validEncoderStream());
    const threw = onlyH3Error(() => {
      if (rand() < 0.2) dec.decodeSection(int(8) * 4, pendingSection);
      let pos = 0;
      while (pos < input.length) {
        const n = 1 + int(16);
        dec.pushEncoderStream(input.subarray(pos, pos + n));
        pos += n;
      }
      dec.takeDecoderStreamBytes();
    }, input);
    if (threw || i % 20 === 0) dec = newDecoder();
  }
});

Deno.test("RFC 9204 §4.4 (fuzz): pushDecoderStream throws only H3Error on random and mutated streams", () => {
  let enc = new QpackEncoder();
  for (let i = 0; i < 3000; i++) {
    const valid = concatBytes(
      encodeStreamCancel(int(1 << 20)),
      rand() < 0.2 ? encodeSectionAck(int(1000)) : encodeStreamCancel(int(64)),
      rand() < 0.1 ? encodeInsertCountIncrement(int(10)) : new Uint8Array(0),
    );
    const input = rand() < 0.3 ? randomBytes(32) : mutate(valid);
    const threw = onlyH3Error(() => {
      let pos = 0;
      while (pos < input.length) {
        const n = 1 + int(8);
        enc.pushDecoderStream(input.subarray(pos, pos + n));
        pos += n;
      }
    }, input);
    if (threw) enc = new QpackEncoder();
  }
});
