import assert from "node:assert/strict";
import { median, quantile } from "./stats.ts";

Deno.test("quantile: nearest rank of sorted values", () => {
  const xs = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
  assert.equal(quantile(xs, 0.5), 5);
  assert.equal(quantile(xs, 0.99), 10);
  assert.equal(quantile(xs, 0), 1);
  assert.ok(Number.isNaN(quantile([], 0.5)));
});

Deno.test("median: middle value, or the mean of the middle two", () => {
  assert.equal(median([3, 1, 2]), 2);
  assert.equal(median([4, 1, 3, 2]), 2.5);
  assert.ok(Number.isNaN(median([])));
});
