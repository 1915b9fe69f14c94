import assert from "node:assert/strict";
import { IdleReclaimer } from "./idle_reclaim.ts";

interface Conn {
  name: string;
  activeStreams: number;
  closed: boolean;
}

function setup(threshold: number, idleMs: number) {
  let t = 0;
  const r = new IdleReclaimer<Conn>({ threshold, idleMs }, () => t);
  return { r, advance: (ms: number) => (t += ms) };
}

const conn = (name: string, activeStreams = 0): Conn => ({ name, activeStreams, closed: false });

Deno.test("below the threshold nothing is reclaimed, however long a connection idles", () => {
  const { r, advance } = setup(5, 100);
  const open = [conn("a"), conn("b")];
  assert.deepEqual(r.pick(open, 2), []);
  advance(10_000);
  assert.deepEqual(r.pick(open, 2), []);
});

Deno.test("at the threshold, connections idle for idleMs go, longest idle first, just enough", () => {
  const { r, advance } = setup(3, 100);
  const a = conn("a"), b = conn("b"), busy = conn("busy", 2);
  const open = [busy, b, a];
  assert.deepEqual(r.pick([a], 3), []); // a idle from t=0
  advance(50);
  assert.deepEqual(r.pick(open, 3), []); // b idle from t=50
  advance(60);
  // a has idled 110 ms, b 60 ms: only a is due, and one suffices (3 - 3 + 1).
  assert.deepEqual(r.pick(open, 3).map((c) => c.name), ["a"]);
  advance(100);
  assert.deepEqual(r.pick([busy, b], 3).map((c) => c.name), ["b"]);
  // A busy connection is never picked.
  advance(1000);
  assert.deepEqual(r.pick([busy], 3), []);
});

Deno.test("a request in flight resets a connection's idle time; a closed one is skipped", () => {
  const { r, advance } = setup(1, 100);
  const a = conn("a"), gone = conn("gone");
  gone.closed = true;
  r.pick([a, gone], 2);
  advance(80);
  a.activeStreams = 1;
  r.pick([a, gone], 2);
  a.activeStreams = 0;
  advance(80);
  assert.deepEqual(r.pick([a, gone], 2), []); // idle again only since t=160
  advance(100);
  assert.deepEqual(r.pick([a, gone], 2).map((c) => c.name), ["a"]);
});

Deno.test("dropping below the threshold forgets idle times", () => {
  const { r, advance } = setup(2, 100);
  const a = conn("a");
  r.pick([a, conn("b")], 2);
  advance(200);
  r.pick([a], 1);
  advance(50);
  assert.deepEqual(r.pick([a, conn("c")], 2), []); // a's idle time starts again
});
