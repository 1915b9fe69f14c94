import assert from "node:assert/strict";
import { backends, request } from "./_test_util.ts";
import { ConsistentHashBalancer } from "./consistent_hash.ts";
import { createBalancer } from "./create_balancer.ts";
import { BalancerConfigError } from "./types.ts";

const all = () => true;
const KEYS = Array.from({ length: 10_000 }, (_, i) => `session-${i}`);

function owners(lb: ConsistentHashBalancer): string[] {
  return KEYS.map((k) => lb.candidatesForKey(k, all)[0].id);
}

Deno.test("consistent-hash: the same key always maps to the same backend", () => {
  const list = backends(["a", "b", "c", "d"], [100, 100, 100, 100]);
  const lb = createBalancer({ type: "consistent-hash", key: "header:X-User" }, list);
  const again = createBalancer({ type: "consistent-hash", key: "header:X-User" }, list);
  for (let i = 0; i < 1000; i++) {
    const req = request("/", { "x-user": `u${i}` });
    const first = lb.candidates(req, all).map((b) => b.id);
    assert.deepEqual(lb.candidates(req, all).map((b) => b.id), first);
    assert.deepEqual(again.candidates(req, all).map((b) => b.id), first);
  }
});

Deno.test("consistent-hash: the ring does not depend on the order of the backend list", () => {
  const list = backends(["a", "b", "c", "d"], [100, 50, 100, 200]);
  const reversed = [...list].reverse();
  assert.deepEqual(
    owners(new ConsistentHashBalancer(list)),
    owners(new ConsistentHashBalancer(reversed)),
  );
});

Deno.test("consistent-hash: removing 1 of 4 backends remaps <= 30% of keys, only its own", () => {
  const list = backends(["a", "b", "c", "d"], [100, 100, 100, 100]);
  const before = owners(new ConsistentHashBalancer(list));
  const after = owners(new ConsistentHashBalancer(list.filter((b) => b.id !== "c")));
  let moved = 0;
  for (let i = 0; i < KEYS.length; i++) {
    if (before[i] === after[i]) continue;
    moved++;
    assert.equal(before[i], "c", `${KEYS[i]} moved from ${before[i]} to ${after[i]}`);
  }
  assert.ok(moved <= 0.3 * KEYS.length, `${moved} keys moved`);
  assert.ok(moved > 0.15 * KEYS.length, `${moved} keys moved: about 1/4 expected`);
});

Deno.test("consistent-hash: adding a 5th backend only takes keys for itself (~1/5)", () => {
  const list = backends(["a", "b", "c", "d", "e"], [100, 100, 100, 100, 100]);
  const before = owners(new ConsistentHashBalancer(list.slice(0, 4)));
  const after = owners(new ConsistentHashBalancer(list));
  let moved = 0;
  for (let i = 0; i < KEYS.length; i++) {
    if (before[i] === after[i]) continue;
    moved++;
    assert.equal(after[i], "e");
  }
  assert.ok(moved > 0.15 * KEYS.length && moved < 0.25 * KEYS.length, `${moved} keys moved`);
});

Deno.test("consistent-hash: an unavailable owner's keys go to the next backend on the ring", () => {
  const list = backends(["a", "b", "c", "d"], [100, 100, 100, 100]);
  const lb = new ConsistentHashBalancer(list);
  let spread = new Set<string>();
  for (const key of KEYS.slice(0, 2000)) {
    const full = lb.candidatesForKey(key, all).map((b) => b.id);
    const withoutOwner = lb.candidatesForKey(key, (id) => id !== full[0]).map((b) => b.id);
    // Same walk, the owner skipped: the retry order is the failover order.
    assert.deepEqual(withoutOwner, full.slice(1));
    if (full[0] === "a") spread.add(withoutOwner[0]);
  }
  // The keys of a dead backend are spread over all the others, not dumped on one.
  assert.deepEqual([...spread].sort(), ["b", "c", "d"]);
  spread = new Set();
});

