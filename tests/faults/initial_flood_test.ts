/**
 * Fault test (issue #24 item 3): spoofed QUIC Initials must not lock
 * legitimate clients out. A flood of properly protected Initials from many
 * loopback addresses (their sockets open and unread, as with spoofed sources)
 * keeps the proxy's handshake table full; a legitimate client from another
 * address keeps connecting meanwhile. Before the fix the table filled and
 * every newcomer was refused until the held handshakes timed out (10 s).
 *
 * The CI size is small (FLOOD_RATE 200/s for FLOOD_SECONDS 6 from
 * FLOOD_SOURCES 50 addresses); the same file measures the target
 * (`FLOOD_RATE=1000 FLOOD_SOURCES=250 FLOOD_SECONDS=10`) and prints the share
 * of legitimate handshakes done within 1 s and the proxy CPU per Initial.
 */
// deno-lint-ignore-file no-console
import assert from "node:assert/strict";
import { startBackend } from "../support/backend.ts";
import { connectH3, H3TestClient } from "../support/h3_client.ts";
import { floodInitials, spreadSources } from "../support/initial_flood.ts";
import { startProxy, testCerts } from "../support/proxy_process.ts";
import { faultConfig, getHead, mib, rssBytes } from "../support/faults.ts";
import { pollUntil, sleep, withTimeout } from "../support/wait.ts";
import { metricValue, scrapeMetrics } from "../support/metrics.ts";

const RATE = Number(Deno.env.get("FLOOD_RATE") ?? 200);
const SECONDS = Number(Deno.env.get("FLOOD_SECONDS") ?? 6);
const SOURCES = Number(Deno.env.get("FLOOD_SOURCES") ?? 50);
/** How long one legitimate handshake may take and still count as done. */
const LEGIT_BUDGET_MS = Number(Deno.env.get("LEGIT_BUDGET_MS") ?? 1000);

/** CPU time (user + system) of a process in ms, from /proc/<pid>/stat. */
async function cpuMs(pid: number): Promise<number> {
  const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // utime and stime are fields 14 and 15 (1-based), in clock ticks (100 Hz on Linux).
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

async function rejected(adminPort: number): Promise<Map<string, number>> {
  const text = await scrapeMetrics(adminPort);
  const out = new Map<string, number>();
  for (const m of text.matchAll(/^spooky_connections_rejected_total\{reason="(\w+)"\} (\d+)$/gm)) {
    out.set(m[1], Number(m[2]));
  }
  return out;
}

/** One legitimate handshake from 127.0.0.1: its duration in ms, or undefined past `budget`. */
async function handshake(port: number, ca: string, budget: number): Promise<number | undefined> {
  const endpoint = new Deno.QuicEndpoint({ hostname: "127.0.0.1", port: 0 });
  const t0 = performance.now();
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const conn = await Promise.race([
      connectH3(endpoint, port, ca),
      new Promise<undefined>((r) => timer = setTimeout(() => r(undefined), budget)),
    ]);
    if (conn === undefined) return undefined;
    const ms = performance.now() - t0;
    conn.close({ closeCode: 0x100, reason: "" });
    return ms;
  } catch {
    return undefined;
  } finally {
    clearTimeout(timer);
    endpoint.close();
  }
}

