/**
 * Seeded, deterministic fuzzing of the frame layer: random and mutated inputs,
 * split at random points, fed to FrameDecoder, RequestStreamParser,
 * ControlStreamParser and decodeSettings. The only thing ever thrown must be
 * an H3Error, and every input must be handled quickly.
 */
import { H3Error, MalformedMessageError, NEED_MORE } from "./errors.ts";
import {
  encodeCancelPush,
  encodeFrame,
  encodeFrameHeader,
  encodeGoaway,
  encodeMaxPushId,
  encodeSettingsFrame,
  FrameDecoder,
} from "./frames.ts";
import { validateRequestFields, validateTrailerFields } from "./message.ts";
import { parseResponseSection } from "../http/response.ts";
import { decodeSettings, encodeSettings } from "./settings.ts";
import { ControlStreamParser, decodeStreamType, RequestStreamParser } from "./streams.ts";
import { encodeVarint } from "./varint.ts";
import assert from "node:assert/strict";
import { concat, rng } from "./_test_util.ts";

const SEED = 0x9114;
const ITERATIONS = 12_000;
/** Per-input budget; generous so a slow CI machine does not flake, tight enough to catch blow-ups. */
const MAX_MS_PER_INPUT = 250;

function bytes(r: () => number, n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = (r() * 256) | 0;
  return out;
}

function int(r: () => number, n: number): number {
  return (r() * n) | 0;
}

function seeds(r: () => number): Uint8Array[] {
  const settings = encodeSettingsFrame(
    new Map([[1, 4096], [6, 16384], [7, 100], [8, 1], [0x21, 3]]),
  );
  return [
    concat(
      encodeFrame(1, bytes(r, 20)),
      encodeFrame(0, bytes(r, 50)),
      encodeFrame(0, bytes(r, 3)),
      encodeFrame(1, bytes(r, 5)),
    ),
    concat(encodeFrame(1, bytes(r, 8)), encodeFrameHeader(0, 1 << 30), bytes(r, 40)),
    encodeFrame(1, bytes(r, 30)),
    concat(encodeFrame(1, bytes(r, 12)), encodeFrame(0, bytes(r, 100))),
    concat(
      encodeFrame(1, bytes(r, 12)),
      encodeFrame(0, new Uint8Array(0)),
      encodeFrame(0x21, bytes(r, 3)),
      encodeFrame(0, bytes(r, 7)),
    ),
    concat(encodeFrame(0x21 + 0x1f * int(r, 1000), bytes(r, 9)), encodeFrame(1, bytes(r, 8))),
    concat(
      settings,
      encodeMaxPushId(int(r, 100)),
      encodeCancelPush(int(r, 10)),
      encodeGoaway(int(r, 100) * 4),
    ),
    concat(settings, encodeFrame(0x40, bytes(r, 4)), encodeGoaway(0)),
    encodeSettings(new Map([[1, int(r, 1 << 20)], [0x33, 1], [0x1234, 5]])),
    concat(encodeVarint(2n ** 62n - 1n), encodeVarint(4), bytes(r, 4)),
    bytes(r, int(r, 64)),
  ];
}

function mutate(r: () => number, input: Uint8Array, pool: Uint8Array[]): Uint8Array {
  let buf: Uint8Array = input.slice();
  const rounds = int(r, 4); // 0 rounds: the seed itself, split differently
  for (let k = 0; k < rounds; k++) {
    switch (int(r, 7)) {
      case 0: // bit flip
        if (buf.length) buf[int(r, buf.length)] ^= 1 << int(r, 8);
        break;
      case 1: // random byte, biased to interesting values
        if (buf.length) {
          buf[int(r, buf.length)] =
            [0x00, 0x01, 0x04, 0x07, 0x3f, 0x40, 0x80, 0xc0, 0xff][int(r, 9)];
        }
        break;
      case 2: // truncate
        buf = buf.slice(0, int(r, buf.length + 1));
        break;
      case 3: { // insert random bytes
        const at = int(r, buf.length + 1);
        buf = concat(buf.subarray(0, at), bytes(r, 1 + int(r, 8)), buf.subarray(at));
        break;
      }
      case 4: { // duplicate a slice
        const a = int(r, buf.length + 1);
        const b = a + int(r, buf.length - a + 1);
        buf = concat(buf.subarray(0, b), buf.subarray(a, b), buf.subarray(b));
        break;
      }
      case 5: { // splice with another input
        const other = pool[int(r, pool.length)];
        buf = concat(
          buf.subarray(0, int(r, buf.length + 1)),
          other.subarray(int(r, other.length + 1)),
        );
        break;
      }
      default: // delete a range
      {
        const a = int(r, buf.length + 1);
        buf = concat(buf.subarray(0, a), buf.subarray(a + int(r, 8)));
      }
    }
  }
  return buf;
}

