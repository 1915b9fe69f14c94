import assert from "node:assert/strict";
import { backends, request } from "./_test_util.ts";
import { RandomBalancer } from "./random.ts";
import { RoundRobinBalancer } from "./round_robin.ts";

const req = request("/");
const all = () => true;

Deno.test("round-robin: weights 5:1:1 interleave smoothly (a a b a c a a)", () => {
  const lb = new RoundRobinBalancer(backends(["a", "b", "c"], [5, 1, 1]));
  const seq = Array.from({ length: 14 }, () => lb.candidates(req, all)[0].id).join(" ");
  assert.equal(seq, "a a b a c a a a a b a c a a");
});

Deno.test("round-robin: equal weights rotate in list order", () => {
  const lb = new RoundRobinBalancer(backends(["a", "b", "c"], [100, 100, 100]));
  const seq = Array.from({ length: 6 }, () => lb.candidates(req, all)[0].id).join("");
  assert.equal(seq, "abcabc");
});

Deno.test("round-robin: weights are exact over every full cycle", () => {
  const lb = new RoundRobinBalancer(backends(["a", "b", "c", "d"], [300, 200, 100, 50]));
  for (let cycle = 0; cycle < 20; cycle++) {
    const counts: Record<string, number> = {};
    for (let i = 0; i < 13; i++) {
      const id = lb.candidates(req, all)[0].id;
      counts[id] = (counts[id] ?? 0) + 1;
    }
    assert.deepEqual(counts, { a: 6, b: 4, c: 2, d: 1 });
  }
});

Deno.test("round-robin: only available backends rotate; a returning one rejoins evenly", () => {
  const lb = new RoundRobinBalancer(backends(["a", "b", "c"], [100, 100, 100]));
  const seqDown = Array.from({ length: 6 }, () => lb.candidates(req, (id) => id !== "b")[0].id);
  assert.deepEqual(seqDown.sort(), ["a", "a", "a", "c", "c", "c"]);
  const counts: Record<string, number> = {};
  for (let i = 0; i < 30; i++) {
    const id = lb.candidates(req, all)[0].id;
    counts[id] = (counts[id] ?? 0) + 1;
  }
  assert.deepEqual(counts, { a: 10, b: 10, c: 10 });
});

Deno.test("round-robin: the retry order continues in list order after the chosen one", () => {
  const lb = new RoundRobinBalancer(backends(["a", "b", "c", "d"], [100, 100, 100, 100]));
  const avail = (id: string) => id !== "c";
  assert.deepEqual(lb.candidates(req, avail).map((b) => b.id), ["a", "b", "d"]);
  assert.deepEqual(lb.candidates(req, avail).map((b) => b.id), ["b", "d", "a"]);
  assert.deepEqual(lb.candidates(req, avail).map((b) => b.id), ["d", "a", "b"]);
});

Deno.test("random: the injected random number picks by cumulative weight", () => {
  const list = backends(["a", "b", "c"], [100, 300, 100]);
  const at = (r: number) =>
    new RandomBalancer(list, { random: () => r }).candidates(req, all)[0].id;
  assert.equal(at(0), "a");
  assert.equal(at(0.19), "a");
  assert.equal(at(0.21), "b");
  assert.equal(at(0.79), "b");
  assert.equal(at(0.81), "c");
  assert.equal(at(0.9999999), "c");
});

Deno.test("random: the retry order is weighted sampling without replacement", () => {
  const list = backends(["a", "b", "c"], [100, 800, 100]);
  let seed = 7;
  const random = () => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed / 2 ** 32;
  };
  const lb = new RandomBalancer(list, { random });
  let secondIsA = 0;
  let firstNotB = 0;
  for (let i = 0; i < 5000; i++) {
    const order = lb.candidates(req, all).map((b) => b.id);
    if (order[0] !== "b") {
      firstNotB++;
      // b weighs 8/9 of what is left once a or c was drawn.
      if (order[1] === "b") secondIsA++;
    }
  }
  assert.ok(secondIsA / firstNotB > 0.8, `${secondIsA}/${firstNotB}`);
});
