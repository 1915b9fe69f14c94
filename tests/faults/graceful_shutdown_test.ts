/**
 * Fault test (issue #8): SIGTERM while ~50 requests (some slow) are in flight
 * on several connections. The proxy sends GOAWAY, finishes every accepted
 * request, and exits 0.
 */
import assert from "node:assert/strict";
import { startBackend } from "../support/backend.ts";
import { type H3Response, H3TestClient } from "../support/h3_client.ts";
import { startProxy, testCerts } from "../support/proxy_process.ts";
import { faultConfig, getHead } from "../support/faults.ts";
import { sleep, withTimeout } from "../support/wait.ts";

const CONNECTIONS = 5;
const PER_CONNECTION = 10;

Deno.test("faults: SIGTERM under load finishes all 50 in-flight requests and exits 0", async () => {
  const be = startBackend("b");
  const proxy = await startProxy(faultConfig([be.address], {
    extra: "limits: {drain_timeout_ms: 10000}",
  }));
  const ca = await Deno.readTextFile((await testCerts()).caPath);
  const clients: H3TestClient[] = [];
  try {
    for (let i = 0; i < CONNECTIONS; i++) clients.push(await H3TestClient.connect(proxy.port, ca));
    const paths = ["/slow/500", "/slow/1500", "/bytes/200000", "/slow/800", "/echo"];
    const pending: Array<Promise<H3Response>> = [];
    const wanted: string[] = [];
    for (const c of clients) {
      for (let j = 0; j < PER_CONNECTION; j++) {
        const path = paths[j % paths.length];
        wanted.push(path);
        pending.push(c.request({ head: getHead(path, proxy.port) }));
      }
    }
    // Wait until every request reached the backend, so all are in flight.
    const deadline = Date.now() + 10_000;
    while (be.seen.length < pending.length && Date.now() < deadline) await sleep(10);
    assert.equal(be.seen.length, pending.length, "all requests reached the backend");
    const sentAt = Date.now();
    const exited = proxy.stop("SIGTERM");
    const results = await withTimeout(Promise.all(pending), 15_000, "in-flight responses");
    const failed = results
      .map((r, i) => ({
        path: wanted[i],
        status: r.status,
        finished: r.finished,
        n: r.body.length,
      }))
      .filter((r) => r.status !== 200 || !r.finished);
    assert.deepEqual(failed, [], "every in-flight request completes with 200");
    for (const [i, r] of results.entries()) {
      if (wanted[i] === "/bytes/200000") assert.equal(r.body.length, 200000);
      if (wanted[i].startsWith("/slow/")) assert.equal(new TextDecoder().decode(r.body), "slow");
    }
    assert.equal(await withTimeout(exited, 15_000, "proxy exit"), 0);
    // The slowest request (1.5 s) bounded the drain, not the 10 s drain timeout.
    assert.ok(Date.now() - sentAt < 8000, `drained in ${Date.now() - sentAt} ms`);
    for (const c of clients) {
      assert.ok(c.goaways.length >= 1, "GOAWAY received on every connection");
    }
  } finally {
    await proxy.stop("SIGKILL");
    await Promise.all(clients.map((c) => c.close()));
    await be.close();
  }
});
