import assert from "node:assert/strict";
import { StoreTimeoutError } from "./deadline.ts";
import { MAX_MISSES, ViewCache } from "./view_cache.ts";

const EPOCH = ["epoch"];

/** A KV handle recording the keys of every getMany call. */
function counting(kv: Deno.Kv) {
  const calls: Deno.KvKey[][] = [];
  const wrapped = Object.create(kv) as Deno.Kv;
  wrapped.getMany = ((keys: Deno.KvKey[]) => {
    calls.push(keys);
    return kv.getMany(keys);
  }) as Deno.Kv["getMany"];
  return { kv: wrapped, calls };
}

/** Write `value` at `key` and bump the epoch, as a changing commit must. */
async function change(kv: Deno.Kv, key: Deno.KvKey, value: unknown) {
  const r = await kv.atomic().set(key, value).sum(EPOCH, 1n).commit();
  assert.ok(r.ok);
}

Deno.test("ViewCache: values are read once; later reads cost one epoch read per batch", async () => {
  const kv = await Deno.openKv(":memory:");
  for (let i = 0; i < 20; i++) await kv.set(["v", i], `value ${i}`);
  const c = counting(kv);
  const views = new ViewCache(c.kv, EPOCH);
  const keys = Array.from({ length: 20 }, (_, i) => ["v", i]);
  const first = await Promise.all(keys.map((k) => views.get<string>(k)));
  assert.deepEqual(first, keys.map((_, i) => `value ${i}`));
  // Every call reads the epoch plus at most MAX_MISSES values, each value once.
  assert.ok(c.calls.every((ks) => ks.length <= MAX_MISSES + 1 && ks[0][0] === "epoch"));
  assert.equal(c.calls.reduce((n, ks) => n + ks.length - 1, 0), 20);
  assert.equal(views.size, 20);

  c.calls.length = 0;
  const again = await Promise.all([...keys, ...keys].map((k) => views.get<string>(k)));
  assert.deepEqual(again, [...first, ...first]);
  assert.deepEqual(c.calls, [[EPOCH]]);
  kv.close();
});

