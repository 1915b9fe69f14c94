/**
 * #30.5: BackendResolver: what is looked up, the refresh schedule (the
 * pool's dns_refresh_ms, a shorter TTL, the retry after a failure), the
 * last good answer kept, endpoints handed out in turn, and endpoints that
 * left an answer reported for draining.
 */
import assert from "node:assert/strict";
import { ConfigSchema } from "../config/schema.ts";
import type { Config } from "../config/types.ts";
import { BackendResolver, ENDPOINT_DOWN_MS } from "./backend_resolver.ts";
import type { FamilyAnswer, LookupAnswer, LookupOptions } from "./lookup.ts";

/** A configuration with one pool per entry of `pools` (its backends' addresses). */
function configOf(
  pools: Record<string, string[]>,
  extra: { dns_refresh_ms?: number; dns?: Record<string, unknown> } = {},
): Config {
  let n = 0;
  return ConfigSchema.parse({
    version: 1,
    listen: { protocol: "http3", tls: { cert: "c", key: "k" } },
    dns: extra.dns ?? {},
    upstream: Object.fromEntries(
      Object.entries(pools).map(([pool, addresses]) => [pool, {
        route: { path_prefix: `/${pool}` },
        ...(extra.dns_refresh_ms ? { dns_refresh_ms: extra.dns_refresh_ms } : {}),
        backends: addresses.map((address) => ({ id: `b${n++}`, address })),
      }]),
    ),
  });
}

const v4 = (ttl: number, ...addresses: string[]): FamilyAnswer => ({
  kind: "addresses",
  addresses,
  ttlSeconds: ttl,
});
const NONE: FamilyAnswer = { kind: "none", message: "ENOTFOUND" };
const TIMEOUT: FamilyAnswer = { kind: "error", message: "no answer within 5000 ms" };

/** A resolver over a scripted lookup and manual timers. */
function harness() {
  const answers = new Map<string, LookupAnswer>();
  const asked: Array<[string, LookupOptions]> = [];
  const timers: Array<{ fn: () => void; ms: number; cancelled: boolean }> = [];
  const removed: string[][] = [];
  let now = 0;
  const resolver = new BackendResolver({
    lookup: (host, opts) => {
      asked.push([host, opts]);
      return Promise.resolve(answers.get(host) ?? { v4: NONE, v6: NONE });
    },
    now: () => now,
    setTimeout: (fn, ms) => {
      const t = { fn, ms, cancelled: false };
      timers.push(t);
      return t;
    },
    clearTimeout: (t) => void ((t as { cancelled: boolean }).cancelled = true),
  });
  resolver.onRemoved = (eps) => void removed.push([...eps]);
  /** The delays of the timers pending now. */
  const pending = () => timers.filter((t) => !t.cancelled).map((t) => t.ms);
  /** Fires the pending timers and waits for the lookups they start. */
  const fire = async () => {
    const due = timers.filter((t) => !t.cancelled);
    for (const t of due) {
      t.cancelled = true;
      t.fn();
    }
    for (let i = 0; i < 5; i++) await Promise.resolve();
  };
  return {
    resolver,
    answers,
    asked,
    removed,
    pending,
    fire,
    advance: (ms: number) => void (now += ms),
  };
}

Deno.test("#30.5: resolver: names are looked up (A and AAAA), IPs and localhost are not; endpoints are ip:port, sorted", async () => {
  const h = harness();
  h.answers.set("api.internal", { v4: v4(30, "10.0.0.2", "10.0.0.1"), v6: v4(30, "fd00::1") });
  const failures = await h.resolver.update(
    configOf({ a: ["api.internal:8080", "10.9.9.9:80", "localhost:81", "web.LOCALHOST:82"] }),
  );
  assert.deepEqual(failures, []);
  assert.deepEqual(h.asked.map(([host]) => host), ["api.internal"]);
  assert.equal(h.resolver.size, 1);
  assert.deepEqual(h.resolver.endpoints("api.internal:8080"), [
    "10.0.0.1:8080",
    "10.0.0.2:8080",
    "[fd00::1]:8080",
  ]);
  assert.equal(h.resolver.endpoints("10.9.9.9:80"), undefined);
  assert.equal(h.resolver.endpointFor("localhost:81"), null);
  assert.deepEqual(h.resolver.stats("api.internal:8080"), {
    success: 1,
    failure: 0,
    endpoints: ["10.0.0.1:8080", "10.0.0.2:8080", "[fd00::1]:8080"],
  });
  h.resolver.stop();
});