function chunks(r: () => number, buf: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  let i = 0;
  while (i < buf.length) {
    const n = r() < 0.3 ? 1 : 1 + int(r, 32);
    out.push(buf.subarray(i, i + n));
    i += n;
  }
  return out;
}

const outcomes = new Map<string, { ok: number; h3: number }>();

function onlyH3Error(what: string, input: Uint8Array, fn: () => void): void {
  let o = outcomes.get(what);
  if (o === undefined) outcomes.set(what, o = { ok: 0, h3: 0 });
  try {
    fn();
    o.ok++;
  } catch (e) {
    o.h3++;
    if (!(e instanceof H3Error)) {
      throw new Error(
        `${what} threw a non-H3Error on ${
          Array.from(input, (b) => b.toString(16).padStart(2, "0")).join("")
        }: ${e}`,
      );
    }
  }
}

function runOne(r: () => number, input: Uint8Array): void {
  const parts = chunks(r, input);
  const maxFrameSize = [16, 64, 1024, 65536][int(r, 4)];
  // Half the inputs skip HEADERS frames over a quarter of the frame bound
  // (decided without drawing from `r`, so the seeded corpus stays the same).
  const maxHeadersSize = input.length % 2 === 0 ? maxFrameSize >> 2 : undefined;

  onlyH3Error("FrameDecoder", input, () => {
    const dec = new FrameDecoder({ maxFrameSize, maxHeadersSize });
    let seen = 0;
    for (const p of parts) {
      dec.push(p);
      for (let ev = dec.next(); ev !== NEED_MORE; ev = dec.next()) {
        if (ev.kind === "data") seen += ev.chunk.length;
        else if (ev.kind === "frame") seen += ev.payload.length;
        else assert.ok(ev.length > maxHeadersSize! && ev.length <= maxFrameSize);
      }
    }
    assert.ok(seen <= input.length);
    assert.ok(dec.pendingBytes <= input.length);
  });

  onlyH3Error("RequestStreamParser", input, () => {
    const p = new RequestStreamParser({ maxFrameSize, maxHeadersSize });
    for (const c of parts) p.push(c);
    p.end();
  });

  onlyH3Error("ControlStreamParser", input, () => {
    const p = new ControlStreamParser({ maxFrameSize, peer: r() < 0.5 ? "client" : "server" });
    for (const c of parts) p.push(c);
    p.end();
  });

  onlyH3Error("decodeSettings", input, () => void decodeSettings(input));
  onlyH3Error("decodeStreamType", input, () => void decodeStreamType(input));
}

Deno.test("fuzz: frame layer throws only H3Error and finishes quickly (seeded)", () => {
  const r = rng(SEED);
  const base = seeds(r);
  const pool = base.slice();
  let slowest = 0;
  const started = performance.now();
  for (let i = 0; i < ITERATIONS; i++) {
    const input = r() < 0.25
      ? bytes(r, int(r, 200))
      : mutate(r, r() < 0.6 ? base[int(r, base.length)] : pool[int(r, pool.length)], pool);
    if (i % 50 === 0 && input.length < 4096) pool.push(input);
    const t0 = performance.now();
    runOne(r, input);
    const dt = performance.now() - t0;
    if (dt > slowest) slowest = dt;
  }
  // the corpus must reach both the accepting and the rejecting paths
  for (const what of ["FrameDecoder", "RequestStreamParser", "decodeSettings"]) {
    const o = outcomes.get(what)!;
    assert.ok(o.ok > ITERATIONS / 50 && o.h3 > ITERATIONS / 50, `${what}: ${JSON.stringify(o)}`);
  }
  assert.ok(slowest < MAX_MS_PER_INPUT, `slowest input took ${slowest.toFixed(1)} ms`);
  assert.ok(performance.now() - started < 60_000);
});

/** Names and values the validator fuzz draws from: valid ones and near misses. */
const FIELD_NAMES = [
  ":method",
  ":scheme",
  ":authority",
  ":path",
  ":protocol",
  ":status",
  "host",
  "content-length",
  "te",
  "connection",
  "x-a",
  "Upper",
  "",
  "a b",
];
const FIELD_VALUES = [
  "GET",
  "CONNECT",
  "OPTIONS",
  "https",
  "http",
  "/",
  "*",
  "",
  " x",
  "5",
  "5, 5",
  "5, 6",
  "-1",
  "trailers",
  "a\nb",
  "example.com",
  "200",
  "u@h",
];

