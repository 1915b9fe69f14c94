import assert from "node:assert/strict";
import { ensureDevCerts } from "../../shared/certs/generate.ts";
import { ConfigSchema } from "../config/schema.ts";
import { createH2Transport } from "../upstream/h2_transport.ts";
import { HealthChecker } from "./health_checker.ts";
import { backendsWithProbeHost, probeExchangeOf } from "./probe_host.ts";

function upstreamOf(pools: Record<string, unknown>) {
  return ConfigSchema.parse({
    version: 1,
    listen: { protocol: "http3", port: 9889, tls: { cert: "c.pem", key: "k.pem" } },
    upstream: pools,
  }).upstream;
}

Deno.test("#29.3: probes take health_check.host, else the pool's set.host, else none", () => {
  const upstream = upstreamOf({
    site: {
      route: { path_prefix: "/" },
      headers: { request: { set: { host: "site.internal" } } },
      backends: [
        { id: "a", address: "127.0.0.1:1", health_check: {} },
        { id: "b", address: "127.0.0.1:2", health_check: { host: "own.internal" } },
        { id: "c", address: "127.0.0.1:3" },
      ],
    },
    other: {
      route: { path_prefix: "/o" },
      backends: [{ id: "d", address: "127.0.0.1:4", health_check: {} }],
    },
  });
  const hosts = backendsWithProbeHost(upstream).map((b) => [b.id, b.health_check?.host]);
  assert.deepEqual(hosts, [["a", "site.internal"], ["b", "own.internal"], ["c", undefined], [
    "d",
    undefined,
  ]]);
  assert.equal(
    upstream.site.backends[0].health_check?.host,
    undefined,
    "the config is not changed",
  );
});

/** An h2c backend recording the authority (`:authority`) of each request. */
function recordingBackend() {
  const seen: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    seen.push(new URL(req.url).host);
    return new Response("ok");
  });
  return { seen, address: `127.0.0.1:${server.addr.port}`, close: () => server.shutdown() };
}

async function firstProbeAuthority(host: string | undefined): Promise<string> {
  const be = recordingBackend();
  let checker: HealthChecker | undefined;
  try {
    checker = new HealthChecker({
      backends: [{ id: "a", address: be.address, health_check: { interval: 60_000, host } }],
      userAgent: "test",
    });
    checker.start();
    for (let i = 0; i < 200 && be.seen.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 25));
    }
    assert.equal(be.seen.length >= 1, true, "probed");
    return be.seen[0];
  } finally {
    await checker?.stop();
    await be.close();
  }
}

Deno.test("#29.3: a probe sends health_check.host as :authority over h2c, to the backend's address", async () => {
  assert.equal(await firstProbeAuthority("site.internal"), "site.internal");
  assert.equal(await firstProbeAuthority("site.internal:8080"), "site.internal:8080");
});

Deno.test("#29.3: without a host a probe names the backend's address", async () => {
  const authority = await firstProbeAuthority(undefined);
  assert.match(authority, /^127\.0\.0\.1:\d+$/);
});

Deno.test("#29.3: over TLS a probe host goes through the proxy's own client: the host as :authority, the backend's SNI", async () => {
  const dir = await Deno.makeTempDir({ prefix: "spooky-probe-host-" });
  const certs = await ensureDevCerts(dir);
  const seen: string[] = [];
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    onListen() {},
    cert: await Deno.readTextFile(certs.certPath),
    key: await Deno.readTextFile(certs.keyPath),
  }, (req) => {
    seen.push(new URL(req.url).host);
    return new Response("ok");
  });
  const transport = createH2Transport();
  const healthy: string[] = [];
  const checker = new HealthChecker({
    backends: [{
      id: "a",
      address: `127.0.0.1:${server.addr.port}`,
      tls: { ca: certs.caPath, server_name: "localhost" },
      health_check: { interval: 60_000, host: "site.internal", failure_threshold: 1 },
    }],
    userAgent: "test",
    exchange: probeExchangeOf(transport),
    onTransition: (ev) => healthy.push(`${ev.to} ${ev.reason}`),
  });
  try {
    checker.start();
    for (let i = 0; i < 200 && seen.length === 0 && healthy.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 25));
    }
    assert.deepEqual([seen[0], healthy], ["site.internal", []]);
    assert.equal(checker.isHealthy("a"), true);
  } finally {
    await checker.stop();
    await transport.close();
    await server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});