Deno.test("consistent-hash: points are proportional to weight (at least 1 each)", () => {
  assert.equal(new ConsistentHashBalancer(backends(["a"], [100])).ringSize, 1000);
  assert.equal(new ConsistentHashBalancer(backends(["a", "b"], [100, 50])).ringSize, 1500);
  assert.equal(new ConsistentHashBalancer(backends(["a"], [0.01])).ringSize, 1);
  assert.equal(
    new ConsistentHashBalancer(backends(["a"], [100]), { pointsPerBackend: 160 }).ringSize,
    160,
  );
});

Deno.test("consistent-hash: a weight change only moves keys to/from that backend", () => {
  const list = backends(["a", "b", "c", "d"], [100, 100, 100, 100]);
  const before = owners(new ConsistentHashBalancer(list));
  const heavier = list.map((b) => (b.id === "b" ? { ...b, weight: 200 } : b));
  const after = owners(new ConsistentHashBalancer(heavier));
  let moved = 0;
  for (let i = 0; i < KEYS.length; i++) {
    if (before[i] === after[i]) continue;
    moved++;
    assert.equal(after[i], "b");
  }
  // b goes from 1/4 to 2/5 of the keys.
  assert.ok(moved > 0.1 * KEYS.length && moved < 0.2 * KEYS.length, `${moved} keys moved`);
});

Deno.test("consistent-hash: cookie key, with a malformed Cookie header", () => {
  const lb = createBalancer(
    { type: "consistent-hash", key: "cookie:sid" },
    backends(["a", "b", "c"], [100, 100, 100]),
  );
  const ref = new ConsistentHashBalancer(backends(["a", "b", "c"], [100, 100, 100]));
  for (let i = 0; i < 300; i++) {
    const expected = ref.candidatesForKey(`s${i}`, all)[0].id;
    const header = `garbage; =x; theme=dark ;  sid = s${i} ; sid=other`;
    assert.equal(lb.candidates(request("/", { cookie: header }), all)[0].id, expected);
  }
});

Deno.test("consistent-hash: query key, with malformed percent-encoding used raw", () => {
  const lb = createBalancer(
    { type: "consistent-hash", key: "query:user" },
    backends(["a", "b", "c"], [100, 100, 100]),
  );
  const ref = new ConsistentHashBalancer(backends(["a", "b", "c"], [100, 100, 100]));
  for (let i = 0; i < 300; i++) {
    // "%zz" is malformed: the whole value is used raw (only "+" becomes a space).
    const expected = ref.candidatesForKey(`u %25${i}%zz`, all)[0].id;
    const req = request(`/x?a=1&&user=u+%25${i}%zz&user=other`);
    assert.equal(lb.candidates(req, all)[0].id, expected);
  }
});

Deno.test("consistent-hash: path key ignores the query string", () => {
  const lb = createBalancer(
    { type: "consistent-hash" },
    backends(["a", "b", "c"], [100, 100, 100]),
  );
  for (let i = 0; i < 300; i++) {
    const plain = lb.candidates(request(`/p/${i}`), all)[0].id;
    assert.equal(lb.candidates(request(`/p/${i}?v=${i * 7}`), all)[0].id, plain);
  }
});

Deno.test("consistent-hash: absent key falls back to smooth weighted round-robin", () => {
  const list = backends(["a", "b", "c"], [200, 100, 100]);
  const lb = createBalancer({ type: "consistent-hash", key: "header:x-user" }, list);
  const rr = createBalancer({ type: "round-robin" }, list);
  const noKey = [request("/"), request("/", { "x-user": "   " }), request("/", { "x-user": "" })];
  const seq: string[] = [];
  for (let i = 0; i < 12; i++) {
    const got = lb.candidates(noKey[i % 3], all).map((b) => b.id);
    assert.deepEqual(got, rr.candidates(request("/"), all).map((b) => b.id));
    seq.push(got[0]);
  }
  // Spread by weight (2:1:1), not piled on one backend.
  assert.equal(seq.filter((id) => id === "a").length, 6);
  assert.equal(seq.filter((id) => id === "b").length, 3);
  assert.equal(seq.filter((id) => id === "c").length, 3);
});

Deno.test("consistent-hash: bad keys are rejected when the balancer is built", () => {
  for (const key of ["ip", "header:", "cookie", "query: ", "foo:bar"]) {
    assert.throws(
      () => createBalancer({ type: "consistent-hash", key }, backends(["a"], [100])),
      BalancerConfigError,
      key,
    );
  }
});