type Fields = Array<[string, string]>;

/** Valid sections, one list per validator, that the fuzz mutates (so both outcomes occur). */
const VALID_SECTIONS: Record<"request" | "response" | "trailers", Fields[]> = {
  request: [
    [[":method", "GET"], [":scheme", "https"], [":authority", "example.com"], [":path", "/"]],
    [[":method", "OPTIONS"], [":scheme", "http"], [":path", "*"], ["host", "example.com"]],
    [[":method", "CONNECT"], [":authority", "example.com"], ["x-a", "5"]],
    [
      [":method", "CONNECT"],
      [":protocol", "websocket"],
      [":scheme", "https"],
      [":authority", "example.com"],
      [":path", "/"],
      ["content-length", "5, 5"],
    ],
  ],
  response: [[[":status", "200"]], [[":status", "200"], ["content-length", "5"], ["x-a", "u@h"]]],
  trailers: [[], [["x-a", "5"]], [["x-a", "trailers"], ["x-a", "200"]]],
};

function mutateFields(r: () => number, fields: Fields): Fields {
  const out: Fields = fields.map(([n, v]) => [n, v]);
  const pick = <T>(list: T[]): T => list[int(r, list.length)];
  const rounds = int(r, 3); // 0 rounds: the valid section itself
  for (let k = 0; k < rounds; k++) {
    const at = int(r, out.length + 1);
    switch (int(r, 5)) {
      case 0: // rename a field
        if (at < out.length) out[at][0] = pick(FIELD_NAMES);
        break;
      case 1: // change a value
        if (at < out.length) out[at][1] = pick(FIELD_VALUES);
        break;
      case 2: // drop a field
        out.splice(at, 1);
        break;
      case 3: // repeat a field
        if (at < out.length) out.splice(int(r, out.length + 1), 0, [...out[at]]);
        break;
      default: // insert a random field
        out.splice(at, 0, [pick(FIELD_NAMES), pick(FIELD_VALUES)]);
    }
  }
  return out;
}

function randomFields(r: () => number): Fields {
  const fields: Fields = [];
  const n = int(r, 8);
  for (let k = 0; k < n; k++) {
    fields.push([
      FIELD_NAMES[int(r, FIELD_NAMES.length)],
      FIELD_VALUES[int(r, FIELD_VALUES.length)],
    ]);
  }
  return fields;
}

Deno.test("fuzz: message validators throw only MalformedMessageError (seeded)", () => {
  const r = rng(SEED + 1);
  const validators: Record<keyof typeof VALID_SECTIONS, (fields: Fields) => unknown> = {
    request: (fields) => validateRequestFields(fields, { allowExtendedConnect: r() < 0.5 }),
    // The response rules are proxy/http's, which return the reason instead of throwing.
    response: (fields) => {
      const head = parseResponseSection(fields);
      if (typeof head === "string") throw new MalformedMessageError(":status", head);
    },
    trailers: validateTrailerFields,
  };
  const seen = {
    request: { ok: 0, malformed: 0 },
    response: { ok: 0, malformed: 0 },
    trailers: { ok: 0, malformed: 0 },
  };
  for (let i = 0; i < ITERATIONS; i++) {
    for (
      const [kind, validate] of Object.entries(validators) as [
        keyof typeof seen,
        (f: Fields) => unknown,
      ][]
    ) {
      const seeds = VALID_SECTIONS[kind];
      const fields = r() < 0.3 ? randomFields(r) : mutateFields(r, seeds[int(r, seeds.length)]);
      try {
        validate(fields);
        // An empty section says nothing of a validator's accepting path (any trailers pass).
        if (fields.length > 0) seen[kind].ok++;
      } catch (e) {
        if (!(e instanceof MalformedMessageError)) {
          throw new Error(`${kind} ${JSON.stringify(fields)}: ${e}`);
        }
        seen[kind].malformed++;
      }
    }
  }
  // #32.3: the corpus must reach both the accepting (on a non-empty section) and the rejecting
  // path of every validator: a validator that rejected every field (mutant: trailers refusing
  // any name), or accepted everything, would pass the kind check alone.
  for (const [kind, o] of Object.entries(seen)) {
    assert.ok(
      o.ok > ITERATIONS / 50 && o.malformed > ITERATIONS / 50,
      `${kind}: ${JSON.stringify(o)}`,
    );
  }
});
