/**
 * Conformance suite run against every load-balancing algorithm (swappable
 * strategies share one suite: docs/architecture.md §7).
 */

import assert from "node:assert/strict";
import fc from "fast-check";
import { backends, request, seededRandom } from "./_test_util.ts";
import { createBalancer } from "./create_balancer.ts";
import { LoadTable } from "./load.ts";
import type { BackendRef, Balancer, BalanceRequest, LoadBalancingConfig } from "./types.ts";

interface Subject {
  readonly name: string;
  readonly config: LoadBalancingConfig;
  /** The i-th request of a run: the hash key varies with i. */
  readonly request: (i: number) => BalanceRequest;
  /**
   * Allowed relative deviation of each backend's share from its weight share
   * over 10,000 picks: 5 % for every algorithm. Inputs are deterministic
   * (seeded PRNG, fixed keys), so the test cannot flake. For the hash ring the
   * deviation is the ring's own imbalance (about 1/√points, ≈3 % at weight
   * 100) plus the sampling noise of 10,000 distinct keys.
   */
  readonly tolerance: number;
  /** Whether it reads the pool's load (`least-request`, `latency`). */
  readonly loadAware?: boolean;
}

const SUBJECTS: readonly Subject[] = [
  { name: "random", config: { type: "random" }, request: () => request("/"), tolerance: 0.05 },
  {
    name: "round-robin",
    config: { type: "round-robin" },
    request: () => request("/"),
    tolerance: 0.05,
  },
  {
    name: "consistent-hash (header)",
    config: { type: "consistent-hash", key: "header:x-user" },
    request: (i) => request("/", { "x-user": `user-${i}` }),
    tolerance: 0.05,
  },
  {
    name: "consistent-hash (path)",
    config: { type: "consistent-hash", key: "path" },
    request: (i) => request(`/items/${i}?page=2`),
    tolerance: 0.05,
  },
  {
    name: "least-request",
    config: { type: "least-request" },
    request: () => request("/"),
    tolerance: 0.05,
    loadAware: true,
  },
  {
    name: "latency",
    config: { type: "latency" },
    request: () => request("/"),
    tolerance: 0.05,
    loadAware: true,
  },
];

const PICKS = 10_000;

function make(s: Subject, list: readonly BackendRef[], load?: LoadTable): Balancer {
  return createBalancer(s.config, list, { random: seededRandom(42), load });
}

for (const s of SUBJECTS) {
  Deno.test(`${s.name}: ${PICKS} picks split by weight; drained and unavailable never chosen`, () => {
    // a, b, c available (100:150:250); d unavailable; e drained (weight 0).
    const list = backends(["a", "b", "c", "d", "e"], [100, 150, 250, 400, 0]);
    const lb = make(s, list);
    const available = (id: string) => id !== "d";
    const counts = new Map<string, number>();
    for (let i = 0; i < PICKS; i++) {
      const id = lb.candidates(s.request(i), available)[0].id;
      counts.set(id, (counts.get(id) ?? 0) + 1);
    }
    assert.equal(counts.get("d"), undefined);
    assert.equal(counts.get("e"), undefined);
    for (const [id, weight] of [["a", 100], ["b", 150], ["c", 250]] as const) {
      const expected = (PICKS * weight) / 500;
      const got = counts.get(id) ?? 0;
      assert.ok(
        Math.abs(got - expected) <= expected * s.tolerance,
        `${id}: ${got} picks, expected ${expected} ± ${s.tolerance * 100}%`,
      );
    }
  });

  Deno.test(`${s.name}: candidates are ordered, unique and cover all available backends`, () => {
    const list = backends(["a", "b", "c", "d", "e", "f"], [100, 1, 300, 100, 0, 50]);
    const lb = make(s, list);
    const down = new Set(["d"]);
    for (let i = 0; i < 500; i++) {
      const calls: string[] = [];
      const order = lb.candidates(s.request(i), (id) => {
        calls.push(id);
        return !down.has(id);
      }).map((b) => b.id);
      assert.deepEqual([...order].sort(), ["a", "b", "c", "f"]);
      assert.equal(new Set(calls).size, calls.length, "isAvailable asked once per backend");
    }
  });

  Deno.test(`${s.name}: returned refs are the configured backends`, () => {
    const list = backends(["a", "b"], [100, 100]);
    const order = make(s, list).candidates(s.request(1), () => true);
    for (const b of order) assert.ok(list.includes(b));
  });

  Deno.test(`${s.name}: empty list when nothing is available`, () => {
    const list = backends(["a", "b", "c"], [100, 100, 0]);
    const lb = make(s, list);
    for (let i = 0; i < 20; i++) assert.deepEqual(lb.candidates(s.request(i), () => false), []);
    assert.deepEqual(make(s, []).candidates(s.request(0), () => true), []);
    assert.deepEqual(
      make(s, backends(["x", "y"], [0, 0])).candidates(s.request(0), () => true),
      [],
    );
  });

  Deno.test(`${s.name}: a single available backend is always chosen`, () => {
    const lb = make(s, backends(["a", "b", "c"], [100, 200, 300]));
    for (let i = 0; i < 200; i++) {
      assert.deepEqual(lb.candidates(s.request(i), (id) => id === "b").map((b) => b.id), ["b"]);
    }
  });

  Deno.test(`${s.name}: duplicate ids are returned once (first wins)`, () => {
    const list: BackendRef[] = [
      { id: "a", address: "10.0.0.1:80", weight: 100 },
      { id: "a", address: "10.0.0.2:80", weight: 100 },
      { id: "b", address: "10.0.0.3:80", weight: 100 },
    ];
    const lb = make(s, list);
    for (let i = 0; i < 100; i++) {
      const order = lb.candidates(s.request(i), () => true);
      assert.deepEqual(order.map((b) => b.id).sort(), ["a", "b"]);
      assert.equal(order.find((b) => b.id === "a")?.address, "10.0.0.1:80");
    }
  });

  Deno.test(`${s.name}: availability changes take effect on the next call`, () => {
    const lb = make(s, backends(["a", "b", "c"], [100, 100, 100]));
    const down = new Set<string>();
    for (let i = 0; i < 300; i++) {
      if (i === 100) down.add("a");
      if (i === 200) down.delete("a");
      const order = lb.candidates(s.request(i), (id) => !down.has(id));
      assert.equal(order.length, 3 - down.size);
      assert.ok(!order.some((b) => down.has(b.id)));
    }
  });
}

