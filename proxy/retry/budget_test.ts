import assert from "node:assert/strict";
import { RetryBudget } from "./budget.ts";

/** A budget with `active` requests on their first attempt. */
function budgetWith(percent: number, floor: number, active: number): RetryBudget {
  const budget = new RetryBudget();
  budget.configure(percent, floor);
  for (let i = 0; i < active; i++) budget.requestStarted();
  return budget;
}

Deno.test("#30.2: retry budget: retries in flight stay within budget_percent of the first attempts in flight", () => {
  // 100 requests, 20 %, no floor: 16 retries leave 84 first attempts (16 <= 16.8); the 17th would not fit.
  const budget = budgetWith(20, 0, 100);
  let granted = 0;
  while (granted < 1000 && budget.tryRetry(false, 0)) granted++;
  assert.equal(granted, 16);
  assert.equal(budget.retrying, 16);
  assert.equal(budget.active, 84);
  assert.ok(budget.retrying * 100 <= 20 * budget.active);
  // One retry ends: room for one more.
  budget.requestEnded(true);
  assert.ok(budget.tryRetry(false, 0));
  assert.ok(!budget.tryRetry(false, 0));
});

Deno.test("#30.2: retry budget: a request already retrying asks again without taking another share", () => {
  const budget = budgetWith(20, 0, 10);
  assert.ok(budget.tryRetry(false, 0)); // 1 retrying, 9 first: 100 <= 180
  assert.ok(budget.tryRetry(true, 0), "its second retry keeps its share");
  assert.equal(budget.retrying, 1);
  // Others end: 1 retrying over 4 first attempts is 25 % > 20 %: its next retry is refused.
  for (let i = 0; i < 5; i++) budget.requestEnded(false);
  assert.ok(!budget.tryRetry(true, 0));
});

Deno.test("#30.2: retry budget: min_retries_per_second retries a second whatever the percentage, and no more", () => {
  // One request in flight: 20 % of it is none, the floor allows 3 a second.
  const budget = budgetWith(20, 3, 1);
  const at = (now: number) => {
    const granted = budget.tryRetry(false, now);
    if (granted) {
      budget.requestEnded(true);
      budget.requestStarted();
    }
    return granted;
  };
  assert.deepEqual([at(0), at(10), at(20), at(30)], [true, true, true, false]);
  assert.equal(at(999), false, "the first of the three is not a second old yet");
  assert.equal(at(1000), true, "a second after the first: one more");
  assert.equal(at(1001), false);
});

Deno.test("#30.2: retry budget: under load the floor adds nothing past the percentage", () => {
  // 200 first attempts: the percentage grants 33 at once; the floor (3 a second) was used by them.
  const budget = budgetWith(20, 3, 200);
  let granted = 0;
  while (granted < 1000 && budget.tryRetry(false, 5)) granted++;
  assert.equal(granted, 33);
});

Deno.test("#30.2: retry budget: budget_percent 0 leaves the floor alone; a reconfigured floor starts afresh", () => {
  const budget = budgetWith(0, 1, 50);
  assert.ok(budget.tryRetry(false, 0));
  assert.ok(!budget.tryRetry(false, 1));
  budget.configure(0, 2);
  assert.ok(budget.tryRetry(false, 2));
  assert.ok(budget.tryRetry(false, 3));
  assert.ok(!budget.tryRetry(false, 4));
  budget.configure(0, 0);
  assert.ok(!budget.tryRetry(false, 5_000), "no floor, no percentage: nothing");
});