Deno.test("#30.5: resolver: the next lookup comes after dns_refresh_ms, or the answer's TTL when shorter (1 s at least)", async () => {
  for (
    const [ttl, refresh, expected] of [
      [5, 30_000, 5000],
      [3600, 30_000, 30_000],
      [0, 30_000, 1000],
      [0, 200, 200],
    ] as const
  ) {
    const h = harness();
    h.answers.set("api.internal", { v4: v4(ttl, "10.0.0.1"), v6: NONE });
    await h.resolver.update(configOf({ a: ["api.internal:80"] }, { dns_refresh_ms: refresh }));
    assert.deepEqual(h.pending(), [expected], `ttl ${ttl}, refresh ${refresh}`);
    h.resolver.stop();
    assert.deepEqual(h.pending(), [], "stop cancels the refresh");
  }
});

Deno.test("#30.5: resolver: a failed lookup keeps the last good answer, is counted, and is asked again sooner", async () => {
  const h = harness();
  h.answers.set("api.internal", { v4: v4(60, "10.0.0.1"), v6: NONE });
  await h.resolver.update(configOf({ a: ["api.internal:80"] }, { dns_refresh_ms: 10_000 }));
  h.answers.set("api.internal", { v4: TIMEOUT, v6: TIMEOUT });
  const retries: number[] = [];
  for (let i = 0; i < 6; i++) {
    await h.fire();
    retries.push(...h.pending());
  }
  assert.deepEqual(
    retries,
    [1000, 2000, 4000, 8000, 10_000, 10_000],
    "doubling, up to the refresh",
  );
  assert.deepEqual(h.resolver.endpoints("api.internal:80"), ["10.0.0.1:80"], "last answer kept");
  assert.deepEqual(h.resolver.stats("api.internal:80")?.failure, 6);
  // No address at all (the name gone, or a SERVFAIL as Deno reports it) is a failure too.
  h.answers.set("api.internal", { v4: NONE, v6: NONE });
  await h.fire();
  assert.deepEqual(h.resolver.endpoints("api.internal:80"), ["10.0.0.1:80"]);
  assert.equal(h.resolver.stats("api.internal:80")?.failure, 7);
  assert.deepEqual(h.removed, []);
  // An answer again: taken, counted, the normal schedule back.
  h.answers.set("api.internal", { v4: v4(60, "10.0.0.3"), v6: NONE });
  await h.fire();
  assert.deepEqual(h.resolver.endpoints("api.internal:80"), ["10.0.0.3:80"]);
  assert.deepEqual(h.pending(), [10_000]);
  assert.deepEqual(h.removed, [["10.0.0.1:80"]]);
  h.resolver.stop();
});

Deno.test("#30.5: resolver: a name that never resolved is a failure of update(), with its key paths", async () => {
  const h = harness();
  const failures = await h.resolver.update(
    configOf({ a: ["10.0.0.1:80"], b: ["nowhere.test:80"] }),
  );
  assert.equal(failures.length, 1);
  assert.equal(failures[0].address, "nowhere.test:80");
  assert.deepEqual(failures[0].paths, [["upstream", "b", "backends", 0, "address"]]);
  assert.match(
    failures[0].message,
    /lookup of nowhere.test failed \(no A or AAAA record\); no address yet: connecting by name/,
  );
  assert.equal(h.resolver.endpointFor("nowhere.test:80"), null, "no endpoint: used as it is");
  h.resolver.stop();
});