Deno.test("#24.3: legitimate handshakes complete during a spoofed-Initial flood; the shed handshakes are counted", async () => {
  const be = startBackend("b");
  const proxy = await startProxy(faultConfig([be.address], {
    extra: "admin: {address: 127.0.0.1, port: 0}\nlog: {level: warn, access: false}",
  }));
  const ca = await Deno.readTextFile((await testCerts()).caPath);
  const admin = proxy.adminPort!;
  // Baseline in this test: legitimate handshakes on the quiet proxy.
  const quiet: number[] = [];
  for (let i = 0; i < 5; i++) quiet.push((await handshake(proxy.port, ca, 10_000)) ?? Infinity);
  const before = await rejected(admin);
  const cpu0 = await cpuMs(proxy.pid);
  const flood = floodInitials({
    hostname: "127.0.0.1",
    port: proxy.port,
    sources: spreadSources(SOURCES),
    count: RATE * SECONDS,
    rate: RATE,
    maxDurationMs: SECONDS * 1000 + 10_000,
  });
  try {
    // Let the flood fill the table first (256 slots).
    await sleep(Math.min(3000, (256 / RATE) * 1000 + 300));
    const times: (number | undefined)[] = [];
    let served = 0;
    let gets = 0;
    while (flood.sent < RATE * SECONDS) {
      times.push(await handshake(proxy.port, ca, Math.max(LEGIT_BUDGET_MS, 1000) * 3));
      if (times.length % 5 === 0) {
        // A whole request too, now and then, on a fresh connection.
        gets++;
        try {
          const client = await withTimeout(H3TestClient.connect(proxy.port, ca), 10_000, "connect");
          try {
            const r = await withTimeout(
              client.request({ head: getHead("/x", proxy.port) }),
              10_000,
              "GET",
            );
            if (r.status === 200) served++;
          } finally {
            await client.close();
          }
        } catch {
          // counted as not served
        }
      }
      await sleep(100);
    }
    const sent = await flood.done;
    const cpu1 = await cpuMs(proxy.pid);
    const after = await rejected(admin);
    const shed = (r: string) => (after.get(r) ?? 0) - (before.get(r) ?? 0);
    const within = times.filter((t) => t !== undefined && t <= LEGIT_BUDGET_MS).length;
    const completed = times.filter((t) => t !== undefined).length;
    const sorted = times.map((t) => t ?? Infinity).sort((a, b) => a - b);
    const p = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
    const reasons = [...after.keys()].map((r) => `${r}=${shed(r)}`).join(" ");
    console.log(
      `flood: ${sent.sent} Initials in ${(sent.elapsedMs / 1000).toFixed(1)} s (${
        (sent.sent / (sent.elapsedMs / 1000)).toFixed(0)
      }/s) from ${SOURCES} addresses; legit handshakes: ${within}/${times.length} within ${LEGIT_BUDGET_MS} ms, ${completed} completed, p50 ${
        p(0.5).toFixed(1)
      } ms, p95 ${p(0.95).toFixed(1)} ms (quiet: ${
        quiet.map((q) => q.toFixed(1)).join(", ")
      } ms); GETs served ${served}/${gets}; proxy CPU ${(cpu1 - cpu0).toFixed(0)} ms = ${
        ((cpu1 - cpu0) * 1000 / sent.sent).toFixed(0)
      } µs per Initial; shed: ${reasons}`,
    );
    // Behaviour, not timing: the legitimate client gets in while the flood
    // keeps the table full (before the fix: none did), and the proxy says
    // what it shed and why. Bounds are loose for a loaded CI machine.
    assert.ok(times.length >= 5, `only ${times.length} legitimate attempts`);
    assert.ok(
      completed >= Math.ceil(times.length * 0.8),
      `${completed} of ${times.length} legitimate handshakes completed during the flood`,
    );
    assert.ok(served >= Math.ceil(gets / 2), `${served} of ${gets} GETs served`);
    const text = await scrapeMetrics(admin);
    assert.match(text, /^spooky_quic_handshakes \d+$/m);
    assert.ok(
      shed("handshakes") + shed("handshake_timeout") > 0,
      `the flood's handshakes were shed and counted: ${reasons}`,
    );
    assert.equal(shed("connections"), 0);
  } finally {
    await flood.close();
    assert.equal(await proxy.stop(), 0);
    await be.close();
  }
});

/** What {@link legitimateDuringFlood} saw. */
interface FloodOutcome {
  /** Each legitimate handshake's duration in ms, `undefined` when it did not complete. */
  times: (number | undefined)[];
  /** Handshakes shed during the flood, by reason. */
  shed: (reason: string) => number;
  /** `spooky_quic_receive_buffer_bytes` before the flood and one second into it. */
  buffer: { before?: number; during?: number };
}

/** The QUIC socket's receive buffer as `/metrics` shows it. */
async function receiveBufferBytes(adminPort: number): Promise<number | undefined> {
  const text = await scrapeMetrics(adminPort);
  const m = /^spooky_quic_receive_buffer_bytes (\d+)$/m.exec(text);
  return m ? Number(m[1]) : undefined;
}

/**
 * A proxy with the default limits, a flood of `count` spoofed Initials at
 * `rate` from `sources`, and legitimate handshakes from 127.0.0.1 every
 * 100 ms while it lasts.
 */
