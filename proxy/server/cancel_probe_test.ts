import assert from "node:assert/strict";
import { CancelProbe } from "./cancel_probe.ts";

function target(fail = false) {
  const writes: Uint8Array[] = [];
  let pending: PromiseWithResolvers<void> | null = null;
  return {
    writes,
    hold() {
      pending = Promise.withResolvers<void>();
    },
    release() {
      pending?.resolve();
      pending = null;
    },
    write(chunk: Uint8Array): Promise<void> {
      writes.push(chunk);
      if (fail) return Promise.reject(new Error("sending stopped by peer"));
      return pending?.promise ?? Promise.resolve();
    },
  };
}

const settle = () => new Promise((r) => setTimeout(r, 0));

Deno.test("cancel probe: RFC 9114 §7.2.8 reserved frame (0x21, empty) at doubling gaps up to the maximum", async () => {
  let now = 0;
  const probe = new CancelProbe({ firstMs: 100, maxMs: 400, tickMs: 1_000_000, now: () => now });
  const t = target();
  const w = probe.watch(t);
  const at: number[] = [];
  for (now = 0; now <= 1500; now += 50) {
    const before = t.writes.length;
    probe.tick();
    if (t.writes.length > before) at.push(now);
    await settle();
  }
  assert.deepEqual(at, [100, 300, 700, 1100, 1500]);
  assert.deepEqual([...t.writes[0]], [0x21, 0x00]);
  w.stop();
  w.stop();
  assert.equal(probe.size, 0);
});

Deno.test("cancel probe: no probe while paused or while one is still held by flow control", async () => {
  let now = 0;
  const probe = new CancelProbe({ firstMs: 100, maxMs: 1000, tickMs: 1_000_000, now: () => now });
  const t = target();
  const w = probe.watch(t, true);
  now = 500;
  probe.tick();
  assert.equal(t.writes.length, 0, "paused from the start");
  w.resume();
  now = 550;
  probe.tick();
  assert.equal(t.writes.length, 0, "the first probe is firstMs after resuming");
  now = 600;
  t.hold();
  probe.tick();
  assert.equal(t.writes.length, 1);
  now = 5000;
  probe.tick();
  assert.equal(t.writes.length, 1, "the held probe is not doubled");
  t.release();
  await settle();
  probe.tick();
  assert.equal(t.writes.length, 2);
  w.pause();
  now = 99_999;
  probe.tick();
  assert.equal(t.writes.length, 2);
  w.stop();
});

Deno.test("cancel probe: a failed probe (STOP_SENDING) ends the watch; the timer stops with the last one", async () => {
  const probe = new CancelProbe({ firstMs: 1, maxMs: 1, tickMs: 5 });
  const t = target(true);
  probe.watch(t);
  for (let i = 0; i < 100 && probe.size > 0; i++) await new Promise((r) => setTimeout(r, 5));
  assert.equal(probe.size, 0);
  assert.equal(t.writes.length, 1);
});
