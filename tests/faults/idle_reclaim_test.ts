/**
 * Fault test (issue #25 item 7): once open connections reach 90% of
 * `limits.max_connections`, idle ones are sent away (GOAWAY, then closed) so a
 * slot held by a client that left without a close comes back before the idle
 * timeout; below that, idle connections are left alone.
 */
import assert from "node:assert/strict";
import { startBackend } from "../support/backend.ts";
import { H3TestClient } from "../support/h3_client.ts";
import { startProxy, testCerts } from "../support/proxy_process.ts";
import { faultConfig, getHead } from "../support/faults.ts";
import { sleep, withTimeout } from "../support/wait.ts";
import { scrapeMetrics } from "../support/metrics.ts";

async function reclaimed(adminPort: number): Promise<number> {
  const text = await scrapeMetrics(adminPort);
  return Number(
    /^spooky_connections_rejected_total\{reason="idle_reclaim"\} (\d+)$/m.exec(text)?.[1],
  );
}

Deno.test("#25.7: at 90% of max_connections idle connections are sent away; below it they stay", async () => {
  const be = startBackend("b");
  // max_connections 10: reclaiming starts at 9 open connections.
  const proxy = await startProxy(faultConfig([be.address], {
    extra: "admin: {address: 127.0.0.1, port: 0}\nlog: {level: warn, access: false}\n" +
      "limits: {max_connections: 10, idle_reclaim_ms: 300}",
  }));
  const ca = await Deno.readTextFile((await testCerts()).caPath);
  const clients: H3TestClient[] = [];
  const closed = new Set<number>();
  const open = async (n: number) => {
    for (let i = 0; i < n; i++) {
      const c = await H3TestClient.connect(proxy.port, ca);
      const r = await c.request({ head: getHead(`/c/${clients.length}`, proxy.port) });
      assert.equal(r.status, 200);
      const index = clients.push(c) - 1;
      c.conn.closed.then(() => closed.add(index), () => closed.add(index));
    }
  };
  try {
    await open(5);
    await sleep(1500); // five idle periods
    assert.deepEqual([...closed], [], "below the threshold no idle connection is sent away");
    assert.equal(await reclaimed(proxy.adminPort!), 0);

    await open(4); // 9 open: the threshold
    const deadline = performance.now() + 15_000;
    while (closed.size === 0 && performance.now() < deadline) await sleep(100);
    assert.ok(closed.size >= 1, "an idle connection was sent away");
    // Just enough to get back under the threshold, the longest idle first.
    assert.ok([...closed].every((i) => i < 5), `closed: ${[...closed]}`);
    assert.ok(await reclaimed(proxy.adminPort!) >= 1);
    // A newcomer gets in and is served.
    const fresh = await withTimeout(H3TestClient.connect(proxy.port, ca), 10_000, "newcomer");
    clients.push(fresh);
    const r = await fresh.request({ head: getHead("/fresh", proxy.port) });
    assert.equal(r.status, 200);
  } finally {
    await Promise.all(clients.map((c) => c.close().catch(() => {})));
    assert.equal(await proxy.stop(), 0);
    await be.close();
  }
});