async function legitimateDuringFlood(
  sources: string[],
  count: number,
  rate: number,
): Promise<FloodOutcome> {
  const be = startBackend("b");
  const proxy = await startProxy(faultConfig([be.address], {
    extra: "admin: {address: 127.0.0.1, port: 0}\nlog: {level: warn, access: false}",
  }));
  const ca = await Deno.readTextFile((await testCerts()).caPath);
  // A few handshakes before: the client's own address group has completed some.
  for (let i = 0; i < 3; i++) await handshake(proxy.port, ca, 10_000);
  const before = await rejected(proxy.adminPort!);
  const buffer = {
    before: await receiveBufferBytes(proxy.adminPort!),
    during: undefined as number | undefined,
  };
  const flood = floodInitials({
    hostname: "127.0.0.1",
    port: proxy.port,
    sources,
    count,
    rate,
    maxDurationMs: 20_000,
  });
  try {
    while (flood.sent === 0) await sleep(50); // the Initials are prepared first
    await sleep(1000);
    buffer.during = await receiveBufferBytes(proxy.adminPort!);
    const times: (number | undefined)[] = [];
    while (flood.sent < count) {
      times.push(await handshake(proxy.port, ca, 5000));
      await sleep(100);
    }
    await flood.done;
    const after = await rejected(proxy.adminPort!);
    return { times, shed: (r: string) => (after.get(r) ?? 0) - (before.get(r) ?? 0), buffer };
  } finally {
    await flood.close();
    assert.equal(await proxy.stop(), 0);
    await be.close();
  }
}

function completedShare(times: (number | undefined)[]): string {
  return `legitimate handshakes: ${times.map((t) => t?.toFixed(0) ?? "x").join(" ")}`;
}

Deno.test("#24.3: a flood from one network sheds that network's handshakes and leaves other networks alone", async () => {
  // 50 addresses of 127.5.5.0/24: one network, filling the 256-slot table.
  const sources = Array.from({ length: 50 }, (_, i) => `127.5.5.${i + 2}`);
  const { times, shed, buffer } = await legitimateDuringFlood(sources, 1200, 400);
  assert.ok(
    times.filter((t) => t !== undefined).length >= Math.ceil(times.length * 0.9),
    completedShare(times),
  );
  // A full table sheds: a raised receive buffer is lowered while it lasts
  // (#35.7), so that a legitimate Initial does not queue behind the flood.
  const kernelDefault = Number(Deno.readTextFileSync("/proc/sys/net/core/rmem_default"));
  if ((buffer.before ?? 0) > kernelDefault) {
    assert.equal(buffer.during, kernelDefault, `receive buffer before the flood ${buffer.before}`);
  }
  // The table is full: the network over its cap (128) that never completes pays,
  // never a handshake of another network (the oldest of all would be `handshakes`).
  assert.ok(shed("network_handshakes") > 0, `network_handshakes=${shed("network_handshakes")}`);
  assert.equal(shed("handshakes"), 0);
});

Deno.test("#35.7: a flood from the client's own /24 sheds the flood's handshakes; the client's complete", async () => {
  // 50 addresses of 127.0.0.0/24, the legitimate client's own network (127.0.0.1).
  const sources = Array.from({ length: 50 }, (_, i) => `127.0.0.${i + 2}`);
  const { times, shed } = await legitimateDuringFlood(sources, 1200, 400);
  assert.ok(
    times.filter((t) => t !== undefined).length >= Math.ceil(times.length * 0.8),
    completedShare(times),
  );
  assert.ok(shed("network_handshakes") > 0, `network_handshakes=${shed("network_handshakes")}`);
});

Deno.test("#35.7: a flood from the client's own address: its group stops being trusted and sheds its own handshakes; the client's complete", async () => {
  const { times, shed } = await legitimateDuringFlood(["127.0.0.1"], 1200, 400);
  assert.ok(
    times.filter((t) => t !== undefined).length >= Math.ceil(times.length * 0.8),
    completedShare(times),
  );
  assert.ok(shed("address_handshakes") > 0, `address_handshakes=${shed("address_handshakes")}`);
});

Deno.test("#24.3: past limits.max_handshake_rate Initials are ignored unseen and counted; newcomers get in once it passes", async () => {
  const be = startBackend("b");
  const proxy = await startProxy(faultConfig([be.address], {
    extra:
      "admin: {address: 127.0.0.1, port: 0}\nlog: {level: warn, access: false}\nlimits: {max_handshake_rate: 50}",
  }));
  const ca = await Deno.readTextFile((await testCerts()).caPath);
  const before = await rejected(proxy.adminPort!);
  const flood = floodInitials({
    hostname: "127.0.0.1",
    port: proxy.port,
    sources: spreadSources(20),
    count: 900,
    rate: 300,
    maxDurationMs: 15_000,
  });
  try {
    await flood.done;
    const after = await rejected(proxy.adminPort!);
    const shed = (r: string) => (after.get(r) ?? 0) - (before.get(r) ?? 0);
    // 900 Initials against a budget of 256 (the burst) + 50/s: most are ignored.
    assert.ok(shed("handshake_rate") >= 300, `handshake_rate=${shed("handshake_rate")}`);
    await sleep(1000); // the budget refills
    assert.notEqual(await handshake(proxy.port, ca, 5000), undefined);
  } finally {
    await flood.close();
    assert.equal(await proxy.stop(), 0);
    await be.close();
  }
});

