/**
 * HealthChecker against real HTTP/2 (h2c) backends on loopback.
 */

import assert from "node:assert/strict";
import { configure, type LogRecord, reset } from "@logtape/logtape";
import { HealthChecker, type HealthTransitionEvent } from "./health_checker.ts";
import { sleep } from "../../tests/support/wait.ts";

const UA = "spooky/0.0.0-test";

interface Seen {
  method: string;
  path: string;
  host: string | null;
  authority: string;
  userAgent: string | null;
  at: number;
  /** What the backend answered: "ok" (200), "503" or "hang". */
  mode: "ok" | "503" | "hang";
}

/** A loopback backend whose status can be changed and that can hang. */
function backend() {
  const seen: Seen[] = [];
  const released: (() => void)[] = [];
  let mode: "ok" | "503" | "hang" = "ok";
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const url = new URL(req.url);
    seen.push({
      method: req.method,
      path: url.pathname + url.search,
      host: req.headers.get("host"),
      authority: url.host,
      userAgent: req.headers.get("user-agent"),
      at: performance.now(),
      mode,
    });
    if (mode === "hang") await new Promise<void>((r) => released.push(r));
    if (mode === "503") return Response.json({ status: "down", reason: "test" }, { status: 503 });
    return Response.json({ status: "ok", timestamp: Date.now() });
  });
  return {
    seen,
    address: `127.0.0.1:${server.addr.port}`,
    setMode(m: typeof mode) {
      mode = m;
      if (m !== "hang") { for (const r of released.splice(0)) r(); }
    },
    async close() {
      mode = "ok";
      for (const r of released.splice(0)) r();
      await server.shutdown();
    },
  };
}

async function waitFor(cond: () => boolean, ms: number, what: string): Promise<number> {
  const start = performance.now();
  while (!cond()) {
    if (performance.now() - start > ms) {
      throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    }
    await sleep(5);
  }
  return performance.now() - start;
}

function h2Fetch(): { fetch: typeof fetch; client: Deno.HttpClient } {
  const client = Deno.createHttpClient({ http1: false, http2: true });
  return { client, fetch: (input, init) => fetch(input, { ...init, client }) };
}

Deno.test("health checker: probes at once with method, path, Host and User-Agent over h2c", async () => {
  const b = backend();
  const checker = new HealthChecker({
    backends: [{
      id: "b1",
      address: b.address,
      weight: 100,
      health_check: { path: "/hc?deep=1", method: "HEAD", interval: 60_000 },
    }],
    userAgent: UA,
  });
  const t0 = performance.now();
  checker.start();
  try {
    await waitFor(() => b.seen.length >= 1, 2000, "first probe");
    const first = b.seen[0];
    // interval is a minute: the probe came at once, not after one interval.
    assert.ok(first.at - t0 < 2000);
    assert.equal(first.method, "HEAD");
    assert.equal(first.path, "/hc?deep=1");
    // HTTP/2 carries Host as :authority (RFC 9113 §8.3.1), which Deno.serve
    // puts in the URL. No host field at all proves the default client spoke
    // HTTP/2 (an HTTP/1.1 request always has one).
    assert.equal(first.authority, b.address);
    assert.equal(first.host, null);
    assert.equal(first.userAgent, UA);
    assert.deepEqual(checker.snapshot(), { b1: "healthy" });
  } finally {
    await checker.stop();
    await b.close();
  }
});

Deno.test("health checker: 503 -> unhealthy in time; back after cooldown + successes", async () => {
  const b = backend();
  const hc = {
    path: "/health",
    interval: 50,
    timeout_ms: 200,
    failure_threshold: 3,
    success_threshold: 2,
    cooldown_ms: 400,
    method: "GET",
  };
  const events: (HealthTransitionEvent & { at: number; answered: string })[] = [];
  const { fetch: f, client } = h2Fetch();
  // #32.4: what the backend had answered when each transition happened (probes never
  // overlap, so no answer is in flight past the one that caused it).
  const answered = () => b.seen.map((s) => s.mode === "ok" ? "+" : "-").join("");
  const checker = new HealthChecker({
    backends: [{ id: "b1", address: b.address, health_check: hc }],
    fetch: f,
    userAgent: UA,
    onTransition: (ev) => events.push({ ...ev, at: performance.now(), answered: answered() }),
  });
  checker.start();
  try {
    await waitFor(() => b.seen.length >= 2, 2000, "two probes");
    assert.equal(checker.isHealthy("b1"), true);

    const healthyProbes = b.seen.length;
    b.setMode("503");
    // #32.4: the behaviour, not the wall clock: unhealthy on the third 503 in a row, not
    // before, not later. (At 50 ms a probe that takes ~150 ms; the 3 s wait is far from it,
    // and from the 10 s the default 5 s interval would take.)
    await waitFor(() => !checker.isHealthy("b1"), 3000, "unhealthy");
    assert.equal(events.length, 1);
    assert.deepEqual({ ...events[0], at: 0 }, {
      id: "b1",
      from: "healthy",
      to: "unhealthy",
      reason: "status 503",
      at: 0,
      answered: "+".repeat(healthyProbes) + "-".repeat(hc.failure_threshold),
    });
    assert.deepEqual(checker.snapshot(), { b1: "unhealthy" });

    // Recovers at once on the backend side, but the cooldown holds it down.
    b.setMode("ok");
    await waitFor(() => checker.isHealthy("b1"), 3000, "healthy again");
    // Never before the cooldown (a lower bound no slow machine can break: timers never fire
    // early); then only after success_threshold successes in a row.
    const sinceDown = events[1].at - events[0].at;
    assert.ok(
      sinceDown >= hc.cooldown_ms,
      `healthy ${sinceDown.toFixed(0)} ms after unhealthy: before the cooldown`,
    );
    assert.deepEqual(events.map((e) => `${e.from}->${e.to}`), [
      "healthy->unhealthy",
      "unhealthy->healthy",
    ]);
    // What came after the first transition: maybe a 503 more, then only successes.
    const after = events[1].answered.slice(events[0].answered.length);
    assert.ok(events[1].answered.startsWith(events[0].answered));
    assert.match(after, /^-*\+{2,}$/, `answers after unhealthy: ${after}`);
    // Probes kept coming during the cooldown: about eight; none would be 0 or 1.
    const during = b.seen.filter((s) => s.at > events[0].at && s.at < events[1].at).length;
    assert.ok(during >= 2, `${during} probes between the transitions`);
  } finally {
    await checker.stop();
    client.close();
    await b.close();
  }
});

