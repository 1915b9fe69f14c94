import fc from "fast-check";
import { H3Code } from "./errors.ts";
import {
  decodeSettings,
  encodeSettings,
  isReservedSettingId,
  SettingId,
  type Settings,
} from "./settings.ts";
import { encodeVarint } from "./varint.ts";
import assert from "node:assert/strict";
import { assertH3Error, concat } from "./_test_util.ts";

function pairs(...kv: Array<number | bigint>): Uint8Array {
  return concat(...kv.map((v) => encodeVarint(v)));
}

Deno.test("RFC 9114 §7.2.4: SETTINGS round trip keeps known and unknown identifiers", () => {
  const s: Settings = new Map([
    [SettingId.QPACK_MAX_TABLE_CAPACITY, 4096],
    [SettingId.MAX_FIELD_SECTION_SIZE, 16384],
    [SettingId.QPACK_BLOCKED_STREAMS, 100],
    [SettingId.ENABLE_CONNECT_PROTOCOL, 1],
    [SettingId.H3_DATAGRAM, 1],
    [0x21 + 0x1f * 3, 12345], // reserved (grease)
    [0x4242, 7], // unknown
  ]);
  assert.deepEqual(decodeSettings(encodeSettings(s)), s);
});

Deno.test("RFC 9114 §7.2.4: empty SETTINGS payload is valid", () => {
  assert.equal(decodeSettings(new Uint8Array(0)).size, 0);
  assert.equal(encodeSettings(new Map()).length, 0);
});

Deno.test("RFC 9114 §7.2.4: duplicate identifier is H3_SETTINGS_ERROR", () => {
  assertH3Error(
    () => decodeSettings(pairs(0x6, 100, 0x1, 0, 0x6, 100)),
    H3Code.SETTINGS_ERROR,
    "connection",
  );
  // also for identifiers that only differ in encoding length
  const nonMinimal = new Uint8Array([0x40, 0x06, 0x01]);
  assertH3Error(
    () => decodeSettings(concat(pairs(0x6, 1), nonMinimal)),
    H3Code.SETTINGS_ERROR,
    "connection",
  );
});

Deno.test("RFC 9114 §7.2.4: duplicate identifier above 2^53 is detected exactly", () => {
  const big = (1n << 61n) + 0x21n - ((1n << 61n) % 0x1fn); // some large id
  assertH3Error(() => decodeSettings(pairs(big, 1, big, 2)), H3Code.SETTINGS_ERROR, "connection");
  // two distinct ids that round to the same double are not duplicates
  const a = (1n << 60n) + 1n;
  const b = (1n << 60n) + 2n;
  assert.equal(Number(a), Number(b));
  assert.equal(decodeSettings(pairs(a, 1, b, 2)).size, 0);
});

Deno.test("RFC 9114 §7.2.4.1: HTTP/2 identifiers 0x0, 0x2, 0x3, 0x4, 0x5 are H3_SETTINGS_ERROR", () => {
  for (const id of [0x0, 0x2, 0x3, 0x4, 0x5]) {
    assertH3Error(() => decodeSettings(pairs(id, 1)), H3Code.SETTINGS_ERROR, "connection");
    assert.throws(() => encodeSettings(new Map([[id, 1]])), RangeError);
  }
});

Deno.test("RFC 9114 §7.1: truncated SETTINGS payload is H3_FRAME_ERROR", () => {
  assertH3Error(() => decodeSettings(pairs(0x6)), H3Code.FRAME_ERROR, "connection");
  assertH3Error(
    () => decodeSettings(new Uint8Array([0x06, 0x40])),
    H3Code.FRAME_ERROR,
    "connection",
  );
  assertH3Error(() => decodeSettings(new Uint8Array([0x40])), H3Code.FRAME_ERROR, "connection");
});

Deno.test("RFC 9114 §7.2.4.1: unknown identifiers are ignored but kept", () => {
  const s = decodeSettings(pairs(0x1234, 5, 0x21, 9));
  assert.equal(s.get(0x1234), 5);
  assert.equal(s.get(0x21), 9);
  assert.ok(isReservedSettingId(0x21));
  assert.ok(isReservedSettingId(0x21 + 0x1f * 1000));
  assert.ok(!isReservedSettingId(0x22));
});

Deno.test("RFC 9220 §3 / RFC 9297 §2.1.1: boolean settings other than 0/1 are H3_SETTINGS_ERROR", () => {
  assertH3Error(
    () => decodeSettings(pairs(SettingId.ENABLE_CONNECT_PROTOCOL, 2)),
    H3Code.SETTINGS_ERROR,
    "connection",
  );
  assertH3Error(
    () => decodeSettings(pairs(SettingId.H3_DATAGRAM, 7)),
    H3Code.SETTINGS_ERROR,
    "connection",
  );
});

Deno.test("SETTINGS round trip (property)", () => {
  const id = fc.integer({ min: 6, max: 2 ** 40 }).filter((n) => n !== 0x8 && n !== 0x33);
  fc.assert(
    fc.property(
      fc.uniqueArray(fc.tuple(id, fc.integer({ min: 0, max: 2 ** 50 })), { selector: (t) => t[0] }),
      (kv) => {
        const s: Settings = new Map(kv);
        assert.deepEqual(decodeSettings(encodeSettings(s)), s);
      },
    ),
  );
});
