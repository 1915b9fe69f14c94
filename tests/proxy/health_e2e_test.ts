/**
 * Health checking and balancing end to end (spec: States and transitions):
 * real backends on loopback behind the real proxy process.
 */
import assert from "node:assert/strict";
import { startBackend } from "../support/backend.ts";
import { H3TestClient } from "../support/h3_client.ts";
import { startProxy, testCerts } from "../support/proxy_process.ts";
import { sleep } from "../support/wait.ts";

const INTERVAL = 250;
const TIMEOUT = 500;
const FAILURES = 2;
const SUCCESSES = 2;
const COOLDOWN = 1500;

function hc(): string {
  return `{interval: ${INTERVAL}, timeout_ms: ${TIMEOUT}, failure_threshold: ${FAILURES}, success_threshold: ${SUCCESSES}, cooldown_ms: ${COOLDOWN}}`;
}

async function hits(
  client: H3TestClient,
  n: number,
): Promise<{ by: Record<string, number>; statuses: number[] }> {
  const by: Record<string, number> = {};
  const statuses: number[] = [];
  for (let i = 0; i < n; i++) {
    const r = await client.request({
      head: [[":method", "GET"], [":scheme", "https"], [":authority", "localhost"], [
        ":path",
        "/who",
      ]],
    });
    statuses.push(r.status);
    if (r.status === 200) {
      const who = r.headers.find(([k]) => k === "x-backend")?.[1] ?? "?";
      by[who] = (by[who] ?? 0) + 1;
    }
  }
  return { by, statuses };
}

Deno.test("e2e: a 503 backend is taken out and comes back per the state table", async (t) => {
  let sick = false;
  const a = startBackend("a");
  const b = startBackend("b", (req) => {
    if (sick) return new Response("down", { status: 503 });
    return Response.json({ path: new URL(req.url).pathname }, { headers: { "x-backend": "b" } });
  });
  const proxy = await startProxy(`version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tls: {cert: "{{cert}}", key: "{{key}}"}}
passive_health: {enabled: false}
upstream:
  api:
    route: {path_prefix: /}
    load_balancing: {type: round-robin}
    backends:
      - {id: a, address: "${a.address}", health_check: ${hc()}}
      - {id: b, address: "${b.address}", health_check: ${hc()}}
`);
  const ca = await Deno.readTextFile((await testCerts()).caPath);
  const client = await H3TestClient.connect(proxy.port, ca);
  try {
    await t.step("both healthy: traffic is split", async () => {
      const r = await hits(client, 10);
      assert.equal(r.by.a, 5);
      assert.equal(r.by.b, 5);
    });

    await t.step(
      "turned to 503: out within failure_threshold × interval + timeout_ms",
      async () => {
        sick = true;
        await sleep(FAILURES * INTERVAL + TIMEOUT + 400);
        const r = await hits(client, 10);
        assert.deepEqual(r.by, { a: 10 });
        const log = proxy.stderr.join("\n");
        assert.match(log, /health check failed/);
        assert.match(log, /backend b is now unhealthy/);
      },
    );

    await t.step(
      "recovered: back after cooldown_ms + success_threshold × interval, not before",
      async () => {
        sick = false;
        // Successes during the cooldown do not count.
        await sleep(200);
        assert.deepEqual((await hits(client, 4)).by, { a: 4 });
        await sleep(COOLDOWN + SUCCESSES * INTERVAL + 400);
        const r = await hits(client, 10);
        assert.equal(r.by.b, 5);
        assert.match(proxy.stderr.join("\n"), /backend b is now healthy/);
      },
    );

    await t.step("all down → 503", async () => {
      sick = true;
      await a.close();
      await sleep(FAILURES * INTERVAL + TIMEOUT + 300);
      const r = await hits(client, 3);
      assert.deepEqual(r.statuses, [503, 503, 503]);
    });
  } finally {
    await client.close();
    assert.equal(await proxy.stop(), 0);
    await b.close();
  }
});

Deno.test("e2e: a killed backend costs no client request while another is healthy", async () => {
  const a = startBackend("a");
  const b = startBackend("b");
  const proxy = await startProxy(`version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tls: {cert: "{{cert}}", key: "{{key}}"}}
upstream:
  api:
    route: {path_prefix: /}
    backends:
      - {id: a, address: "${a.address}", health_check: {interval: 5000}}
      - {id: b, address: "${b.address}", health_check: {interval: 5000}}
`);
  const ca = await Deno.readTextFile((await testCerts()).caPath);
  const client = await H3TestClient.connect(proxy.port, ca);
  try {
    await a.close(); // killed; active checks will not notice for seconds
    const r = await hits(client, 20);
    assert.deepEqual(r.statuses, new Array(20).fill(200), "retry + passive ejection");
    assert.deepEqual(r.by, { b: 20 });
    assert.match(proxy.stderr.join("\n"), /retrying GET on b/);
  } finally {
    await client.close();
    assert.equal(await proxy.stop(), 0);
    await b.close();
  }
});
