/**
 * Issue #30.2: circuit breaking end to end, a real proxy process in front
 * of real backends. A backend at `max_inflight` with the pool's queue
 * (`max_pending`) full: the next requests are refused at once, 503
 * `overloaded` in JSON, and never reach it; the waiting one is served once
 * a slot frees; `/metrics` counts the refusals per backend and limit.
 * Passive health ejection works alongside: a dead backend with
 * `max_inflight` is ejected after its failures, its slots given back.
 */
import assert from "node:assert/strict";
import { startBackend } from "../support/backend.ts";
import { getHead } from "../support/faults.ts";
import { freePort } from "../support/free_port.ts";
import { H3TestClient } from "../support/h3_client.ts";
import { startProxy, testCerts } from "../support/proxy_process.ts";
import { pollUntil } from "../support/wait.ts";
import { scrapeMetrics } from "../support/metrics.ts";

Deno.test("#30.2: max_inflight and max_pending: past them 503 overloaded at once, counted per backend; ejection still works", async () => {
  const release = Promise.withResolvers<void>();
  const held = startBackend("held", async () => {
    await release.promise;
    return new Response("done");
  });
  const live = startBackend("live");
  const dead = `127.0.0.1:${freePort()}`;
  const certs = await testCerts();
  const proxy = await startProxy(`version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tls: {cert: "${certs.certPath}", key: "${certs.keyPath}"}}
passive_health: {consecutive_failures: 2, eject_ms: 60000}
upstream:
  guarded:
    route: {path_prefix: /guarded}
    max_pending: 1
    backends: [{id: held-0, address: "${held.address}", max_inflight: 2}]
  mixed:
    route: {path_prefix: /mixed}
    backends:
      - {id: dead-0, address: "${dead}", max_inflight: 4}
      - {id: live-0, address: "${live.address}", max_inflight: 4}
admin: {port: 0}
`);
  const client = await H3TestClient.connect(proxy.port, await Deno.readTextFile(certs.caPath));
  const get = (path: string) => client.request({ head: getHead(path, proxy.port) });
  const metrics = async () => await scrapeMetrics(proxy.adminPort!);
  const sample = (text: string, series: string) =>
    Number(text.split("\n").find((l) => l.startsWith(series + " "))?.split(" ").pop() ?? NaN);

  try {
    // Two in flight, one waiting: the pool is full.
    const served = [get("/guarded/1"), get("/guarded/2")];
    await pollUntil(() => held.seen.length === 2);
    const waiting = get("/guarded/3");
    await pollUntil(async () =>
      sample(await metrics(), 'spooky_pool_pending_requests{pool="guarded"}') === 1
    );
    const refused = await Promise.all([get("/guarded/4"), get("/guarded/5")]);
    for (const res of refused) {
      assert.equal(res.status, 503);
      assert.equal(JSON.parse(new TextDecoder().decode(res.body)).error, "overloaded");
    }
    assert.equal(held.seen.length, 2, "refused requests never reach the backend");
    release.resolve();
    for (const res of await Promise.all([...served, waiting])) assert.equal(res.status, 200);
    assert.equal(held.seen.length, 3, "the waiting request was served once a slot freed");
    let text = await metrics();
    const overloaded = (limit: string) =>
      sample(
        text,
        `spooky_backend_overloaded_total{backend="held-0",pool="guarded",limit="${limit}"}`,
      );
    assert.equal(overloaded("max_pending"), 2);
    assert.equal(overloaded("max_inflight"), 0);
    assert.equal(sample(text, 'spooky_backend_inflight{backend="held-0",pool="guarded"}'), 0);

    // A dead backend with max_inflight: its connect failures go to the live one, it is
    // ejected after two in a row, and its slots are given back.
    for (let i = 0; i < 8; i++) assert.equal((await get(`/mixed/${i}`)).status, 200);
    await pollUntil(() => proxy.stderr.some((l) => /backend dead-0 ejected/.test(l)));
    const backends = await (await fetch(`http://127.0.0.1:${proxy.adminPort}/admin/backends`))
      .json() as { backends: Array<{ id: string; ejected: boolean }> };
    assert.equal(backends.backends.find((b) => b.id === "dead-0")?.ejected, true);
    text = await metrics();
    assert.equal(sample(text, 'spooky_backend_inflight{backend="dead-0",pool="mixed"}'), 0);
    assert.equal(
      sample(
        text,
        'spooky_backend_overloaded_total{backend="dead-0",pool="mixed",limit="max_inflight"}',
      ),
      0,
    );
  } finally {
    release.resolve();
    await client.close();
    assert.equal(await proxy.stop(), 0);
    await held.close();
    await live.close();
  }
});
