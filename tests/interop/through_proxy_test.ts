/**
 * End to end through the real proxy process (HTTP/3 in, the proxy's own
 * HTTP/2 client out) to servers nobody here wrote: nghttpd, Node's http2
 * server, Caddy (h2c), `Deno.serve` and the payments service, each behind a
 * pool routed by host.
 *
 * @module
 */

import assert from "node:assert/strict";
import { H3TestClient } from "../support/h3_client.ts";
import { startProxy, testCerts } from "../support/proxy_process.ts";
import { sleep } from "../support/wait.ts";
import {
  H2C_SERVERS,
  type Server,
  startCaddy,
  startNghttpd,
  startPayments,
  testSite,
} from "./_servers.ts";

function head(method: string, host: string, path: string, port: number): Array<[string, string]> {
  return [
    [":method", method],
    [":scheme", "https"],
    [":authority", `${host}:${port}`],
    [":path", path],
  ];
}

Deno.test({
  name: "interop through the proxy",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const site = await testSite();
    const servers: Record<string, Server> = {};
    for (const [name, start] of Object.entries(H2C_SERVERS)) servers[name] = await start();
    servers.payments = await startPayments("interop-token");
    const pools = Object.entries(servers).map(([name, s]) =>
      `  ${name}:
    route: {host: ${name}.test}
    backends: [{id: ${name}, address: "${s.address}"}]`
    ).join("\n");
    const proxy = await startProxy(`version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tls: {cert: "{{cert}}", key: "{{key}}"}}
upstream:
${pools}
`);
    const ca = await Deno.readTextFile((await testCerts()).caPath);
    const client = await H3TestClient.connect(proxy.port, ca);
    try {
      for (const name of Object.keys(H2C_SERVERS)) {
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

Deno.test({
  name: "interop through the proxy: TLS backends (backend tls: {ca}), health-checked over HTTPS",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const site = await testSite();
    const certs = await testCerts();
    const caddy = await startCaddy(certs);
    const nghttpd = await startNghttpd({ tls: certs });
    const plain = await startNghttpd();
    const proxy = await startProxy(`version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tls: {cert: "{{cert}}", key: "{{key}}"}}
upstream:
  caddy:
    route: {host: caddy.test}
    backends:
      - {id: caddy, address: "${caddy.address}", tls: {ca: "${certs.caPath}"},
         health_check: {path: /small.txt, interval: 200}}
  nghttpd:
    route: {host: nghttpd.test}
    backends: [{id: nghttpd, address: "${nghttpd.address}", tls: {ca: "${certs.caPath}", server_name: localhost}}]
  wrong:
    route: {host: wrong.test}
    backends: [{id: wrong, address: "${plain.address}", tls: {ca: "${certs.caPath}"}}]
`);
    const ca = await Deno.readTextFile(certs.caPath);
    const client = await H3TestClient.connect(proxy.port, ca);
    try {
      for (const name of ["caddy", "nghttpd"]) {
        const big = await client.request({
          head: head("GET", `${name}.test`, "/big.bin", proxy.port),
        });
        assert.equal(big.status, 200, name);
        assert.deepEqual(big.body, site.big, `${name}: 1 MiB over TLS byte for byte`);
      }
      // Probes of the TLS backend succeed: it stays in (a failed probe would make it 503).
      await sleep(700);
      const again = await client.request({
        head: head("GET", "caddy.test", "/small.txt", proxy.port),
      });
      assert.equal(again.status, 200);
      // An h2c server configured as TLS: the handshake fails, 502, nothing hangs.
      const wrong = await client.request({
        head: head("GET", "wrong.test", "/small.txt", proxy.port),
      });
      assert.equal(wrong.status, 502);
    } finally {
      await client.close();
      await proxy.stop();
      for (const s of [caddy, nghttpd, plain]) await s.close();
    }
  },
});
