import assert from "node:assert/strict";
import { deadline, idleWatch, settledWithin } from "./deadline.ts";
import { pollUntil, sleep } from "../tests/support/wait.ts";

const never = () => new Promise<never>(() => {});
const late = (label: string) => () => new Error(label);

Deno.test("deadline: the promise's outcome when it settles in time", async () => {
  assert.equal(await deadline(Promise.resolve(1), 1_000, late("x")), 1);
  await assert.rejects(deadline(Promise.reject(new RangeError("r")), 1_000, late("x")), RangeError);
  assert.equal(await deadline(Promise.resolve(2), Infinity, late("x")), 2);
});

Deno.test("deadline: each pending promise fails at its own deadline, a shorter one added later included", async () => {
  const started = performance.now();
  const long = deadline(never(), 400, late("long")).catch((e) => [e.message, performance.now()]);
  const short = deadline(never(), 40, late("short")).catch((e) => [e.message, performance.now()]);
  const [[shortMsg, shortAt], [longMsg, longAt]] = await Promise.all([short, long]) as [
    string,
    number,
  ][];
  assert.equal(shortMsg, "short");
  assert.equal(longMsg, "long");
  // Never early; late by at most a quarter of the deadline (plus scheduling).
  assert.ok(shortAt - started >= 40 && shortAt - started < 300, `short after ${shortAt - started}`);
  assert.ok(longAt - started >= 400, `long after ${longAt - started}`);
  // A settled promise's deadline is gone: the test sanitizer checks no timer is left.
});

Deno.test("settledWithin: true when the promise settles in time (resolved or rejected), false when time runs out", async () => {
  assert.equal(await settledWithin(Promise.resolve(1), 1_000), true);
  assert.equal(await settledWithin(Promise.reject(new Error("x")), 1_000), true);
  const started = performance.now();
  assert.equal(await settledWithin(new Promise(() => {}), 30), false);
  assert.ok(performance.now() - started >= 29);
});

Deno.test("idleWatch: fires once after ms without a touch; touches push it back; cancel stops it", async () => {
  // Touches 20 ms apart against a 400 ms deadline: a busy machine may
  // stretch a 20 ms sleep many times over and still not reach it.
  let fired = 0;
  const w = idleWatch(400, () => fired++);
  for (let i = 0; i < 5; i++) {
    await sleep(20);
    w.touch();
  }
  assert.equal(fired, 0, "touched every 20 ms: never idle for 400 ms");
  await pollUntil(() => fired === 1);
  assert.equal(fired, 1, "fires once idle for 400 ms");
  w.touch();
  await sleep(900);
  assert.equal(fired, 1, "fires once");
  let other = 0;
  const c = idleWatch(20, () => other++);
  c.cancel();
  await sleep(60);
  assert.equal(other, 0);
});

Deno.test("idleWatch pause: short waits touched and paused in time never fire; a paused watch never fires; a touch re-arms it, and it still fires once", async () => {
  let late = 0;
  const d = idleWatch(60, () => late++);
  d.pause();
  // Short waits, each paused in time: never late, however many.
  for (let i = 0; i < 5; i++) {
    d.touch();
    await sleep(20);
    d.pause();
  }
  // Paused: no deadline runs however long nothing happens.
  await sleep(120);
  assert.equal(late, 0);
  // A wait that outlasts ms: late, once.
  d.touch();
  await sleep(150);
  assert.equal(late, 1);
  // After firing, pause and touch are no-ops: it fires once.
  d.pause();
  d.touch();
  await sleep(150);
  assert.equal(late, 1);
  d.cancel();
});

Deno.test("#29: idleWatch: a pause and a touch per chunk cost no timer operation; a paused watch leaves at the next sweep, and the timer stops", async () => {
  const realSet = globalThis.setInterval;
  const realClear = globalThis.clearInterval;
  let sets = 0;
  let clears = 0;
  globalThis.setInterval = ((...args: Parameters<typeof setInterval>) => {
    sets++;
    return realSet(...args);
  }) as typeof setInterval;
  globalThis.clearInterval = ((id?: number) => {
    clears++;
    realClear(id);
  }) as typeof clearInterval;
  try {
    let fired = 0;
    const w = idleWatch(40, () => fired++);
    // An upload's reads: waited on (touch), then not (pause), a thousand times over.
    for (let i = 0; i < 1000; i++) {
      w.pause();
      w.touch();
    }
    w.pause();
    assert.equal(sets, 1, "the sweeper's timer was set once, not per pause");
    assert.equal(clears, 0);
    // Left paused: a sweep (every 10 ms here) drops it and the timer stops.
    await pollUntil(() => clears > 0);
    assert.equal(clears, 1, "the timer stopped once the paused watch left");
    assert.equal(fired, 0, "a paused watch never fires");
    // A touch brings it back, with a timer, and it fires as before.
    w.touch();
    assert.equal(sets, 2);
    await pollUntil(() => fired > 0);
    assert.equal(fired, 1);
  } finally {
    globalThis.setInterval = realSet;
    globalThis.clearInterval = realClear;
  }
});
