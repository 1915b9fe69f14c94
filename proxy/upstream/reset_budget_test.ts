import assert from "node:assert/strict";
import { ResetBudget } from "./reset_budget.ts";

Deno.test("reset budget: blind resets of young streams go out up to the budget, then wait", () => {
  const b = new ResetBudget(3, 1_000);
  // Five streams opened at 0, left at 10.
  assert.deepEqual([1, 3, 5, 7, 9].map((s) => b.admit(s, false, 0, 10)), [
    true,
    true,
    true,
    false,
    false,
  ]);
  assert.equal(b.deferred, 2);
  assert.deepEqual(b.due(999), []);
  assert.equal(b.nextDue(), 1_000);
  // A grace after they opened, all of them count as accepted: both deferred go out.
  assert.deepEqual(b.due(1_000), [7, 9]);
  assert.equal(b.deferred, 0);
  assert.equal(b.nextDue(), null);
});

Deno.test("reset budget: a stream whose head was seen, or older than the grace, is reset at once and never counts", () => {
  const b = new ResetBudget(1, 1_000);
  assert.equal(b.admit(1, true, 0, 10), true);
  assert.equal(b.admit(3, false, 0, 1_000), true, "opened a grace ago");
  assert.equal(b.admit(5, false, 900, 1_000), true, "young: takes the budget's one place");
  assert.equal(b.admit(7, false, 900, 1_000), false, "young, past the budget");
  assert.equal(b.admit(9, true, 950, 1_000), true, "answered: not held behind the deferred one");
  assert.equal(b.admit(11, false, 0, 1_000), true, "old: not held behind the deferred one");
});

Deno.test("reset budget: a head on a later stream releases the earlier ones", () => {
  const b = new ResetBudget(2, 1_000);
  for (const s of [1, 3, 5, 7, 9]) b.admit(s, false, 0, 0);
  assert.equal(b.deferred, 3); // 5, 7, 9
  // The backend answered stream 7: 1, 3, 5 and 7 have left its accept queue.
  // 5 and 7 go out as accepted; 9 takes a free place in the budget.
  assert.deepEqual(b.answered(7, 10), [5, 7, 9]);
  assert.equal(b.deferred, 0);
  // 9 counts now, alone: one more blind reset fits.
  assert.equal(b.admit(11, false, 20, 20), true);
  assert.equal(b.admit(13, false, 20, 20), false);
});

Deno.test("reset budget: a deferred reset waits at most the grace after its stream opened", () => {
  const b = new ResetBudget(1, 1_000);
  b.admit(1, false, 0, 0);
  b.admit(3, false, 500, 600); // deferred; its stream opened at 500
  assert.equal(b.nextDue(), 1_000, "when 1's place frees");
  // At 1,000 stream 1 counts as accepted: 3 takes the free place.
  assert.deepEqual(b.due(1_000), [3]);
  b.admit(5, false, 1_100, 1_200); // deferred: 3 counts until 1,500
  assert.equal(b.nextDue(), 1_500);
  assert.deepEqual(b.due(1_500), [5], "3 accepted by now: room for 5");
});

Deno.test("reset budget: deferred resets keep their order", () => {
  const b = new ResetBudget(1, 100);
  for (const s of [1, 3, 5, 7]) b.admit(s, false, 0, 0);
  assert.deepEqual(b.due(100), [3, 5, 7], "past the grace, in the order the client left");
});