for (const s of SUBJECTS) {
  Deno.test(`${s.name}: a re-entrant call from isAvailable does not corrupt the outer one`, () => {
    const list = backends(["a", "b", "c", "d"], [100, 200, 100, 50]);
    const lb = make(s, list);
    for (let i = 0; i < 50; i++) {
      const order = lb.candidates(s.request(i), (id) => {
        if (id === "b") lb.candidates(s.request(i + 1000), () => true);
        return id !== "c";
      }).map((b) => b.id);
      assert.deepEqual([...order].sort(), ["a", "b", "d"]);
    }
  });
}

for (const s of SUBJECTS) {
  Deno.test(`${s.name}: property: candidates = the available, non-drained backends, once each`, () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            id: fc.constantFrom("a", "b", "c", "d", "e", "f", "g", "h"),
            weight: fc.oneof(
              fc.constant(0),
              fc.integer({ min: 1, max: 1000 }),
              fc.double({
                min: 0.001,
                max: 10,
                noNaN: true,
              }),
            ),
            up: fc.boolean(),
          }),
          { maxLength: 12 },
        ),
        fc.array(fc.nat(1000), { minLength: 1, maxLength: 5 }),
        (specs, requests) => {
          const list = specs.map((x, i) => ({
            id: x.id,
            address: `10.0.0.${i}:80`,
            weight: x.weight,
          }));
          const firstById = new Map<string, (typeof specs)[number]>();
          for (const x of specs) if (!firstById.has(x.id)) firstById.set(x.id, x);
          const up = (id: string) => firstById.get(id)?.up === true;
          const expected = [...firstById.values()].filter((x) => x.up && x.weight > 0).map((x) =>
            x.id
          ).sort();
          const lb = make(s, list);
          for (const i of requests) {
            const got = lb.candidates(s.request(i), up).map((b) => b.id);
            assert.deepEqual([...got].sort(), expected);
          }
        },
      ),
      { numRuns: 300, seed: 1 },
    );
  });
}

