import assert from "node:assert/strict";
import { ChurnCollector, type ChurnCollectorOptions, mallocTrim } from "./memory_release.ts";
import { sleep } from "../../tests/support/wait.ts";
import { fullGc } from "./full_gc.ts";

/** What a collector did: full collections, and (when counted) requested ones and releases. */
interface Counts {
  gcs: number;
  requests?: number;
  releases?: number;
}

/**
 * A collector that counts into `counts` (a request or a release only when
 * `counts` has its key), collecting every 10 closes and checking every 200
 * ms (1 s in the transport); `opts` overrides any of it.
 */
function counting(counts: Counts, opts: Partial<ChurnCollectorOptions> = {}): ChurnCollector {
  return new ChurnCollector({
    collectGarbage: () => counts.gcs++,
    requestCollection: counts.requests === undefined ? undefined : () => counts.requests!++,
    releaseMemory: counts.releases === undefined ? undefined : () => void counts.releases!++,
    gcAfterClosed: 10,
    lingerMs: 60_000,
    now: () => performance.now(),
    periodMs: 200,
    ...opts,
  });
}

/** A collector of full collections and releases, given back after 400 ms of quiet. */
function collector(drained: () => boolean, lingerMs = 60_000) {
  const counts = { gcs: 0, releases: 0 };
  const c = counting(counts, { drained, lingerMs, releaseAfterQuietMs: 400 });
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
    await sleep(700); // quiet for 400 ms: seen within 400-600 ms
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

Deno.test("#35.7: during a churn a collection is requested; when the last one freed no connection, the full one runs", async () => {
  const counts = { requests: 0, gcs: 0 };
  let now = 0;
  const c = counting(counts, {
    now: () => now,
    periodMs: 100_000, // the churn's end is never seen during the test
  });
  const held: object[] = []; // never collected: the requests free nothing
  const closeTen = () => {
    for (let i = 0; i < 10; i++) {
      const conn = {};
      held.push(conn);
      c.closed(conn);
    }
    now += 200_000;
  };
  try {
    closeTen();
    assert.deepEqual(counts, { requests: 1, gcs: 0 });
    closeTen(); // the request freed nothing: collected here and now
    assert.deepEqual(counts, { requests: 1, gcs: 1 });
    closeTen();
    assert.deepEqual(counts, { requests: 2, gcs: 1 });
    // This time the closed connections go: a collection frees them.
    held.length = 0;
    for (let i = 0; i < 20; i++) {
      fullGc()!();
      await sleep(10);
    }
    closeTen(); // the last request was seen to work: another request
    assert.deepEqual(counts, { requests: 3, gcs: 1 });
  } finally {
    c.stop();
  }
});

Deno.test("#35.7: what a churn left is collected as soon as it passed; memory goes back only after a quiet spell", async () => {
  const counts = { requests: 0, gcs: 0, releases: 0 };
  const c = counting(counts, { drained: () => true, periodMs: 100, releaseAfterQuietMs: 1000 });
  try {
    for (let i = 0; i < 15; i++) c.closed(); // a request at the 10th; 5 left
    assert.deepEqual(counts, { requests: 1, gcs: 0, releases: 0 });
    await sleep(450); // passed: its leftovers collected (the request freed nothing: a full one)
    assert.deepEqual(counts, { requests: 1, gcs: 1, releases: 0 });
    await sleep(300);
    for (let i = 0; i < 3; i++) c.closed(); // it comes back before 1 s of quiet
    await sleep(300); // passed again: its leftovers requested (the last full one worked)
    assert.deepEqual(counts, { requests: 2, gcs: 1, releases: 0 });
    await sleep(1000); // 1 s quiet: a full collection and the release
    assert.deepEqual(counts, { requests: 2, gcs: 2, releases: 1 });
    // What /metrics shows (spooky_quic_memory_steps_total).
    const runs = Object.fromEntries([...c.steps].map(([step, { count }]) => [step, count]));
    assert.deepEqual(runs, { request: 2, collect: 1, settle: 1, linger: 0 });
    assert.equal(c.state, "idle");
  } finally {
    c.stop();
  }
});

Deno.test("#35.5: a flood (closed connections never served) or a churn that left much memory behind gives it back as soon as it passed; a burst of served ones waits for the quiet spell", async () => {
  const MIB = 2 ** 20;
  const cases = [
    { grown: 300 * MIB, served: true, atOnce: true },
    { grown: 100 * MIB, served: true, atOnce: false },
    { grown: 100 * MIB, served: false, atOnce: true },
  ];
  for (const { grown, served, atOnce } of cases) {
    const what = `${grown / MIB} MiB more, ${served ? "served" : "a flood"}`;
    let resident = 100 * MIB;
    const counts = { gcs: 0, releases: 0 };
    const c = counting(counts, {
      drained: () => true,
      periodMs: 100,
      releaseAfterQuietMs: 1500,
      residentBytes: () => resident,
      releaseAtOnceAboveBytes: 192 * MIB,
    });
    try {
      for (let i = 0; i < 10; i++) c.closed({}, served); // the first close measured 100 MiB
      resident += grown;
      await sleep(400); // passed (seen within 100-200 ms)
      assert.equal(counts.releases, atOnce ? 1 : 0, `${what}: after 400 ms`);
      await sleep(1500); // quiet for 1.5 s: released either way
      assert.equal(counts.releases, 1, `${what}: after 1.9 s`);
    } finally {
      c.stop();
    }
  }
});
