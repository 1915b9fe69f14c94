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
import { faultConfig, getHead, isAlive } from "../support/faults.ts";
import { sleep } from "../support/wait.ts";
import { startBackendProcess } from "../support/backend.ts";

const CONNECTIONS = 4;
const WORKERS_PER_CONNECTION = 8;
const KILL_AT_MS = 1500;
const RUN_MS = 4500;
/** After the kill, by when health checks (2 × 200 ms + probe timeout) must have reacted. */
const SETTLE_MS = 1200;

interface Outcome {
  startedAt: number;
  endedAt: number;
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
          endedAt: Date.now() - t0,
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
    const killStartedAt = Date.now() - t0;
    await doomed.kill("SIGKILL");
    const killedAt = Date.now() - t0;
    await load;

    // Requests finished before the kill began, and requests started after the
    // health checks had time to react; everything else was in flight around it.
    const before = outcomes.filter((o) => o.endedAt < killStartedAt);
    const after = outcomes.filter((o) => o.startedAt >= killedAt + SETTLE_MS);
    const failures = outcomes.filter((o) => o.status !== 200);
    console.log(
      `backend killed at ${killedAt} ms: ${before.length} requests before (${
        before.filter((o) => o.backend === "doomed").length
      } on the doomed backend), ${after.length} after ${SETTLE_MS} ms; ${failures.length} failed (${[
        ...new Set(failures.map((o) => o.status)),
      ]}), in flight from ${
        failures.map((o) => `${o.startedAt - killedAt}..${o.endedAt - killedAt}`)
      } ms`,
    );
    assert.ok(await isAlive(proxy.pid), "the proxy is still running");
    // Both backends served before the kill (round-robin), without failures.
    assert.ok(before.some((o) => o.backend === "doomed"));
    assert.ok(before.some((o) => o.backend === "live"));
    assert.deepEqual(before.filter((o) => o.status !== 200), []);
    for (const o of outcomes) assert.ok(o.finished, "every response ends cleanly");
    // Failures are 502/503 only, and only for requests in flight at the kill:
    // started before it ended (a small grace covers the moment the proxy
    // learns of the dead HTTP/2 connection) and still running when it began.
    // Later requests are retried on, or routed to, the live backend.
    const wrong = failures.filter((o) =>
      ![502, 503].includes(o.status) || o.startedAt > killedAt + 100 || o.endedAt < killStartedAt
    );
    assert.deepEqual(wrong, [], "only requests in flight at the kill fail, with 502/503");
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
