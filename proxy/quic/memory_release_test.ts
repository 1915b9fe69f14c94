import assert from "node:assert/strict";
import { ChurnCollector, mallocTrim } from "./memory_release.ts";
import { sleep } from "../../tests/support/wait.ts";

/** A collector checking every 200 ms (1 s in the transport). */
function collector(drained: () => boolean, lingerMs = 60_000) {
  const counts = { gcs: 0, releases: 0 };
  const c = new ChurnCollector({
    collectGarbage: () => counts.gcs++,
    releaseMemory: () => void counts.releases++,
    gcAfterClosed: 10,
    lingerMs,
    drained,
    now: () => performance.now(),
    periodMs: 200,
  });
  return { c, counts };
}

Deno.test("#35.5: a churn of closed connections is collected during it, released once it passed, and again once what it left is gone", async () => {
  let drained = false;
  const { c, counts } = collector(() => drained);
  try {
    for (let i = 0; i < 9; i++) c.closed();
    assert.deepEqual(counts, { gcs: 0, releases: 0 });
    assert.equal(c.state, "idle");
    c.closed(); // the 10th
    assert.deepEqual(counts, { gcs: 1, releases: 0 });
    assert.equal(c.state, "churning");
    await sleep(700); // a quiet period: the churn has passed (seen within 200-400 ms)
    assert.deepEqual(counts, { gcs: 2, releases: 1 });
    assert.equal(c.state, "lingering");
    await sleep(600); // the handshakes it left are still held
    assert.equal(counts.releases, 1);
    drained = true;
    await sleep(600);
    assert.deepEqual(counts, { gcs: 3, releases: 2 });
    assert.equal(c.state, "idle");
  } finally {
    c.stop();
  }
});

Deno.test("#35.5: nothing is released while the churn goes on; the second release comes by lingerMs at the latest", async () => {
  const { c, counts } = collector(() => false, 1500);
  try {
    const until = performance.now() + 1000;
    while (performance.now() < until) {
      for (let i = 0; i < 10; i++) c.closed();
      await sleep(20);
    }
    assert.equal(counts.releases, 0);
    assert.equal(c.state, "churning");
    assert.ok(counts.gcs >= 2, `${counts.gcs} collections`);
    await sleep(900); // seen passed within 200-400 ms
    assert.equal(counts.releases, 1);
    await sleep(1700); // lingerMs (1.5 s) passed, though never drained
    assert.equal(counts.releases, 2);
    assert.equal(c.state, "idle");
  } finally {
    c.stop();
  }
});

Deno.test("#35.5: stop() ends a churn's timers (none outlives the transport)", async () => {
  const { c, counts } = collector(() => true);
  for (let i = 0; i < 10; i++) c.closed();
  c.stop();
  assert.equal(c.state, "idle");
  await sleep(600);
  assert.equal(counts.releases, 0);
});

Deno.test("#35.5: malloc_trim is reachable through FFI on this (glibc) machine", async () => {
  if (Deno.build.os !== "linux") return;
  const trim = mallocTrim();
  assert.equal(typeof trim, "function");
  await trim!();
});

Deno.test("#35.5: a churn that leaves nothing held is released once", async () => {
  const { c, counts } = collector(() => true);
  try {
    for (let i = 0; i < 10; i++) c.closed();
    await sleep(700);
    assert.deepEqual(counts, { gcs: 2, releases: 1 });
    assert.equal(c.state, "idle");
    await sleep(600);
    assert.equal(counts.releases, 1);
  } finally {
    c.stop();
  }
});
