import assert from "node:assert/strict";
import { H2Code } from "./errors.ts";
import { localSettings, PeerSettings, SettingId } from "./settings.ts";

function payload(pairs: Array<[number, number]>): Uint8Array {
  const p = new Uint8Array(pairs.length * 6);
  const v = new DataView(p.buffer);
  pairs.forEach(([id, value], i) => {
    v.setUint16(i * 6, id);
    v.setUint32(i * 6 + 2, value);
  });
  return p;
}

function apply(peer: PeerSettings, pairs: Array<[number, number]>) {
  const p = payload(pairs);
  return peer.apply(p, 0, p.length);
}

Deno.test("RFC 9113 §6.5.2: the peer's settings, and the change of its initial window", () => {
  const peer = new PeerSettings(100);
  assert.equal(
    apply(peer, [
      [SettingId.MAX_CONCURRENT_STREAMS, 7],
      [SettingId.INITIAL_WINDOW_SIZE, 70_000],
      [SettingId.MAX_FRAME_SIZE, 32_768],
      [SettingId.MAX_HEADER_LIST_SIZE, 9_000],
      [SettingId.HEADER_TABLE_SIZE, 0],
      [0x99, 1],
    ]),
    70_000 - 65_535,
  );
  assert.deepEqual(
    [peer.maxConcurrentStreams, peer.initialWindow, peer.maxFrameSize, peer.maxHeaderListSize],
    [7, 70_000, 32_768, 9_000],
  );
  assert.equal(apply(peer, [[SettingId.INITIAL_WINDOW_SIZE, 0]]), -70_000);
});

Deno.test("RFC 9113 §6.5.2: settings values out of range are connection errors", () => {
  const code = (pairs: Array<[number, number]>) => {
    const r = apply(new PeerSettings(100), pairs);
    return typeof r === "number" ? null : r.code;
  };
  assert.equal(code([[SettingId.ENABLE_PUSH, 1]]), H2Code.PROTOCOL_ERROR);
  assert.equal(code([[SettingId.ENABLE_PUSH, 2]]), H2Code.PROTOCOL_ERROR);
  assert.equal(code([[SettingId.ENABLE_PUSH, 0]]), null);
  assert.equal(code([[SettingId.INITIAL_WINDOW_SIZE, 0x80000000]]), H2Code.FLOW_CONTROL_ERROR);
  assert.equal(code([[SettingId.MAX_FRAME_SIZE, 16_383]]), H2Code.PROTOCOL_ERROR);
  assert.equal(code([[SettingId.MAX_FRAME_SIZE, 0x1000000]]), H2Code.PROTOCOL_ERROR);
});

Deno.test("RFC 9113 §3.4: our SETTINGS disable push and name only what differs from the defaults", () => {
  const base = { headerTableSize: 4096, streamWindow: 65_535, maxFrameSize: 16_384 };
  assert.deepEqual(localSettings({ ...base, maxHeaderListSize: 1000 }), [
    [SettingId.ENABLE_PUSH, 0],
    [SettingId.MAX_HEADER_LIST_SIZE, 1000],
  ]);
  assert.deepEqual(
    localSettings({
      headerTableSize: 0,
      streamWindow: 1,
      maxFrameSize: 20_000,
      maxHeaderListSize: 1,
    }),
    [
      [SettingId.ENABLE_PUSH, 0],
      [SettingId.HEADER_TABLE_SIZE, 0],
      [SettingId.INITIAL_WINDOW_SIZE, 1],
      [SettingId.MAX_FRAME_SIZE, 20_000],
      [SettingId.MAX_HEADER_LIST_SIZE, 1],
    ],
  );
});
