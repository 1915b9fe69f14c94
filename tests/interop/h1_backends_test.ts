/**
 * #29.1: end to end through the real proxy process (HTTP/3 in, the proxy's
 * HTTP/1.1 client out, `protocol: http1`) to HTTP/1.1 servers nobody here
 * wrote: Python's `http.server` (HTTP/1.0 answers), Node's `http`, nginx,
 * Caddy, `Deno.serve` and the payments service, each behind a pool routed by
 * host. Small and 1 MiB downloads (several at once: the keep-alive pool),
 * 404s, uploads echoed where the server echoes, trailers both ways with
 * Node, health probes over HTTP/1.1. Then TLS with ALPN: `protocol: auto`
 * picking `http/1.1` from an nginx that offers nothing else and `h2` from an
 * nginx and a Caddy that offer both, `protocol: http1` over TLS to the same
 * two, each seen in the backend's own `x-protocol` answer and in `/metrics`.
 *
 * @module
 */

import assert from "node:assert/strict";
import { H3TestClient } from "../support/h3_client.ts";
import { startProxy, testCerts } from "../support/proxy_process.ts";
import { needs } from "../support/tools.ts";
import { sleep } from "../support/wait.ts";
import { scrapeMetrics } from "../support/metrics.ts";
import { type Server, startCaddy, startDenoServe, startPayments, testSite } from "./_servers.ts";
import {
  startCaddyTls,
  startNginx,
  startNginxTls,
  startNodeHttpServer,
  startPythonServer,
} from "./_h1_servers.ts";

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

/**
 * The TLS backends: how each is started, its `protocol`, the HTTP version it
 * must hear, and the status it answers `/small.txt` with. nginx 1.22
 * (Debian 12) refuses an HTTP/2 request that carries `host` beside
 * `:authority` ("client sent duplicate host header", 400): the proxy sends
 * the authority once (`upstream/headers.ts`), so nginx over HTTP/2 serves.
 */
const TLS_BACKENDS: Record<string, {
  server: "nginx-h1" | "nginx-h2" | "caddy";
  protocol: "auto" | "http1";
  heard: string;
  status: number;
}> = {
  "nginx-auto": { server: "nginx-h1", protocol: "auto", heard: "HTTP/1.1", status: 200 },
  "nginx-h2-auto": { server: "nginx-h2", protocol: "auto", heard: "HTTP/2.0", status: 200 },
  "nginx-h2-http1": { server: "nginx-h2", protocol: "http1", heard: "HTTP/1.1", status: 200 },
  "caddy-auto": { server: "caddy", protocol: "auto", heard: "HTTP/2.0", status: 200 },
  "caddy-http1": { server: "caddy", protocol: "http1", heard: "HTTP/1.1", status: 200 },
};

Deno.test({
  ...needs(
    "#29.1: TLS with ALPN: `auto` picks http/1.1 or h2 per backend, `http1` over TLS (nginx, Caddy)",
    "nginx",
    "caddy",
  ),
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const site = await testSite();
    const certs = await testCerts();
    const servers: Record<string, Server> = {};
    try {
      servers["nginx-h1"] = await startNginxTls(certs, false);
      servers["nginx-h2"] = await startNginxTls(certs, true);
      servers.caddy = await startCaddyTls(certs);
    } catch (err) {
      for (const s of Object.values(servers)) await s.close();
      throw err;
    }
    const pools = Object.entries(TLS_BACKENDS).map(([name, b]) =>
      `  ${name}:
    route: {host: ${name}.test}
    backends: [{id: ${name}, address: "${servers[b.server].address}", protocol: ${b.protocol},
                tls: {ca: "${certs.caPath}", server_name: localhost}${
        b.status === 200 ? ",\n                health_check: {path: /small.txt, interval: 200}" : ""
      }}]`
    ).join("\n");
    const proxy = await startProxy(`version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tls: {cert: "{{cert}}", key: "{{key}}"}}
admin: {address: 127.0.0.1, port: 0}
upstream:
${pools}
`);
    const ca = await Deno.readTextFile(certs.caPath);
    const client = await H3TestClient.connect(proxy.port, ca);
    try {
      // Probes over TLS in each backend's protocol keep every probed backend in.
      await sleep(700);
      for (const [name, b] of Object.entries(TLS_BACKENDS)) {
        const small = await client.request({
          head: head("GET", `${name}.test`, "/small.txt", proxy.port),
        });
        assert.equal(small.status, b.status, name);
        const heard = small.headers.find(([n]) => n === "x-protocol")?.[1];
        assert.equal(heard, b.heard, `${name}: the backend heard ${heard}`);
        if (b.status !== 200) continue;
        assert.deepEqual(small.body, site.small, name);
        const big = await client.request({
          head: head("GET", `${name}.test`, "/big.bin", proxy.port),
        });
        assert.equal(big.status, 200, name);
        assert.deepEqual(big.body, site.big, `${name}: 1 MiB over TLS byte for byte`);
      }
      assert.doesNotMatch(proxy.stderr.join("\n"), /health check failed/);
      // /metrics tells the protocols apart: each address's connections under the one it speaks.
      const metrics = await scrapeMetrics(proxy.adminPort!);
      const opened = (server: string, protocol: string) =>
        Number(
          metrics.match(
            new RegExp(
              `^spooky_upstream_connections_opened_total\\{address="${
                servers[server].address
              }",protocol="${protocol}"\\} (\\d+)$`,
              "m",
            ),
          )?.[1] ?? 0,
        );
      assert.ok(opened("nginx-h1", "http1") >= 1, "nginx (http/1.1 only): HTTP/1.1 connections");
      assert.equal(opened("nginx-h1", "h2"), 0, "nginx (http/1.1 only): no HTTP/2 connection");
      assert.ok(opened("nginx-h2", "h2") >= 1, "nginx with http2: auto's HTTP/2 connections");
      assert.ok(opened("nginx-h2", "http1") >= 1, "nginx with http2: http1's connections");
      assert.ok(opened("caddy", "h2") >= 1 && opened("caddy", "http1") >= 1, "caddy: both");
    } finally {
      await client.close();
      await proxy.stop();
      for (const s of Object.values(servers)) await s.close();
    }
  },
});