/** Two handles on one KV file (two SQLite connections, as two processes have). */
async function withSharedFile(fn: (a: Deno.Kv, b: Deno.Kv) => Promise<void>) {
  const dir = await Deno.makeTempDir();
  const a = await Deno.openKv(`${dir}/kv.sqlite`);
  const b = await Deno.openKv(`${dir}/kv.sqlite`);
  try {
    await fn(a, b);
  } finally {
    a.close();
    b.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("ViewCache: a change committed by another handle on the same file is seen", async () => {
  await withSharedFile(async (a, b) => {
    const views = new ViewCache(a, EPOCH);
    await b.set(["v"], "one");
    assert.equal(await views.get(["v"]), "one");
    await change(b, ["v"], "two");
    assert.equal(await views.get(["v"]), "two");
    // The contract is the epoch: a write that skips it is not seen, which
    // shows the value really is served from memory.
    await b.set(["v"], "three (no bump)");
    assert.equal(await views.get(["v"]), "two");
    await change(b, ["v"], "four");
    assert.equal(await views.get(["v"]), "four");
  });
});

Deno.test("ViewCache: absent keys are not cached (a later creation needs no bump)", async () => {
  const kv = await Deno.openKv(":memory:");
  const views = new ViewCache(kv, EPOCH);
  assert.equal(await views.get(["new"]), null);
  await kv.set(["new"], "created");
  assert.equal(await views.get(["new"]), "created");
  assert.equal(views.size, 1);
  kv.close();
});

Deno.test("ViewCache: reads racing changes never return a value older than one committed before them", async () => {
  await withSharedFile(async (reader, writer) => {
    const views = new ViewCache(reader, EPOCH);
    await writer.set(["n"], 0);
    let committed = 0;
    let stop = false;
    const writes = (async () => {
      for (let i = 1; i <= 150; i++) {
        await change(writer, ["n"], i);
        committed = i;
      }
      stop = true;
    })();
    let checked = 0;
    const readers = Array.from({ length: 8 }, async () => {
      while (!stop) {
        const floor = committed;
        const got = await views.get<number>(["n"]);
        assert.ok(got !== null && got >= floor, `read ${got} after ${floor} was committed`);
        checked++;
      }
    });
    await Promise.all([writes, ...readers]);
    assert.ok(checked > 150, `${checked} reads checked`);
    assert.equal(await views.get(["n"]), 150);
  });
});

Deno.test("ViewCache: bounded; the oldest values go first", async () => {
  const kv = await Deno.openKv(":memory:");
  for (let i = 0; i < 12; i++) await kv.set(["v", i], i);
  const views = new ViewCache(kv, EPOCH, { maxEntries: 5 });
  for (let i = 0; i < 12; i++) assert.equal(await views.get(["v", i]), i);
  assert.equal(views.size, 5);
  const c = counting(kv);
  const fresh = new ViewCache(c.kv, EPOCH, { maxEntries: 5 });
  for (let i = 0; i < 12; i++) await fresh.get(["v", i]);
  c.calls.length = 0;
  assert.equal(await fresh.get(["v", 11]), 11); // kept: epoch only
  assert.equal(await fresh.get(["v", 0]), 0); // dropped: read again
  assert.deepEqual(c.calls, [[EPOCH], [EPOCH, ["v", 0]]]);
  kv.close();
});

Deno.test("ViewCache: one bad key fails alone, not its batch", async () => {
  const kv = await Deno.openKv(":memory:");
  await kv.set(["ok"], "v");
  const views = new ViewCache(kv, EPOCH);
  const bad = ["x".repeat(5000)]; // over the key size limit
  const [good, failed] = await Promise.allSettled([views.get(["ok"]), views.get(bad)]);
  assert.deepEqual(good, { status: "fulfilled", value: "v" });
  assert.equal(failed.status, "rejected");
  kv.close();
});

Deno.test("ViewCache: keeps the derived value; derive runs once per value read from the store", async () => {
  const kv = await Deno.openKv(":memory:");
  await kv.set(["rec", "a"], { n: 1 });
  await kv.set(["rec", "bad"], { n: -1 });
  const views = new ViewCache(kv, EPOCH);
  let derived = 0;
  const toJson = (v: unknown) => {
    derived++;
    if ((v as { n: number }).n < 0) throw new Error("cannot derive");
    return JSON.stringify(v);
  };
  const [a, a2, bad, none] = await Promise.allSettled([
    views.get(["rec", "a"], toJson),
    views.get(["rec", "a"], toJson),
    views.get(["rec", "bad"], toJson),
    views.get(["rec", "none"], toJson),
  ]);
  assert.deepEqual(a, { status: "fulfilled", value: '{"n":1}' });
  assert.deepEqual(a2, a);
  // A derive that throws fails the reads of its key only; absent is null, not derived.
  assert.equal(bad.status, "rejected");
  assert.deepEqual(none, { status: "fulfilled", value: null });
  assert.equal(derived, 2);
  // A hit derives nothing; a change (with its bump) is derived again.
  assert.equal(await views.get(["rec", "a"], toJson), '{"n":1}');
  assert.equal(derived, 2);
  await change(kv, ["rec", "a"], { n: 2 });
  assert.equal(await views.get(["rec", "a"], toJson), '{"n":2}');
  assert.equal(derived, 3);
  kv.close();
});

Deno.test("ViewCache: reads the store never answers fail at the deadline, cached or not; later reads still go", async () => {
  const kv = await Deno.openKv(":memory:");
  await kv.set(["v"], "one");
  let hang = false;
  const wrapped = Object.create(kv) as Deno.Kv;
  wrapped.getMany = ((keys: Deno.KvKey[]) => {
    if (!hang) return kv.getMany(keys);
    hang = false;
    return new Promise(() => {});
  }) as Deno.Kv["getMany"];
  const views = new ViewCache(wrapped, EPOCH, { deadlineMs: 50, maxInFlight: 1 });
  assert.equal(await views.get(["v"]), "one");
  hang = true;
  // Even a cached value needs the epoch read: no answer, no value.
  const stuck = await Promise.allSettled([views.get(["v"]), views.get(["w"])]);
  assert.ok(stuck.every((r) => r.status === "rejected" && r.reason instanceof StoreTimeoutError));
  assert.equal(await views.get(["v"]), "one");
  kv.close();
});