Deno.test("#24.3: after many closed connections the transport asks for a collection (spoofed handshakes leave no JS garbage to trigger one)", async () => {
  const { listenQuic } = await import("../../proxy/quic/deno_transport.ts");
  const certs = await testCerts();
  let collections = 0;
  const transport = listenQuic({
    hostname: "127.0.0.1",
    port: 0,
    cert: await Deno.readTextFile(certs.certPath),
    key: await Deno.readTextFile(certs.keyPath),
    limits: { maxHandshakes: 10 },
    // Requested, or full when a request freed nothing: either counts.
    collectGarbage: () => collections++,
    requestCollection: () => collections++,
    gcAfterClosed: 50,
  });
  const flood = floodInitials({
    hostname: "127.0.0.1",
    port: transport.addr.port,
    sources: spreadSources(10),
    count: 400,
    rate: 200,
  });
  try {
    await flood.done;
    const deadline = performance.now() + 10_000;
    while (collections < 2 && performance.now() < deadline) await sleep(100);
    // 390 shed handshakes, at most one collection a second: at least two.
    assert.ok(collections >= 2, `${collections} collections`);
    assert.ok(transport.handshakes <= 10);
  } finally {
    await flood.close();
    transport.close();
  }
});

Deno.test("#35.5: after a flood of spoofed Initials, resident memory comes back within 150 MiB of where it started within 15 s", async () => {
  const be = startBackend("b");
  const proxy = await startProxy(faultConfig([be.address], {
    extra: "admin: {address: 127.0.0.1, port: 0}\nlog: {level: info, access: false}",
  }));
  const MIB = 1024 * 1024;
  try {
    await sleep(1000);
    const start = await rssBytes(proxy.pid);
    // 6,000 spoofed Initials at 2,000/s from 250 addresses: before the fix the
    // proxy grew by 290-380 MiB and stayed there (glibc kept the freed pages).
    const flood = floodInitials({
      hostname: "127.0.0.1",
      port: proxy.port,
      sources: spreadSources(250),
      count: 6000,
      rate: 2000,
      maxDurationMs: 20_000,
    });
    let peak = start;
    const sampling = (async () => {
      while (flood.sent < 6000) {
        peak = Math.max(peak, await rssBytes(proxy.pid));
        await sleep(200);
      }
    })();
    try {
      await flood.done;
      await sampling;
    } finally {
      await flood.close();
    }
    const ended = performance.now();
    const series: string[] = [];
    let now = await rssBytes(proxy.pid);
    while (now - start > 150 * MIB && performance.now() - ended < 15_000) {
      await sleep(500);
      now = await rssBytes(proxy.pid);
      series.push(mib(now));
    }
    const seconds = ((performance.now() - ended) / 1000).toFixed(1);
    console.log(
      `RSS: start ${mib(start)}, flood peak ${mib(peak)}, ${mib(now)} ${seconds} s after ` +
        `(every 0.5 s: ${series.join(" ")})`,
    );
    assert.ok(
      now - start <= 150 * MIB,
      `RSS ${mib(now)} 15 s after the flood, started at ${mib(start)} (peak ${mib(peak)})`,
    );
    // The proxy says what it gave back, once the churn is over: on a busy
    // machine the flood may grow it less, and the RSS bound holds before the
    // release has run, so its line is awaited (bounded), not expected at once.
    const released = () => proxy.stderr.some((l) => /freed memory returned to the system/.test(l));
    await pollUntil(released);
    assert.ok(released(), proxy.stderr.join("\n"));
    // ... and /metrics counts the steps: collections during the flood, the release after it.
    const text = await scrapeMetrics(proxy.adminPort!);
    const steps = (step: string) =>
      metricValue(text, `spooky_quic_memory_steps_total{step="${step}"}`) ?? 0;
    assert.ok(steps("request") + steps("collect") >= 1, text);
    assert.ok(steps("settle") >= 1, text);
  } finally {
    assert.equal(await proxy.stop(), 0);
    await be.close();
  }
});
