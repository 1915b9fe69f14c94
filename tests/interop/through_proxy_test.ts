/**
 * End to end through the real proxy process (HTTP/3 in, the proxy's own
 * HTTP/2 client out, on a worker and on the QUIC thread) to servers nobody
 * here wrote: nghttpd, Node's http2 server, Caddy (h2c), `Deno.serve` and
 * the payments service, each behind a pool routed by host.
 *
 * @module
 */

import assert from "node:assert/strict";
import { H3TestClient } from "../support/h3_client.ts";
import { startProxy, testCerts } from "../support/proxy_process.ts";
import {
  type Server,
  startCaddy,
  startDenoServe,
  startNghttpd,
  startNodeServer,
  startPayments,
  testSite,
} from "./_servers.ts";

const BACKENDS: Record<string, () => Promise<Server>> = {
  nghttpd: () => startNghttpd(),
  node: () => startNodeServer(),
  caddy: () => startCaddy(),
  deno: () => startDenoServe(),
};

function head(method: string, host: string, path: string, port: number): Array<[string, string]> {
  return [
    [":method", method],
    [":scheme", "https"],
    [":authority", `${host}:${port}`],
    [":path", path],
  ];
}

for (const workers of [1, 0]) {
  Deno.test({
    name: `interop through the proxy (upstream_client spooky, upstream_workers ${workers})`,
    sanitizeOps: false,
    sanitizeResources: false,
    async fn() {
      const site = await testSite();
      const servers: Record<string, Server> = {};
      for (const [name, start] of Object.entries(BACKENDS)) servers[name] = await start();
      servers.payments = await startPayments("interop-token");
      const pools = Object.entries(servers).map(([name, s]) =>
        `  ${name}:
    route: {host: ${name}.test}
    backends: [{id: ${name}, address: "${s.address}"}]`
      ).join("\n");
      const proxy = await startProxy(`version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tls: {cert: "{{cert}}", key: "{{key}}"}}
limits: {upstream_workers: ${workers}, upstream_client: spooky}
upstream:
${pools}
`);
      const ca = await Deno.readTextFile((await testCerts()).caPath);
      const client = await H3TestClient.connect(proxy.port, ca);
      try {
        for (const name of Object.keys(BACKENDS)) {
          const small = await client.request({
            head: head("GET", `${name}.test`, "/small.txt", proxy.port),
          });
          assert.equal(small.status, 200, name);
          assert.deepEqual(small.body, site.small, name);
          const results = await Promise.all(
            Array.from(
              { length: 6 },
              () => client.request({ head: head("GET", `${name}.test`, "/big.bin", proxy.port) }),
            ),
          );
          for (const r of results) {
            assert.equal(r.status, 200, name);
            assert.ok(r.finished, name);
            assert.deepEqual(r.body, site.big, `${name}: 1 MiB byte for byte`);
          }
          const missing = await client.request({
            head: head("GET", `${name}.test`, "/none.txt", proxy.port),
          });
          assert.equal(missing.status, 404, name);
          if (name !== "caddy") {
            const up = new Uint8Array(100_000).map((_, i) => (i * 3) & 0xff);
            const echoed = await client.request({
              head: [...head("POST", `${name}.test`, "/echo", proxy.port), [
                "content-length",
                String(up.length),
              ]],
              body: up,
            });
            assert.equal(echoed.status, 200, name);
            assert.deepEqual(echoed.body, up, `${name}: upload echoed`);
          }
        }
        const health = await client.request({
          head: head("GET", "payments.test", "/health", proxy.port),
        });
        assert.equal(health.status, 200);
        assert.equal(JSON.parse(new TextDecoder().decode(health.body)).status, "ok");
      } finally {
        await client.close();
        await proxy.stop();
        for (const s of Object.values(servers)) await s.close();
      }
    },
  });
}
