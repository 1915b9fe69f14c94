/**
 * #29.1: end to end through the real proxy process (HTTP/3 in, the proxy's
 * HTTP/1.1 client out, `protocol: http1`) to HTTP/1.1 servers nobody here
 * wrote: Python's `http.server` (HTTP/1.0 answers), Node's `http`, nginx,
 * Caddy, `Deno.serve` and the payments service, each behind a pool routed by
 * host. Small and 1 MiB downloads (several at once: the keep-alive pool),
 * 404s, uploads echoed where the server echoes, trailers both ways with
 * Node, health probes over HTTP/1.1.
 *
 * @module
 */

import assert from "node:assert/strict";
import { H3TestClient } from "../support/h3_client.ts";
import { startProxy, testCerts } from "../support/proxy_process.ts";
import { needs } from "../support/tools.ts";
import { sleep } from "../support/wait.ts";
import { type Server, startCaddy, startDenoServe, startPayments, testSite } from "./_servers.ts";
import { startNginx, startNodeHttpServer, startPythonServer } from "./_h1_servers.ts";

function head(method: string, host: string, path: string, port: number): Array<[string, string]> {
  return [[":method", method], [":scheme", "https"], [":authority", `${host}:${port}`], [
    ":path",
    path,
  ]];
}

/** The HTTP/1.1 servers, by name, and whether they echo `/echo`. */
const SERVERS: Record<string, { start: () => Promise<Server>; echo: boolean }> = {
  python: { start: startPythonServer, echo: false },
  node: { start: startNodeHttpServer, echo: true },
  nginx: { start: startNginx, echo: false },
  caddy: { start: () => startCaddy(), echo: false },
  deno: { start: startDenoServe, echo: true },
};

Deno.test({
  ...needs(
    "#29.1: interop through the proxy with HTTP/1.1 backends",
    "python3",
    "node",
    "nginx",
    "caddy",
  ),
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const site = await testSite();
    const servers: Record<string, Server> = {};
    try {
      for (const [name, s] of Object.entries(SERVERS)) servers[name] = await s.start();
      servers.payments = await startPayments("interop-token");
    } catch (err) {
      for (const s of Object.values(servers)) await s.close();
      throw err;
    }
    const pools = Object.entries(servers).map(([name, s]) => {
      const probe = name === "payments" ? "/health" : "/small.txt";
      return `  ${name}:
    route: {host: ${name}.test}
    backends: [{id: ${name}, address: "${s.address}", protocol: http1,
                health_check: {path: ${probe}, interval: 200}}]`;
    }).join("\n");
    const proxy = await startProxy(`version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tls: {cert: "{{cert}}", key: "{{key}}"}}
upstream:
${pools}
`);
    const ca = await Deno.readTextFile((await testCerts()).caPath);
    const client = await H3TestClient.connect(proxy.port, ca);
    try {
      // Probes over HTTP/1.1 keep every backend in (a failed probe would make it 503).
      await sleep(700);
      for (const [name, s] of Object.entries(SERVERS)) {
        const small = await client.request({
          head: head("GET", `${name}.test`, "/small.txt", proxy.port),
        });
        assert.equal(small.status, 200, name);
        assert.deepEqual(small.body, site.small, name);
        const results = await Promise.all(
          Array.from(
            { length: 4 },
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
        if (!s.echo) continue;
        const up = new Uint8Array(3 * 1024 * 1024).map((_, i) => (i * 3) & 0xff);
        const echoed = await client.request({
          head: [...head("POST", `${name}.test`, "/echo", proxy.port), [
            "content-length",
            String(up.length),
          ]],
          body: up,
        });
        assert.equal(echoed.status, 200, name);
        assert.ok(echoed.body.length === up.length, `${name}: ${echoed.body.length} bytes echoed`);
        assert.deepEqual(echoed.body, up, `${name}: 3 MiB upload echoed`);
      }
      // Trailers both ways (Node): the client's trailers reach it, its own come back.
      const withTrailers = await client.request({
        head: [...head("POST", "node.test", "/echo", proxy.port), ["te", "trailers"]],
        body: new TextEncoder().encode("hello"),
        trailers: [["x-checksum", "abc"]],
      });
      assert.equal(withTrailers.status, 200);
      assert.equal(new TextDecoder().decode(withTrailers.body), "hello");
      assert.deepEqual(withTrailers.trailers, [["x-checksum", "abc"]]);

      const health = await client.request({
        head: head("GET", "payments.test", "/health", proxy.port),
      });
      assert.equal(health.status, 200);
      assert.equal(JSON.parse(new TextDecoder().decode(health.body)).status, "ok");
      assert.doesNotMatch(proxy.stderr.join("\n"), /health check failed/);
    } finally {
      await client.close();
      await proxy.stop();
      for (const s of Object.values(servers)) await s.close();
    }
  },
});
