/**
 * Issue #30.2: a retry budget end to end, a real proxy process in front of
 * real backends: a backend that answers every other request 503, under
 * steady load from concurrent clients, with `retries.retry_on: [503]`.
 * With the budget (20 %) the backend sees at most 1.2× the clients'
 * requests; with the budget out of the way (a floor no load reaches) every
 * failed request is sent again, about 1.5×. Another pool, on a healthy
 * backend, is unaffected; `/metrics` counts the retries and the refusals.
 */
import assert from "node:assert/strict";
import { startBackend } from "../support/backend.ts";
import { getHead } from "../support/faults.ts";
import { H3TestClient } from "../support/h3_client.ts";
import { adminReload, startProxy, testCerts } from "../support/proxy_process.ts";
import { scrapeMetrics } from "../support/metrics.ts";

/** Requests each phase sends to the flaky pool, and to the steady one. */
const FLAKY_REQUESTS = 320;
const STEADY_REQUESTS = 80;

Deno.test("#30.2: retry budget under steady load: a half-failing backend sees <= 1.2x the requests (about 1.5x without); another pool unaffected", async () => {
  let arrivals = 0;
  const flaky = startBackend("flaky", () => {
    arrivals++;
    return new Response(arrivals % 2 === 0 ? "busy" : "ok", {
      status: arrivals % 2 === 0 ? 503 : 200,
    });
  });
  const steady = startBackend("steady");
  const certs = await testCerts();
  const config = (budget: string) =>
    `version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tls: {cert: "${certs.certPath}", key: "${certs.keyPath}"}}
passive_health: {enabled: false}
upstream:
  flaky:
    route: {path_prefix: /flaky}
    retries: {retry_on: [503], backoff_base_ms: 10, backoff_max_ms: 40, ${budget}}
    backends: [{id: flaky-0, address: "${flaky.address}"}]
  steady: {route: {path_prefix: /steady}, backends: [{id: steady-0, address: "${steady.address}"}]}
admin: {port: 0}
`;
  const proxy = await startProxy(config("budget_percent: 20"));
  const client = await H3TestClient.connect(proxy.port, await Deno.readTextFile(certs.caPath));
  const metrics = async () => await scrapeMetrics(proxy.adminPort!);
  const sample = (text: string, series: string) =>
    Number(text.split("\n").find((l) => l.startsWith(series + " "))?.split(" ").pop() ?? NaN);

  /** `count` GETs to `prefix` from `workers` concurrent clients, each waiting for its answer. */
  const load = async (prefix: string, count: number, workers: number) => {
    const statuses: number[] = [];
    let next = 0;
    await Promise.all(Array.from({ length: workers }, async () => {
      while (next < count) {
        const i = next++;
        const res = await client.request({ head: getHead(`${prefix}/${i}`, proxy.port) });
        statuses.push(res.status);
      }
    }));
    return statuses;
  };
  /** One phase: both pools under load at once; what the backends saw of it. */
  const phase = async () => {
    const flakyBefore = flaky.seen.length;
    const steadyBefore = steady.seen.length;
    const [flakyStatuses, steadyStatuses] = await Promise.all([
      load("/flaky", FLAKY_REQUESTS, 16),
      load("/steady", STEADY_REQUESTS, 4),
    ]);
    return {
      ratio: (flaky.seen.length - flakyBefore) / FLAKY_REQUESTS,
      flakyStatuses,
      steadyStatuses,
      steadySeen: steady.seen.length - steadyBefore,
    };
  };

  try {
    const budgeted = await phase();
    assert.ok(budgeted.ratio <= 1.2, `with the budget: ${budgeted.ratio.toFixed(3)}x`);
    assert.ok(budgeted.ratio > 1, "some requests were sent again");
    assert.equal(budgeted.flakyStatuses.length, FLAKY_REQUESTS);
    assert.ok(budgeted.flakyStatuses.every((s) => s === 200 || s === 503));
    assert.deepEqual(budgeted.steadyStatuses, Array(STEADY_REQUESTS).fill(200), "steady pool");
    assert.equal(budgeted.steadySeen, STEADY_REQUESTS, "the steady pool's requests, once each");
    const text = await metrics();
    const retried = sample(text, 'spooky_pool_retries_total{pool="flaky",reason="503"}');
    const denied = sample(text, 'spooky_pool_retry_budget_denied_total{pool="flaky"}');
    assert.equal(retried, flaky.seen.length - FLAKY_REQUESTS, "every retry counted");
    assert.ok(denied > 0, `the budget refused retries: ${denied}`);
    assert.equal(sample(text, 'spooky_pool_retry_budget_denied_total{pool="steady"}'), 0);

    // The budget out of the way: a floor of 10000 retries a second grants every one.
    await Deno.writeTextFile(
      proxy.configPath,
      config("budget_percent: 100, min_retries_per_second: 10000"),
    );
    assert.deepEqual(await adminReload(proxy.adminPort!), { reloaded: true, restart_required: [] });
    const unbudgeted = await phase();
    assert.ok(unbudgeted.ratio >= 1.35, `without the budget: ${unbudgeted.ratio.toFixed(3)}x`);
    assert.deepEqual(unbudgeted.steadyStatuses, Array(STEADY_REQUESTS).fill(200), "steady pool");
    assert.equal(unbudgeted.steadySeen, STEADY_REQUESTS);
  } finally {
    await client.close();
    assert.equal(await proxy.stop(), 0);
    await flaky.close();
    await steady.close();
  }
});