for (const s of SUBJECTS) {
  Deno.test(`#30.3: ${s.name}: an ejected backend gets no picks, and its share again once back`, () => {
    const lb = make(s, backends(["a", "b", "c"], [100, 100, 100]));
    let ejected = true;
    const available = (id: string) => !(ejected && id === "b");
    const picks = (from: number) => {
      const counts = new Map<string, number>();
      for (let i = from; i < from + 3000; i++) {
        const id = lb.candidates(s.request(i), available)[0].id;
        counts.set(id, (counts.get(id) ?? 0) + 1);
      }
      return counts;
    };
    assert.equal(picks(0).get("b"), undefined, "ejected: never first");
    ejected = false;
    const back = picks(3000).get("b") ?? 0;
    assert.ok(back > 3000 / 3 * 0.8, `back: ${back} of 3000 picks`);
  });

  Deno.test(`#30.3: ${s.name}: drained (rebuilt with weight 0) is never a candidate; its share is split by weight`, () => {
    const lb = make(s, backends(["a", "b", "c"], [100, 0, 300]));
    const counts = new Map<string, number>();
    for (let i = 0; i < 4000; i++) {
      const order = lb.candidates(s.request(i), () => true).map((b) => b.id);
      assert.ok(!order.includes("b"), "a drained backend is no candidate, not even a retry");
      counts.set(order[0], (counts.get(order[0]) ?? 0) + 1);
    }
    const a = counts.get("a") ?? 0;
    assert.ok(Math.abs(a - 1000) <= 1000 * 0.1, `a: ${a} of 4000 picks, expected 1000`);
  });
}

for (const s of SUBJECTS.filter((x) => x.loadAware)) {
  Deno.test(`#30.3: ${s.name}: a balancer rebuilt on the same load table (a reload) keeps what was observed`, () => {
    let clock = 0;
    const load = new LoadTable(() => clock);
    const list = backends(["a", "b"], [100, 100]);
    const before = make(s, list, load);
    // b is slow and busy: five attempts in flight, and 200 ms answers (a: 2 ms).
    for (let i = 0; i < 3; i++) {
      load.ended(load.started("a"), 2, "ok");
      load.ended(load.started("b"), 200, "ok");
    }
    for (let i = 0; i < 5; i++) load.started("b");
    clock = 1;
    const first = (lb: Balancer) => lb.candidates(s.request(0), () => true)[0].id;
    assert.equal(first(before), "a");
    const rebuilt = make(s, backends(["a", "b"], [100, 100]), load);
    for (let i = 0; i < 100; i++) assert.equal(first(rebuilt), "a", `pick ${i}`);
    // And the attempts of the old generation end on the same counters.
    for (let i = 0; i < 5; i++) load.ended(load.of("b"), 1, "none");
    assert.equal(load.of("b").inflight, 0);
  });

  Deno.test(`#30.3: ${s.name}: simulated slow and fast backends: the fast one takes most of the load`, () => {
    // A discrete-time run: 8 clients, each sends its next request when the last is
    // answered; "slow" answers in 50 ms, "fast" in 2 ms.
    let clock = 0;
    const load = new LoadTable(() => clock);
    const lb = make(s, backends(["slow", "fast"], [100, 100]), load);
    const rtt: Record<string, number> = { slow: 50, fast: 2 };
    const running: Array<{ until: number; load: ReturnType<LoadTable["started"]>; ms: number }> =
      [];
    const counts: Record<string, number> = { slow: 0, fast: 0 };
    const send = () => {
      const id = lb.candidates(s.request(0), () => true)[0].id;
      counts[id]++;
      running.push({ until: clock + rtt[id], load: load.started(id), ms: rtt[id] });
    };
    for (let c = 0; c < 8; c++) send();
    for (clock = 1; clock <= 5_000; clock++) {
      for (let i = running.length - 1; i >= 0; i--) {
        if (running[i].until > clock) continue;
        load.ended(running[i].load, running[i].ms, "ok");
        running.splice(i, 1);
        send();
      }
    }
    const share = counts.fast / (counts.fast + counts.slow);
    assert.ok(share > 0.9, `fast: ${counts.fast}, slow: ${counts.slow}`);
  });

  Deno.test(`#30.3: ${s.name}: weights hold under load: weight 300 carries about 3x the requests of weight 100`, () => {
    let clock = 0;
    const load = new LoadTable(() => clock);
    const lb = make(s, backends(["light", "heavy"], [100, 300]), load);
    const running: Array<{ until: number; load: ReturnType<LoadTable["started"]> }> = [];
    const counts: Record<string, number> = { light: 0, heavy: 0 };
    const send = () => {
      const id = lb.candidates(s.request(0), () => true)[0].id;
      counts[id]++;
      running.push({ until: clock + 10, load: load.started(id) });
    };
    for (let c = 0; c < 40; c++) send();
    for (clock = 1; clock <= 5_000; clock++) {
      for (let i = running.length - 1; i >= 0; i--) {
        if (running[i].until > clock) continue;
        load.ended(running[i].load, 10, "ok");
        running.splice(i, 1);
        send();
      }
    }
    const ratio = counts.heavy / counts.light;
    assert.ok(
      ratio > 2 && ratio < 4.5,
      `heavy/light = ${ratio.toFixed(2)} (${JSON.stringify(counts)})`,
    );
  });
}
