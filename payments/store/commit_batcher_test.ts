import assert from "node:assert/strict";
import { CommitBatcher, isDatabaseLocked, keyId } from "./commit_batcher.ts";
import { StoreTimeoutError } from "./deadline.ts";

function counting(kv: Deno.Kv) {
  const commits: number[] = []; // checks per commit call
  const wrapped = Object.create(kv) as Deno.Kv;
  wrapped.atomic = () => {
    const op = kv.atomic();
    let checks = 0;
    const check = op.check.bind(op);
    op.check = (...c: Deno.AtomicCheck[]) => {
      checks += c.length;
      return check(...c);
    };
    const commit = op.commit.bind(op);
    op.commit = () => {
      commits.push(checks);
      return commit();
    };
    return op;
  };
  return { kv: wrapped, commits };
}

const isNew = (key: Deno.KvKey, value: unknown = 1) => ({
  checks: [{ key, versionstamp: null }],
  sets: [{ key, value }],
  deletes: [],
});

Deno.test("CommitBatcher: concurrent changes on disjoint keys share one commit", async () => {
  const kv = await Deno.openKv(":memory:");
  const c = counting(kv);
  const commits = new CommitBatcher(c.kv);
  const results = await Promise.all(
    Array.from({ length: 10 }, (_, i) => commits.commit(isNew(["k", i], i))),
  );
  assert.deepEqual(results, Array(10).fill(true));
  assert.equal(c.commits.length, 1);
  for (let i = 0; i < 10; i++) assert.equal((await kv.get(["k", i])).value, i);
  kv.close();
});

Deno.test("CommitBatcher: changes summing into one counter still share a commit", async () => {
  const kv = await Deno.openKv(":memory:");
  const c = counting(kv);
  const commits = new CommitBatcher(c.kv);
  const results = await Promise.all(
    Array.from(
      { length: 8 },
      (_, i) => commits.commit({ ...isNew(["k", i], i), sums: [{ key: ["counter"], n: 1n }] }),
    ),
  );
  assert.deepEqual(results, Array(8).fill(true));
  assert.equal(c.commits.length, 1);
  assert.equal((await kv.get<Deno.KvU64>(["counter"])).value?.value, 8n);
  // A change whose check fails adds nothing; the others still count.
  const mixed = await Promise.all([
    commits.commit({ ...isNew(["k", 0]), sums: [{ key: ["counter"], n: 1n }] }),
    commits.commit({ ...isNew(["k", 100]), sums: [{ key: ["counter"], n: 1n }] }),
  ]);
  assert.deepEqual(mixed, [false, true]);
  assert.equal((await kv.get<Deno.KvU64>(["counter"])).value?.value, 9n);
  kv.close();
});

Deno.test("CommitBatcher: changes on the same key never share a commit; exactly one wins", async () => {
  const kv = await Deno.openKv(":memory:");
  const c = counting(kv);
  const commits = new CommitBatcher(c.kv);
  const results = await Promise.all(
    Array.from({ length: 5 }, (_, i) => commits.commit(isNew(["same"], i))),
  );
  assert.deepEqual(results, [true, false, false, false, false]);
  assert.equal((await kv.get(["same"])).value, 0);
  assert.ok(c.commits.length >= 5);
  kv.close();
});

Deno.test("CommitBatcher: a failed check fails its change only; the others commit", async () => {
  const kv = await Deno.openKv(":memory:");
  await kv.set(["taken"], "old");
  const commits = new CommitBatcher(kv);
  const results = await Promise.all([
    commits.commit(isNew(["a"])),
    commits.commit(isNew(["taken"], "new")),
    commits.commit(isNew(["b"])),
    commits.commit({ checks: [], sets: [], deletes: [["a-deleted-key"]] }),
  ]);
  assert.deepEqual(results, [true, false, true, true]);
  assert.equal((await kv.get(["taken"])).value, "old");
  assert.equal((await kv.get(["a"])).value, 1);
  assert.equal((await kv.get(["b"])).value, 1);
  kv.close();
});

Deno.test("CommitBatcher: a refused shared commit is retried change by change; errors stay with their change", async () => {
  const kv = await Deno.openKv(":memory:");
  const commits = new CommitBatcher(kv);
  const tooBig = { key: ["big"], value: new Uint8Array(70_000) }; // over the value size limit
  const results = await Promise.allSettled([
    commits.commit(isNew(["x"])),
    commits.commit({ checks: [], sets: [tooBig], deletes: [] }),
    commits.commit(isNew(["y"])),
  ]);
  assert.equal(results[0].status === "fulfilled" && results[0].value, true);
  assert.equal(results[1].status, "rejected");
  assert.equal(results[2].status === "fulfilled" && results[2].value, true);
  kv.close();
});

Deno.test("CommitBatcher: respects the check limit and expireIn; maxChanges 1 commits alone", async () => {
  const kv = await Deno.openKv(":memory:");
  const c = counting(kv);
  const commits = new CommitBatcher(c.kv, { maxChecks: 4 });
  await Promise.all(Array.from({ length: 8 }, (_, i) => commits.commit(isNew(["l", i]))));
  assert.ok(c.commits.every((n) => n <= 4), JSON.stringify(c.commits));
  assert.ok(c.commits.length >= 2);
  const alone = counting(kv);
  const single = new CommitBatcher(alone.kv, { maxChanges: 1 });
  const ok = await Promise.all([
    single.commit({ checks: [], sets: [{ key: ["e"], value: 1, expireIn: 60_000 }], deletes: [] }),
    single.commit(isNew(["f"])),
  ]);
  assert.deepEqual(ok, [true, true]);
  assert.deepEqual(alone.commits, [0, 1]);
  assert.equal((await kv.get(["e"])).value, 1);
  kv.close();
});

