/**
 * Fault test (issue #8): one of two round-robin backends is killed (SIGKILL)
 * under load. The proxy stays up; only requests in flight to the dead backend
 * may fail, and only with 502/503; once health checks (200 ms interval,
 * failure threshold 2) and passive ejection have reacted, every request is
 * served by the surviving backend with 200.
 */
// deno-lint-ignore-file no-console
import assert from "node:assert/strict";
import { H3TestClient } from "../support/h3_client.ts";
import { startProxy, testCerts } from "../support/proxy_process.ts";
import { faultConfig, getHead, isAlive, sleep, startBackendProcess } from "./_support.ts";

const CONNECTIONS = 4;
const WORKERS_PER_CONNECTION = 8;
const KILL_AT_MS = 1500;
const RUN_MS = 4500;
/** After the kill, by when health checks (2 × 200 ms + probe timeout) must have reacted. */
const SETTLE_MS = 1200;

interface Outcome {
  startedAt: number;
  status: number;
  backend: string | undefined;
  finished: boolean;
}

Deno.test("faults: a backend killed under load costs only its in-flight requests (502/503), then all 200", async () => {
  const [live, doomed] = await Promise.all([
    startBackendProcess("live"),
    startBackendProcess("doomed"),
  ]);
  const proxy = await startProxy(faultConfig([live.address, doomed.address], {
    healthCheck: "{interval: 200, timeout_ms: 300, failure_threshold: 2, cooldown_ms: 60000}",
    requestTimeoutMs: 3000,
  }));
  const ca = await Deno.readTextFile((await testCerts()).caPath);
  const clients: H3TestClient[] = [];
  try {
    for (let i = 0; i < CONNECTIONS; i++) clients.push(await H3TestClient.connect(proxy.port, ca));
    const t0 = Date.now();
    const outcomes: Outcome[] = [];
    const worker = async (c: H3TestClient, w: number) => {
      for (let n = 0; Date.now() - t0 < RUN_MS && n < 10_000; n++) {
        const startedAt = Date.now() - t0;
        // Mix quick requests with slower ones so some are in flight at the kill.
        const path = (n + w) % 3 === 0 ? "/slow/150" : "/anything";
        const r = await c.request({ head: getHead(path, proxy.port) });
        outcomes.push({
          startedAt,
          status: r.status,
          backend: r.headers.find(([k]) => k === "x-backend")?.[1],
          finished: r.finished,
        });
      }
    };
    const load = Promise.all(
      clients.flatMap((c) =>
        Array.from({ length: WORKERS_PER_CONNECTION }, (_, w) => worker(c, w))
      ),
    );
    await sleep(KILL_AT_MS);
    await doomed.kill("SIGKILL");
    const killedAt = Date.now() - t0;
    await load;

    const before = outcomes.filter((o) => o.startedAt < killedAt - 200);
    const around = outcomes.filter((o) =>
      o.startedAt >= killedAt - 200 && o.startedAt < killedAt + SETTLE_MS
    );
    const after = outcomes.filter((o) => o.startedAt >= killedAt + SETTLE_MS);
    const count = (os: Outcome[], f: (o: Outcome) => boolean) => os.filter(f).length;
    console.log(
      `backend killed at ${killedAt} ms: before ${before.length} (${
        count(before, (o) => o.backend === "doomed")
      } on doomed), around ${around.length} (${count(around, (o) => o.status !== 200)} failed: ${[
        ...new Set(around.filter((o) => o.status !== 200).map((o) => o.status)),
      ]}), after ${after.length} (${
        count(after, (o) => o.status !== 200)
      } failed); failures started at ${
        outcomes.filter((o) => o.status !== 200).map((o) => o.startedAt - killedAt)
      } ms from the kill`,
    );
    assert.ok(await isAlive(proxy.pid), "the proxy is still running");
    // Both backends served before the kill (round-robin).
    assert.ok(count(before, (o) => o.backend === "doomed") > 0);
    assert.ok(count(before, (o) => o.backend === "live") > 0);
    assert.deepEqual(before.filter((o) => o.status !== 200), []);
    // Around the kill: every response is a complete HTTP response, 200 or 502/503.
    for (const o of outcomes) assert.ok(o.finished, "every response ends cleanly");
    const wrong = around.filter((o) => ![200, 502, 503].includes(o.status));
    assert.deepEqual(wrong, [], "failures are only 502/503");
    // Failed requests were in flight when the backend died (measured: all
    // started 0-200 ms before it); a small grace covers the moment the proxy
    // learns of the dead HTTP/2 connection. Later requests are retried or
    // routed to the live backend.
    const late = outcomes.filter((o) => o.status !== 200 && o.startedAt > killedAt + 100);
    assert.deepEqual(late, [], "only requests in flight at the kill fail");
    // Afterwards: all traffic is on the live backend and succeeds.
    assert.ok(after.length > 50, `enough traffic after the kill (${after.length})`);
    assert.deepEqual(after.filter((o) => o.status !== 200 || o.backend !== "live"), []);
    // And a fresh connection is served too.
    const fresh = await H3TestClient.connect(proxy.port, ca);
    clients.push(fresh);
    assert.equal((await fresh.request({ head: getHead("/final", proxy.port) })).status, 200);
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    assert.equal(await proxy.stop(), 0);
    await Promise.all([live.kill(), doomed.kill()]);
  }
});
