import assert from "node:assert/strict";
import { GcraLimiter } from "./limiter.ts";

Deno.test("#30.1: GCRA: a full bucket passes `burst` requests at once, then refuses with Retry-After", () => {
  const limiter = new GcraLimiter({ requestsPerSecond: 10, burst: 3, maxKeys: 10 });
  const at0 = [1, 2, 3, 4].map(() => limiter.take("k", 0));
  assert.deepEqual(at0.map((d) => d.allowed), [true, true, true, false]);
  assert.deepEqual(at0.map((d) => d.remaining), [2, 1, 0, 0]);
  assert.equal(at0[3].retryAfterSeconds, 1, "one token back after 100 ms: rounded up to 1 s");
  assert.equal(at0[2].retryAfterSeconds, 0);
  assert.equal(at0[2].resetSeconds, 1, "300 ms to a full bucket, rounded up");
});

Deno.test("#30.1: GCRA: tokens come back at the configured rate; a refusal is not counted", () => {
  const limiter = new GcraLimiter({ requestsPerSecond: 2, burst: 1, maxKeys: 10 });
  assert.equal(limiter.take("k", 0).allowed, true);
  assert.equal(limiter.take("k", 499).allowed, false);
  assert.equal(limiter.take("k", 499).allowed, false);
  assert.equal(limiter.take("k", 500).allowed, true, "refusals did not push the next token back");
  assert.equal(limiter.take("k", 999).allowed, false);
  assert.equal(limiter.take("k", 1000).allowed, true);
  // 100 s of idling refills at most `burst`.
  assert.equal(limiter.take("k", 100_000).allowed, true);
  assert.equal(limiter.take("k", 100_000).allowed, false);
});

Deno.test("#30.1: GCRA: a slow rate gives a long Retry-After; keys are independent", () => {
  const limiter = new GcraLimiter({ requestsPerSecond: 0.1, burst: 1, maxKeys: 10 });
  assert.equal(limiter.take("a", 0).allowed, true);
  const refused = limiter.take("a", 0);
  assert.equal(refused.allowed, false);
  assert.equal(refused.retryAfterSeconds, 10);
  assert.equal(refused.resetSeconds, 10);
  assert.equal(limiter.take("b", 0).allowed, true, "another key has its own bucket");
});

Deno.test("#30.1: GCRA: a flood of distinct keys holds at most max_keys entries", () => {
  const limiter = new GcraLimiter({ requestsPerSecond: 1, burst: 1, maxKeys: 1000 });
  for (let i = 0; i < 200_000; i++) limiter.take(`flood-${i}`, 0);
  assert.equal(limiter.size, 1000);
});

Deno.test("#30.1: GCRA: a flood of a million distinct keys leaves the heap bounded (measured after a GC)", async () => {
  // A child with --expose-gc, so that garbage does not count.
  const script = `
    import { GcraLimiter } from ${JSON.stringify(new URL("./limiter.ts", import.meta.url).href)};
    const limiter = new GcraLimiter({ requestsPerSecond: 1, burst: 1, maxKeys: 1000 });
    globalThis.gc(); const before = Deno.memoryUsage().heapUsed;
    for (let i = 0; i < 1_000_000; i++) limiter.take("flood-" + i, 0);
    globalThis.gc(); console.log(Deno.memoryUsage().heapUsed - before, limiter.size);
  `;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--v8-flags=--expose-gc", script],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout).trim();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const [grown, size] = text.split(" ").map(Number);
  assert.equal(size, 1000);
  // A million held keys take ~100 MB; a thousand, ~100 kB.
  assert.ok(grown < 8 * 1024 * 1024, `heap grew ${grown} bytes`);
});

Deno.test("#30.1: GCRA: the least recently used key is dropped first; a key in use keeps its state", () => {
  const limiter = new GcraLimiter({ requestsPerSecond: 1, burst: 1, maxKeys: 3 });
  limiter.take("old", 0);
  limiter.take("busy", 0);
  limiter.take("x", 0);
  limiter.take("busy", 1000); // used again: now the most recent
  limiter.take("y", 1000); // at the cap: "old" goes
  assert.equal(limiter.size, 3);
  assert.equal(limiter.take("busy", 1000).allowed, false, "busy kept its spent bucket");
  assert.equal(
    limiter.take("old", 1000).allowed,
    true,
    "old was dropped (an idle key loses nothing)",
  );
});

Deno.test("#30.1: GCRA: eviction follows use order exactly, checked against a plain LRU model", () => {
  // A rate so slow that no token returns: a key passes `burst` times while held, then is refused;
  // a dropped key starts over with a full bucket.
  const cap = 16;
  const burst = 3;
  const limiter = new GcraLimiter({ requestsPerSecond: 1e-6, burst, maxKeys: cap });
  const model: Array<{ key: string; used: number }> = []; // least recently used first
  let seed = 7;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  for (let op = 0; op < 20_000; op++) {
    const key = `k${Math.floor(random() * 40)}`;
    const at = model.findIndex((e) => e.key === key);
    const entry = at === -1 ? { key, used: 0 } : model[at];
    const allowed = entry.used < burst;
    assert.equal(limiter.take(key, 0).allowed, allowed, `op ${op}: ${key}`);
    if (allowed) {
      // Counted: the key becomes the most recently used (a refusal changes nothing).
      if (at !== -1) model.splice(at, 1);
      else if (model.length >= cap) model.shift();
      entry.used++;
      model.push(entry);
    }
    assert.equal(limiter.size, model.length);
  }
});