Deno.test("#30.5: resolver: a family without an answer keeps its addresses; one answered 'none' drops them", async () => {
  const h = harness();
  h.answers.set("api.internal", { v4: v4(60, "10.0.0.1"), v6: v4(60, "fd00::1") });
  await h.resolver.update(configOf({ a: ["api.internal:80"] }));
  h.answers.set("api.internal", { v4: v4(60, "10.0.0.2"), v6: TIMEOUT });
  await h.fire();
  assert.deepEqual(h.resolver.endpoints("api.internal:80"), ["10.0.0.2:80", "[fd00::1]:80"]);
  h.answers.set("api.internal", { v4: v4(60, "10.0.0.2"), v6: NONE });
  await h.fire();
  assert.deepEqual(h.resolver.endpoints("api.internal:80"), ["10.0.0.2:80"]);
  assert.deepEqual(h.removed, [["10.0.0.1:80"], ["[fd00::1]:80"]]);
  h.resolver.stop();
});

Deno.test("#30.5: resolver: an endpoint another name or a backend's own address still uses is not reported", async () => {
  const h = harness();
  h.answers.set("a.internal", { v4: v4(60, "10.0.0.1", "10.0.0.2", "10.0.0.3"), v6: NONE });
  h.answers.set("b.internal", { v4: v4(60, "10.0.0.2"), v6: NONE });
  await h.resolver.update(
    configOf({ a: ["a.internal:80"], b: ["b.internal:80"], c: ["10.0.0.3:80"] }),
  );
  h.answers.set("a.internal", { v4: v4(60, "10.0.0.9"), v6: NONE });
  await h.fire();
  assert.deepEqual(h.removed, [["10.0.0.1:80"]]);
  assert.equal(h.resolver.inUse("10.0.0.2:80"), true);
  assert.equal(h.resolver.inUse("10.0.0.1:80"), false);
  h.resolver.stop();
});

Deno.test("#30.5: resolver: endpoints are handed out in turn; one marked down is passed over while another is not", async () => {
  const h = harness();
  h.answers.set("api.internal", { v4: v4(60, "10.0.0.1", "10.0.0.2", "10.0.0.3"), v6: NONE });
  await h.resolver.update(configOf({ a: ["api.internal:80"] }));
  const picks = (n: number) =>
    Array.from({ length: n }, () => h.resolver.endpointFor("api.internal:80"));
  assert.deepEqual(picks(4), ["10.0.0.1:80", "10.0.0.2:80", "10.0.0.3:80", "10.0.0.1:80"]);
  h.resolver.markDown("10.0.0.3:80");
  assert.deepEqual(picks(4), ["10.0.0.2:80", "10.0.0.1:80", "10.0.0.2:80", "10.0.0.1:80"]);
  h.resolver.markDown("10.0.0.1:80");
  h.resolver.markDown("10.0.0.2:80");
  assert.equal(picks(3).length, 3, "all down: still one each time");
  assert.ok(picks(3).every((p) => p !== null));
  h.advance(ENDPOINT_DOWN_MS + 1);
  assert.deepEqual(new Set(picks(3)), new Set(["10.0.0.1:80", "10.0.0.2:80", "10.0.0.3:80"]));
  h.resolver.stop();
});

Deno.test("#30.5: resolver: on update, a new name and a dns change are looked up at once; a name that left is kept, unrefreshed, until forgotten", async () => {
  const h = harness();
  h.answers.set("a.internal", { v4: v4(60, "10.0.0.1"), v6: NONE });
  h.answers.set("b.internal", { v4: v4(60, "10.0.0.2"), v6: NONE });
  await h.resolver.update(configOf({ a: ["a.internal:80"] }));
  await h.resolver.update(configOf({ a: ["a.internal:80"], b: ["b.internal:80"] }));
  assert.deepEqual(h.asked.map(([host]) => host), ["a.internal", "b.internal"]);
  await h.resolver.update(configOf({ a: ["a.internal:80"] }, { dns: { servers: ["10.0.0.53"] } }));
  assert.deepEqual(h.asked.slice(2).map(([host, o]) => [host, o.servers]), [
    ["a.internal", ["10.0.0.53"]],
  ]);
  assert.equal(h.pending().length, 1, "b is no longer refreshed");
  assert.deepEqual(h.resolver.endpoints("b.internal:80"), ["10.0.0.2:80"], "kept until forgotten");
  assert.deepEqual(h.resolver.forget("a.internal:80"), [], "a configured name is not forgotten");
  assert.deepEqual(h.resolver.forget("b.internal:80"), ["10.0.0.2:80"]);
  assert.equal(h.resolver.endpoints("b.internal:80"), undefined);
  h.resolver.stop();
});
