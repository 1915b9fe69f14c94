/**
 * Issue #30.1: rate limiting end to end, a real proxy process in front of a
 * real backend: `burst` requests pass, the next is a 429 with `Retry-After`,
 * `RateLimit-Policy` and `RateLimit` that the backend never sees; `/metrics`
 * counts both; the access log names the limit; a reload keeps the buckets
 * of an unchanged limit and applies a changed one.
 */
import assert from "node:assert/strict";
import { startBackend } from "../support/backend.ts";
import { getHead } from "../support/faults.ts";
import { H3TestClient } from "../support/h3_client.ts";
import { adminReload, startProxy, testCerts } from "../support/proxy_process.ts";
import { metricValue, scrapeMetrics } from "../support/metrics.ts";
import { pollUntil } from "../support/wait.ts";

Deno.test("#30.1: rate limit: burst+1 requests, the last a 429 the backend never sees; metrics, access log, reload", async () => {
  const be = startBackend("b");
  const certs = await testCerts();
  // 0.01 requests per second: no token comes back while the test runs.
  const config = (limit: string) =>
    `version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tls: {cert: "${certs.certPath}", key: "${certs.keyPath}"}}
rate_limits:
  - {name: per-client, requests_per_second: 0.01, key: client, ${limit}}
upstream:
  limited: {route: {path_prefix: /}, rate_limit: per-client, backends: [{id: b0, address: "${be.address}"}]}
  free: {route: {path_prefix: /free}, backends: [{id: b1, address: "${be.address}"}]}
admin: {port: 0}
`;
  const proxy = await startProxy(config("burst: 3"));
  const client = await H3TestClient.connect(proxy.port, await Deno.readTextFile(certs.caPath));
  const get = (path: string) => client.request({ head: getHead(path, proxy.port) });
  const field = (res: { headers: Array<[string, string]> }, name: string) =>
    res.headers.find(([n]) => n === name)?.[1];
  const metric = async (decision: string) =>
    metricValue(
      await scrapeMetrics(proxy.adminPort!),
      `spooky_rate_limit_decisions_total{limit="per-client",decision="${decision}"}`,
    );
  try {
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await get(`/ok/${i}`)).status);
    assert.deepEqual(statuses, [200, 200, 200]);
    const refused = await get("/over");
    assert.equal(refused.status, 429);
    assert.equal(field(refused, "retry-after"), "100");
    assert.equal(field(refused, "ratelimit-policy"), '"per-client";q=3;w=300');
    assert.equal(field(refused, "ratelimit"), '"per-client";r=0;t=300');
    assert.equal(field(refused, "content-type"), "application/json");
    assert.equal(JSON.parse(new TextDecoder().decode(refused.body)).error, "rate_limited");
    assert.deepEqual(be.seen.map((r) => new URL(r.url).pathname), ["/ok/0", "/ok/1", "/ok/2"]);
    assert.equal(field(await get("/free/x"), "ratelimit"), undefined, "response_headers is off");
    assert.equal((await get("/free/y")).status, 200, "a pool without a limit is unlimited");

    assert.equal(await metric("allowed"), 3);
    assert.equal(await metric("limited"), 1);
    await pollUntil(() => proxy.stderr.some((l) => l.includes("/over") && l.includes(" 429 ")));
    const line = proxy.stderr.find((l) => l.includes("/over") && l.includes(" 429 "));
    assert.ok(line?.includes(" limit=per-client"), proxy.stderr.join("\n"));
    assert.ok(
      !proxy.stderr.some((l) => l.includes("/ok/0") && l.includes("limit=")),
      "only a refusal names the limit",
    );

    // An unchanged limit (response_headers aside) keeps its buckets across a reload.
    await Deno.writeTextFile(proxy.configPath, config("burst: 3, response_headers: true"));
    assert.deepEqual(await adminReload(proxy.adminPort!), { reloaded: true, restart_required: [] });
    assert.equal((await get("/still-over")).status, 429);

    // A changed limit applies at once, with full buckets.
    await Deno.writeTextFile(proxy.configPath, config("burst: 5, response_headers: true"));
    assert.deepEqual(await adminReload(proxy.adminPort!), { reloaded: true, restart_required: [] });
    const first = await get("/again/0");
    assert.equal(first.status, 200);
    assert.equal(field(first, "ratelimit"), '"per-client";r=4;t=100');
    assert.equal(field(first, "ratelimit-policy"), '"per-client";q=5;w=500');
    for (let i = 1; i < 5; i++) assert.equal((await get(`/again/${i}`)).status, 200);
    assert.equal((await get("/again/5")).status, 429);
    assert.equal(be.seen.filter((r) => new URL(r.url).pathname.startsWith("/again/")).length, 5);
    assert.equal(await metric("allowed"), 8, "counters survive reloads");
    assert.equal(await metric("limited"), 3);
  } finally {
    await client.close();
    assert.equal(await proxy.stop(), 0);
    await be.close();
  }
});