Deno.test("keyId: equal keys give equal names; distinct keys mostly distinct ones", () => {
  const k = ["a", 1, 2n, true, new Uint8Array([1])];
  assert.equal(keyId(k), keyId(["a", 1, 2n, true, new Uint8Array([1])]));
  const names = [["a", "b"], ["ab"], ["a:b"], ["charge", "x"], ["charge_req", "x"]].map(keyId);
  assert.equal(new Set(names).size, names.length);
});

Deno.test("CommitBatcher: keys that share a name are kept apart, and both commit", async () => {
  const kv = await Deno.openKv(":memory:");
  const c = counting(kv);
  const commits = new CommitBatcher(c.kv);
  const ok = await Promise.all([commits.commit(isNew(["1"])), commits.commit(isNew([1]))]);
  assert.deepEqual(ok, [true, true]);
  assert.equal(c.commits.length, 2);
  kv.close();
});

Deno.test("CommitBatcher: a store refusing big shared commits gets smaller ones", async () => {
  const kv = await Deno.openKv(":memory:");
  const c = counting(kv);
  const limited = Object.create(c.kv) as Deno.Kv;
  limited.atomic = () => {
    const op = c.kv.atomic();
    let checks = 0;
    const check = op.check.bind(op);
    op.check = (...x: Deno.AtomicCheck[]) => {
      checks += x.length;
      return check(...x);
    };
    const commit = op.commit.bind(op);
    op.commit = () => checks > 3 ? Promise.reject(new TypeError("too many checks")) : commit();
    return op;
  };
  const commits = new CommitBatcher(limited);
  const first = await Promise.all(
    Array.from({ length: 8 }, (_, i) => commits.commit(isNew(["a", i]))),
  );
  assert.deepEqual(first, Array(8).fill(true));
  c.commits.length = 0;
  const second = await Promise.all(
    Array.from({ length: 8 }, (_, i) => commits.commit(isNew(["b", i]))),
  );
  assert.deepEqual(second, Array(8).fill(true));
  assert.ok(c.commits.every((n) => n <= 4), JSON.stringify(c.commits));
  kv.close();
});

/** A KV handle whose next `locked` commits fail as SQLite does when another process holds the lock. */
function lockedFor(kv: Deno.Kv, locked: number) {
  const state = { locked, attempts: 0 };
  const wrapped = Object.create(kv) as Deno.Kv;
  wrapped.atomic = () => {
    const op = kv.atomic();
    const commit = op.commit.bind(op);
    op.commit = () => {
      state.attempts++;
      if (state.locked-- > 0) return Promise.reject(new TypeError("database is locked"));
      return commit();
    };
    return op;
  };
  return { kv: wrapped, state };
}

Deno.test("CommitBatcher: a commit finding the database locked is tried again, and then commits", async () => {
  const kv = await Deno.openKv(":memory:");
  for (const maxChanges of [1, 16]) {
    const l = lockedFor(kv, 5);
    const commits = new CommitBatcher(l.kv, { maxChanges });
    const ok = await Promise.all([
      commits.commit(isNew(["locked", maxChanges, 1])),
      commits.commit(isNew(["locked", maxChanges, 2])),
    ]);
    assert.deepEqual(ok, [true, true]);
    assert.ok(l.state.attempts >= 6);
    assert.equal((await kv.get(["locked", maxChanges, 2])).value, 1);
  }
  kv.close();
});

Deno.test("CommitBatcher: a database locked for the whole wait fails with that error, having written nothing", async () => {
  const kv = await Deno.openKv(":memory:");
  const l = lockedFor(kv, Infinity);
  const commits = new CommitBatcher(l.kv, { lockedWaitMs: 50 });
  const started = performance.now();
  const results = await Promise.allSettled([
    commits.commit(isNew(["never", 1])),
    commits.commit(isNew(["never", 2])),
  ]);
  assert.ok(results.every((r) => r.status === "rejected" && isDatabaseLocked(r.reason)));
  assert.ok(performance.now() - started < 2_000);
  assert.equal((await kv.get(["never", 1])).versionstamp, null);
  assert.equal(isDatabaseLocked(new TypeError("database is locked")), true);
  assert.equal(isDatabaseLocked(new TypeError("Value too large")), false);
  assert.equal(isDatabaseLocked("database is locked"), false);
  kv.close();
});

Deno.test("CommitBatcher: a commit the store never answers fails at the deadline; later commits still go", async () => {
  const kv = await Deno.openKv(":memory:");
  let hang = true;
  const wrapped = Object.create(kv) as Deno.Kv;
  wrapped.atomic = () => {
    const op = kv.atomic();
    if (hang) {
      hang = false;
      op.commit = () => new Promise(() => {});
    }
    return op;
  };
  const commits = new CommitBatcher(wrapped, { deadlineMs: 50 });
  const stuck = await Promise.allSettled([
    commits.commit(isNew(["t", 1])),
    commits.commit(isNew(["t", 2])),
  ]);
  assert.ok(stuck.every((r) => r.status === "rejected" && r.reason instanceof StoreTimeoutError));
  assert.equal(await commits.commit(isNew(["t", 3])), true);
  assert.equal((await kv.get(["t", 3])).value, 1);
  kv.close();
});
