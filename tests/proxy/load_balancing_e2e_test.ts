/**
 * Issue #30.3: the load-aware balancers end to end, a real proxy process in
 * front of two real backends, one slow (it answers after 150 ms) and one
 * fast: under concurrent load `least-request` and `latency` each send the
 * fast one most of the requests (both backends equally weighted), and the
 * in-flight gauge is back at zero once the load is over.
 */
import assert from "node:assert/strict";
import { startBackend } from "../support/backend.ts";
import { getHead } from "../support/faults.ts";
import { H3TestClient } from "../support/h3_client.ts";
import { startProxy, testCerts } from "../support/proxy_process.ts";
import { sleep } from "../support/wait.ts";
import { scrapeMetrics } from "../support/metrics.ts";

const REQUESTS = 160;
const WORKERS = 8;

Deno.test("#30.3: least-request and latency: with one slow and one fast backend, the fast one takes most of the load", async () => {
  const slow = startBackend("slow", async () => {
    await sleep(150);
    return new Response("slow", { headers: { "x-backend": "slow" } });
  });
  const fast = startBackend(
    "fast",
    () => new Response("fast", { headers: { "x-backend": "fast" } }),
  );
  const certs = await testCerts();
  const pool = (name: string, type: string) =>
    `  ${name}:
    route: {path_prefix: /${name}}
    load_balancing: {type: ${type}}
    backends:
      - {id: ${name}-slow, address: "${slow.address}"}
      - {id: ${name}-fast, address: "${fast.address}"}
`;
  const proxy = await startProxy(`version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tls: {cert: "${certs.certPath}", key: "${certs.keyPath}"}}
upstream:
${pool("lr", "least-request")}${pool("lat", "latency")}admin: {port: 0}
`);
  const client = await H3TestClient.connect(proxy.port, await Deno.readTextFile(certs.caPath));

  /** `REQUESTS` GETs to `prefix` from `WORKERS` concurrent clients: who answered, counted. */
  const load = async (prefix: string) => {
    const answered: Record<string, number> = { slow: 0, fast: 0 };
    let next = 0;
    await Promise.all(Array.from({ length: WORKERS }, async () => {
      while (next < REQUESTS) {
        const i = next++;
        const res = await client.request({ head: getHead(`${prefix}/${i}`, proxy.port) });
        assert.equal(res.status, 200);
        const backend = res.headers.find(([n]) => n === "x-backend")?.[1] ?? "?";
        answered[backend] = (answered[backend] ?? 0) + 1;
      }
    }));
    return answered;
  };

  try {
    for (const prefix of ["/lr", "/lat"]) {
      const answered = await load(prefix);
      assert.equal(answered.slow + answered.fast, REQUESTS, JSON.stringify(answered));
      assert.ok(
        answered.fast >= REQUESTS * 2 / 3,
        `${prefix}: the fast backend answered ${answered.fast}, the slow one ${answered.slow}`,
      );
      assert.ok(answered.slow >= 1, `${prefix}: the slow one was tried too`);
    }
    const text = await scrapeMetrics(proxy.adminPort!);
    for (const id of ["lr-slow", "lr-fast", "lat-slow", "lat-fast"]) {
      assert.ok(
        text.includes(`spooky_backend_inflight{backend="${id}",`) &&
          text.split("\n").some((l) =>
            l.startsWith(`spooky_backend_inflight{backend="${id}",`) && l.endsWith(" 0")
          ),
        `${id} has nothing in flight once the load is over`,
      );
    }
  } finally {
    await client.close();
    assert.equal(await proxy.stop(), 0);
    await slow.close();
    await fast.close();
  }
});
