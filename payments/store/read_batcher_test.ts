import assert from "node:assert/strict";
import { StoreTimeoutError } from "./deadline.ts";
import { MAX_BATCH, ReadBatcher } from "./read_batcher.ts";

function counting(kv: Deno.Kv) {
  const calls: number[] = [];
  const wrapped = Object.create(kv) as Deno.Kv;
  wrapped.get = ((key: Deno.KvKey) => {
    calls.push(1);
    return kv.get(key);
  }) as Deno.Kv["get"];
  wrapped.getMany = ((keys: Deno.KvKey[]) => {
    calls.push(keys.length);
    return kv.getMany(keys);
  }) as Deno.Kv["getMany"];
  return { kv: wrapped, calls };
}

Deno.test("ReadBatcher: concurrent reads share getMany calls of at most 10 keys", async () => {
  const kv = await Deno.openKv(":memory:");
  for (let i = 0; i < 25; i++) await kv.set(["k", i], { i });
  const c = counting(kv);
  const reads = new ReadBatcher(c.kv);
  const keys = Array.from({ length: 25 }, (_, i) => ["k", i]);
  const got = await Promise.all([...keys, ["missing"]].map((k) => reads.get<{ i: number }>(k)));
  assert.deepEqual(got.slice(0, 25).map((e) => e.value?.i), keys.map((_, i) => i));
  assert.equal(got[25].versionstamp, null);
  assert.equal(got[25].value, null);
  assert.deepEqual(got[3].key, ["k", 3]);
  assert.ok(got[3].versionstamp);
  assert.equal(c.calls.reduce((a, b) => a + b, 0), 26);
  assert.ok(c.calls.every((n) => n <= MAX_BATCH));
  assert.ok(c.calls.length <= 4, `26 reads in ${c.calls.length} calls`);
  kv.close();
});

Deno.test("ReadBatcher: a read sees a write committed just before it (no caching)", async () => {
  const kv = await Deno.openKv(":memory:");
  const reads = new ReadBatcher(kv);
  assert.equal((await reads.get(["x"])).value, null);
  await kv.set(["x"], 1);
  assert.equal((await reads.get(["x"])).value, 1);
  const other = await Deno.openKv(":memory:"); // unrelated store: no cross-talk
  await kv.set(["x"], 2);
  const [a, b] = await Promise.all([reads.get(["x"]), new ReadBatcher(other).get(["x"])]);
  assert.equal(a.value, 2);
  assert.equal(b.value, null);
  other.close();
  kv.close();
});

Deno.test("ReadBatcher: one bad key fails alone, not its batch", async () => {
  const kv = await Deno.openKv(":memory:");
  await kv.set(["ok"], "v");
  const reads = new ReadBatcher(kv);
  const bad = ["x".repeat(5000)]; // over the key size limit
  const [good, failed] = await Promise.allSettled([reads.get(["ok"]), reads.get(bad)]);
  assert.equal(good.status, "fulfilled");
  assert.equal(good.status === "fulfilled" && good.value.value, "v");
  assert.equal(failed.status, "rejected");
  kv.close();
});

Deno.test("ReadBatcher: reads the store never answers fail at the deadline; later reads still go", async () => {
  const kv = await Deno.openKv(":memory:");
  await kv.set(["r"], 1);
  let hang = true;
  const wrapped = Object.create(kv) as Deno.Kv;
  const stall = <T>(real: () => Promise<T>): Promise<T> => {
    if (!hang) return real();
    hang = false;
    return new Promise(() => {});
  };
  wrapped.get = ((key: Deno.KvKey) => stall(() => kv.get(key))) as Deno.Kv["get"];
  wrapped.getMany = ((keys: Deno.KvKey[]) => stall(() => kv.getMany(keys))) as Deno.Kv["getMany"];
  const reads = new ReadBatcher(wrapped, 1, 50);
  const stuck = await Promise.allSettled([reads.get(["r"]), reads.get(["s"])]);
  assert.ok(stuck.every((r) => r.status === "rejected" && r.reason instanceof StoreTimeoutError));
  assert.equal((await reads.get(["r"])).value, 1);
  kv.close();
});
