import assert from "node:assert/strict";
import { Flag, FrameReader, FrameType, FrameWriter } from "./frames.ts";

function frames(w: FrameWriter, step: number): Array<[number, number, number, number[]]> {
  const bytes = w.take()!.slice();
  const r = new FrameReader();
  const out: Array<[number, number, number, number[]]> = [];
  for (let i = 0; i < bytes.length; i += step) {
    r.begin(bytes.subarray(i, i + step));
    while (r.header() && r.whole) {
      r.advance();
      out.push([r.type, r.flags, r.stream, [...r.buf.subarray(r.start, r.end)]]);
    }
    r.keepRest();
  }
  return out;
}

Deno.test("RFC 9113 §4.1: frames written are read back whole, whatever the chunk boundaries", () => {
  for (const step of [1, 5, 9, 10, 1000]) {
    const w = new FrameWriter();
    w.ping(new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]), true);
    w.windowUpdate(3, 0x12345);
    w.data(5, new Uint8Array([9, 9]), true);
    w.headerBlock(7, new Uint8Array(5).fill(4), false, 2);
    assert.deepEqual(frames(w, step), [
      [FrameType.PING, Flag.ACK, 0, [1, 2, 3, 4, 5, 6, 7, 8]],
      [FrameType.WINDOW_UPDATE, 0, 3, [0, 1, 0x23, 0x45]],
      [FrameType.DATA, Flag.END_STREAM, 5, [9, 9]],
      [FrameType.HEADERS, 0, 7, [4, 4]],
      [FrameType.CONTINUATION, 0, 7, [4, 4]],
      [FrameType.CONTINUATION, Flag.END_HEADERS, 7, [4]],
    ], `chunks of ${step}`);
  }
});

Deno.test("FrameWriter: the view taken stays intact while the next output fills", () => {
  const w = new FrameWriter();
  w.rstStream(1, 8);
  const first = w.take()!;
  const copy = first.slice();
  w.rstStream(3, 2);
  assert.deepEqual(first, copy);
  assert.equal(w.pending, 13);
  assert.equal(w.take()!.length, 13);
  assert.equal(w.take(), null);
});
