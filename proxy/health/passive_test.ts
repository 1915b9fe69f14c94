import assert from "node:assert/strict";
import { PassiveHealth } from "./passive.ts";

function fakeClock(start = 0) {
  const c = { t: start, now: () => c.t };
  return c;
}

Deno.test("passive: N consecutive failures eject for ejectMs, then the backend is back", () => {
  const clock = fakeClock();
  const ejections: string[] = [];
  const p = new PassiveHealth({
    consecutiveFailures: 3,
    ejectMs: 1000,
    clock,
    onEject: (ev) => ejections.push(`${ev.id}:${ev.kind}:${ev.until}`),
  });
  assert.equal(p.reportFailure("a", "5xx"), false);
  assert.equal(p.reportFailure("a", "connect"), false);
  assert.equal(p.isEjected("a"), false);
  clock.t = 10;
  assert.equal(p.reportFailure("a", "connect"), true);
  assert.equal(p.isEjected("a"), true);
  assert.deepEqual(ejections, ["a:connect:1010"]);
  assert.deepEqual(p.ejected(), ["a"]);
  clock.t = 1009;
  assert.equal(p.isEjected("a"), true);
  clock.t = 1010;
  assert.equal(p.isEjected("a"), false);
  assert.deepEqual(p.ejected(), []);
});

Deno.test("passive: a success resets the run of failures", () => {
  const p = new PassiveHealth({ consecutiveFailures: 2, ejectMs: 1000, clock: fakeClock() });
  p.reportFailure("a", "5xx");
  p.reportSuccess("a");
  assert.equal(p.reportFailure("a", "5xx"), false);
  assert.equal(p.reportFailure("a", "5xx"), true);
});

Deno.test("passive: reports during an ejection do not extend it", () => {
  const clock = fakeClock();
  const p = new PassiveHealth({ consecutiveFailures: 1, ejectMs: 100, clock });
  assert.equal(p.reportFailure("a", "connect"), true);
  clock.t = 50;
  assert.equal(p.reportFailure("a", "connect"), false);
  clock.t = 100;
  assert.equal(p.isEjected("a"), false);
  // Back with a clean count: a new full run (here 1 failure) ejects again.
  assert.equal(p.reportFailure("a", "5xx"), true);
  assert.equal(p.isEjected("a"), true);
});

Deno.test("passive: after an ejection it takes a full run of failures again", () => {
  const clock = fakeClock();
  const p = new PassiveHealth({ consecutiveFailures: 3, ejectMs: 100, clock });
  for (let i = 0; i < 3; i++) p.reportFailure("a", "5xx");
  clock.t = 200;
  assert.equal(p.reportFailure("a", "5xx"), false);
  assert.equal(p.isEjected("a"), false);
});

Deno.test("passive: backends are independent; unknown ids are not ejected", () => {
  const p = new PassiveHealth({ consecutiveFailures: 2, ejectMs: 100, clock: fakeClock() });
  p.reportFailure("a", "5xx");
  p.reportFailure("b", "5xx");
  p.reportSuccess("c");
  assert.equal(p.isEjected("a"), false);
  assert.equal(p.reportFailure("a", "5xx"), true);
  assert.equal(p.isEjected("b"), false);
  assert.equal(p.isEjected("zzz"), false);
});

Deno.test("passive: defaults are 5 failures and 5000 ms", () => {
  const clock = fakeClock();
  const p = new PassiveHealth({ clock });
  for (let i = 0; i < 4; i++) assert.equal(p.reportFailure("a", "5xx"), false);
  assert.equal(p.reportFailure("a", "5xx"), true);
  clock.t = 4999;
  assert.equal(p.isEjected("a"), true);
  clock.t = 5000;
  assert.equal(p.isEjected("a"), false);
});

Deno.test("passive: invalid options are rejected", () => {
  assert.throws(() => new PassiveHealth({ consecutiveFailures: 0 }), RangeError);
  assert.throws(() => new PassiveHealth({ ejectMs: -5 }), RangeError);
});