Deno.test("health checker: a hanging backend fails by timeout; probes never overlap", async () => {
  const b = backend();
  b.setMode("hang");
  const events: HealthTransitionEvent[] = [];
  const { fetch: h2, client } = h2Fetch();
  let inflight = 0;
  let maxInflight = 0;
  let probes = 0;
  const counting: typeof fetch = async (input, init) => {
    probes++;
    maxInflight = Math.max(maxInflight, ++inflight);
    try {
      return await h2(input, init);
    } finally {
      inflight--;
    }
  };
  const checker = new HealthChecker({
    fetch: counting,
    backends: [{
      id: "slow",
      address: b.address,
      health_check: { interval: 20, timeout_ms: 100, failure_threshold: 2, cooldown_ms: 10_000 },
    }],
    userAgent: UA,
    onTransition: (ev) => events.push(ev),
  });
  const t0 = performance.now();
  checker.start();
  try {
    await waitFor(() => !checker.isHealthy("slow"), 3000, "unhealthy by timeout");
    const took = performance.now() - t0;
    assert.ok(took >= 2 * 100 - 5, `unhealthy after ${took.toFixed(0)} ms: too early`);
    assert.equal(events[0].reason, "timeout after 100 ms");
    await waitFor(() => probes >= 4, 3000, "more probes");
    // interval 20 ms < timeout 100 ms: the next probe waits for the previous one.
    assert.equal(maxInflight, 1, "a probe overlapped the previous one");
  } finally {
    await checker.stop();
    client.close();
    await b.close();
  }
});

Deno.test("health checker: backends are probed independently; refused connections fail", async () => {
  const slow = backend();
  slow.setMode("hang");
  const fast = backend();
  // A port with nothing listening: bind, read the port, close.
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const deadAddress = `127.0.0.1:${(l.addr as Deno.NetAddr).port}`;
  l.close();
  const events: HealthTransitionEvent[] = [];
  const checker = new HealthChecker({
    backends: [
      { id: "slow", address: slow.address, health_check: { interval: 50, timeout_ms: 30_000 } },
      { id: "fast", address: fast.address, health_check: { interval: 30, timeout_ms: 500 } },
      {
        id: "dead",
        address: deadAddress,
        health_check: { interval: 30, timeout_ms: 500, failure_threshold: 1 },
      },
      { id: "plain", address: "127.0.0.1:9" },
    ],
    userAgent: UA,
    onTransition: (ev) => events.push(ev),
  });
  checker.start();
  try {
    // While the slow backend's first probe hangs, the fast one is probed again and again.
    await waitFor(() => fast.seen.length >= 5, 3000, "five probes of the fast backend");
    assert.equal(slow.seen.length, 1);
    await waitFor(() => !checker.isHealthy("dead"), 3000, "dead backend unhealthy");
    const dead = events.find((e) => e.id === "dead");
    assert.ok(dead?.reason && !dead.reason.startsWith("status"), dead?.reason);
    assert.deepEqual(checker.snapshot(), {
      slow: "healthy",
      fast: "healthy",
      dead: "unhealthy",
      plain: "healthy",
    });
    assert.equal(checker.isHealthy("plain"), true, "no health_check: always healthy");
    assert.equal(checker.isHealthy("unknown"), true, "unknown ids are not checked");
  } finally {
    // stop() aborts the hanging probe and returns promptly.
    const t = performance.now();
    await checker.stop();
    assert.ok(performance.now() - t < 5_000, "not the probe's 30 s timeout");
    await slow.close();
    await fast.close();
  }
});

Deno.test("health checker: stop() cancels timers; start() again resumes", async () => {
  const b = backend();
  const checker = new HealthChecker({
    backends: [{ id: "b1", address: b.address, health_check: { interval: 30 } }],
    userAgent: UA,
  });
  checker.start();
  checker.start();
  await waitFor(() => b.seen.length >= 3, 3000, "three probes");
  await checker.stop();
  const count = b.seen.length;
  await sleep(120);
  assert.equal(b.seen.length, count, "probes after stop()");
  checker.start();
  await waitFor(() => b.seen.length >= count + 2, 3000, "probes after restart");
  await checker.stop();
  await b.close();
});

Deno.test("health checker: logs failures and transitions under proxy.health", async () => {
  const records: LogRecord[] = [];
  await configure({
    reset: true,
    sinks: { buf: (r) => records.push(r) },
    loggers: [
      { category: ["proxy", "health"], sinks: ["buf"], lowestLevel: "debug" },
      { category: ["logtape", "meta"], sinks: [], lowestLevel: "warning" },
    ],
  });
  const b = backend();
  b.setMode("503");
  const checker = new HealthChecker({
    backends: [{
      id: "b7",
      address: b.address,
      health_check: { interval: 20, failure_threshold: 2, cooldown_ms: 10_000 },
    }],
    userAgent: UA,
  });
  checker.start();
  try {
    await waitFor(() => !checker.isHealthy("b7"), 3000, "unhealthy");
    await waitFor(() => b.seen.length >= 4, 3000, "more probes");
    await checker.stop();
    const text = (r: LogRecord) => r.message.map(String).join("");
    const failed = records.filter((r) => text(r).includes("health check failed"));
    assert.ok(failed.length >= 3);
    assert.equal(failed[0].level, "warning");
    assert.equal(failed[0].properties.id, "b7");
    assert.equal(failed[0].properties.reason, "status 503");
    assert.ok(failed.slice(2).every((r) => r.level === "debug"), "repeats while unhealthy: debug");
    const tr = records.filter((r) => text(r).includes("backend b7 is now unhealthy"));
    assert.equal(tr.length, 1);
    assert.equal(tr[0].level, "warning");
  } finally {
    await checker.stop();
    await b.close();
    await reset();
  }
});

Deno.test("health checker: injected fetch, clock and timers; a throwing callback is contained", async () => {
  const calls: { url: string; init: RequestInit }[] = [];
  let status = 500;
  const timers = new Map<number, () => void>();
  let nextId = 1;
  let now = 0;
  const checker = new HealthChecker({
    backends: [{
      id: "x",
      address: "[::1]:8081",
      health_check: {
        path: "status",
        interval: 1000,
        failure_threshold: 1,
        success_threshold: 1,
        cooldown_ms: 0,
      },
    }],
    fetch: (url, init) => {
      calls.push({ url, init });
      return Promise.resolve(new Response(status === 204 ? null : "body", { status }));
    },
    clock: { now: () => now },
    setTimeout: (fn) => {
      timers.set(nextId, fn);
      return nextId++;
    },
    clearTimeout: (id: number) => void timers.delete(id),
    userAgent: UA,
    onTransition: () => {
      throw new Error("callback bug");
    },
  });
  checker.start();
  // Probe timeout timer armed, then cleared when the response arrives.
  // Timer 1 = the probe's timeout (cleared), timer 2 = the next probe.
  await waitFor(() => nextId === 3 && timers.size === 1, 1000, "first probe done");
  assert.equal(calls[0].url, "http://[::1]:8081/status");
  assert.equal(calls[0].init.method, "GET");
  assert.deepEqual(calls[0].init.headers, { host: "[::1]:8081", "user-agent": UA });
  assert.equal(calls[0].init.redirect, "manual");
  assert.equal(checker.isHealthy("x"), false);
  status = 204;
  now = 1000;
  const [id, fn] = [...timers][0];
  timers.delete(id);
  fn();
  await waitFor(() => checker.isHealthy("x"), 1000, "healthy");
  await checker.stop();
  assert.equal(timers.size, 0);
});

Deno.test("health checker: start() right after an unawaited stop() discards the aborted probe", async () => {
  const b = backend();
  b.setMode("hang");
  const { fetch: h2, client } = h2Fetch();
  const events: HealthTransitionEvent[] = [];
  const checker = new HealthChecker({
    fetch: h2,
    backends: [{
      id: "b1",
      address: b.address,
      health_check: { interval: 20, timeout_ms: 5000, failure_threshold: 1 },
    }],
    userAgent: UA,
    onTransition: (ev) => events.push(ev),
  });
  checker.start();
  await waitFor(() => b.seen.length === 1, 2000, "first probe");
  const stopping = checker.stop();
  b.setMode("ok");
  checker.start();
  await stopping;
  await waitFor(() => b.seen.length >= 3, 2000, "probes after restart");
  assert.deepEqual(events, [], "the aborted probe must not count as a failure");
  assert.equal(checker.isHealthy("b1"), true);
  await checker.stop();
  client.close();
  await b.close();
});
