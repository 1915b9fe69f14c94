/**
 * Issue #30.5: backends configured by name, end to end: a real proxy
 * process, real backends on two loopback addresses (127.0.0.1 and
 * 127.0.0.2, the same port), and a DNS server on loopback UDP that the test
 * controls (`tests/support/dns_server.ts`), named by `dns.servers`.
 *
 * - The name's address changes: new requests go to the new address; a
 *   request in flight on the old one finishes; the old address's
 *   connections close (drained); the lookups are counted.
 * - A lookup that fails (SERVFAIL, then silence) keeps the last answer.
 * - A shorter TTL than `dns_refresh_ms` is honoured.
 * - A name that does not resolve is a warning with its key and line, at
 *   startup and with `--check`, not a crash.
 */
import assert from "node:assert/strict";
import { startDnsServer } from "../support/dns_server.ts";
import { getHead } from "../support/faults.ts";
import { H3TestClient } from "../support/h3_client.ts";
import { runCli, startProxy, testCerts, writeConfig } from "../support/proxy_process.ts";
import { metricValue, scrapeMetrics } from "../support/metrics.ts";
import { msUntil } from "../support/wait.ts";

/** Waits until `cond` holds, failing the test (naming `what`) when it does not within `ms`. */
async function until(cond: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  assert.ok(await msUntil(cond, ms) >= 0, `${what}: not within ${ms} ms`);
}

/** A backend answering its own name, on `hostname`:`port`; `/hold` waits for `release()`. */
function namedBackend(name: string, hostname: string, port: number) {
  const seen: string[] = [];
  const held = Promise.withResolvers<void>();
  const server = Deno.serve({ hostname, port, onListen() {} }, async (req) => {
    const path = new URL(req.url).pathname;
    seen.push(path);
    if (path === "/hold") await held.promise;
    return new Response(`${name} ${path}`);
  });
  return {
    port: server.addr.port,
    seen,
    release: () => held.resolve(),
    close: () => server.shutdown(),
  };
}

/** Established TCP connections whose local end is `ip:port` (the backend's side), from /proc/net/tcp. */
async function establishedTo(ip: string, port: number): Promise<number> {
  const hex = ip.split(".").reverse().map((o) => Number(o).toString(16).padStart(2, "0")).join("")
    .toUpperCase();
  const local = `${hex}:${port.toString(16).toUpperCase().padStart(4, "0")}`;
  const table = await Deno.readTextFile("/proc/net/tcp");
  return table.split("\n").slice(1).filter((line) => {
    const cols = line.trim().split(/\s+/);
    return cols[1] === local && cols[3] === "01";
  }).length;
}

/** `spooky_backend_<family>` of backend `api` as a number (`result` for the lookups). */
async function metric(adminPort: number, family: string, result?: string): Promise<number> {
  const text = await scrapeMetrics(adminPort);
  const labels = `backend="api",pool="p"${result ? `,result="${result}"` : ""}`;
  const value = metricValue(text, `spooky_backend_${family}{${labels}}`);
  assert.ok(value !== undefined, `no ${family} in\n${text}`);
  return value;
}

async function configOf(
  dnsAddress: string,
  address: string,
  refreshMs: number,
  backend = "",
): Promise<string> {
  const certs = await testCerts();
  return `version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tls: {cert: "${certs.certPath}", key: "${certs.keyPath}"}}
dns: {servers: ["${dnsAddress}"], timeout_ms: 500}
upstream:
  p:
    route: {path_prefix: /}
    dns_refresh_ms: ${refreshMs}
    backends: [{id: api, address: "${address}"${backend}}]
admin: {port: 0}
`;
}

Deno.test("#30.5: hostname backend: an address change moves new requests, drains the old address, and a failed lookup keeps the last answer", async () => {
  const dns = startDnsServer();
  const a = namedBackend("a", "127.0.0.1", 0);
  const b = namedBackend("b", "127.0.0.2", a.port);
  dns.set("api.test", { a: ["127.0.0.1"], ttl: 300 });
  const certs = await testCerts();
  // Probes every 100 ms, one failure enough to mark the backend unhealthy.
  const probes = ", health_check: {interval: 100, timeout_ms: 1000, failure_threshold: 1}";
  const proxy = await startProxy(await configOf(dns.address, `api.test:${a.port}`, 200, probes));
  const client = await H3TestClient.connect(proxy.port, await Deno.readTextFile(certs.caPath));
  const text = async (path: string) => {
    const res = await client.request({ head: getHead(path, proxy.port) });
    return `${res.status} ${new TextDecoder().decode(res.body)}`;
  };
  try {
    assert.equal(await text("/one"), "200 a /one");
    assert.ok(await establishedTo("127.0.0.1", a.port) >= 1, "a connection to the first address");
    // A request in flight on the old address when the name moves.
    const held = text("/hold");
    await until(
      () => Promise.resolve(a.seen.includes("/hold")),
      10_000,
      "the held request arrives",
    );

    dns.set("api.test", { a: ["127.0.0.2"], ttl: 300 });
    await until(
      async () => (await text("/probe")).startsWith("200 b "),
      15_000,
      "requests move to the new address",
    );
    const requests = (b: { seen: string[] }) => b.seen.filter((p) => p !== "/health").length;
    const before = requests(a);
    for (let i = 0; i < 5; i++) assert.equal(await text(`/after/${i}`), `200 b /after/${i}`);
    assert.equal(requests(a), before, "the old address gets no new request");
    // Health probes go to the name's addresses too (the system's resolver knows no api.test).
    await until(
      () => Promise.resolve(b.seen.includes("/health")),
      10_000,
      "probes reach the new address",
    );
    const health = await (await fetch(`http://127.0.0.1:${proxy.adminPort}/health`)).json();
    assert.deepEqual(health.backends, { api: "healthy" });

    // The request in flight finishes on the old address; then its connection
    // closes at once (drained), where an idle session would stay open for
    // SESSION_IDLE_MS (30 s).
    a.release();
    assert.equal(await held, "200 a /hold");
    await until(
      async () => await establishedTo("127.0.0.1", a.port) === 0,
      10_000,
      "the old address's connections drain and close",
    );
    const backends = await (await fetch(`http://127.0.0.1:${proxy.adminPort}/admin/backends`))
      .json();
    assert.deepEqual(backends.backends[0].resolvedAddresses, [`127.0.0.2:${a.port}`]);
    assert.equal(await metric(proxy.adminPort!, "addresses"), 1);
    assert.ok(await metric(proxy.adminPort!, "dns_lookups_total", "success") >= 2);

    // The server fails, then goes silent: the last answer stays, failures are counted.
    dns.mode("servfail");
    await until(
      async () => await metric(proxy.adminPort!, "dns_lookups_total", "failure") >= 1,
      15_000,
      "a failed lookup is counted",
    );
    assert.equal(await text("/during-servfail"), "200 b /during-servfail");
    dns.mode("silent");
    const failed = await metric(proxy.adminPort!, "dns_lookups_total", "failure");
    await until(
      async () => await metric(proxy.adminPort!, "dns_lookups_total", "failure") > failed,
      15_000,
      "a lookup without an answer is counted",
    );
    assert.equal(await text("/during-silence"), "200 b /during-silence");
    assert.ok(
      proxy.stderr.some((l) => l.includes("lookup of api.test failed") && l.includes("keeping")),
      proxy.stderr.join("\n"),
    );
  } finally {
    await client.close();
    await proxy.stop();
    a.release();
    await Promise.all([a.close(), b.close()]);
    dns.close();
  }
});

Deno.test("#30.5: hostname backend: a TTL shorter than dns_refresh_ms is honoured", async () => {
  const dns = startDnsServer();
  const a = namedBackend("a", "127.0.0.1", 0);
  const b = namedBackend("b", "127.0.0.2", a.port);
  dns.set("ttl.test", { a: ["127.0.0.1"], ttl: 1 });
  const certs = await testCerts();
  // A refresh of 10 minutes: only the TTL of 1 s can move the requests within the test.
  const proxy = await startProxy(await configOf(dns.address, `ttl.test:${a.port}`, 600_000));
  const client = await H3TestClient.connect(proxy.port, await Deno.readTextFile(certs.caPath));
  const body = async (path: string) =>
    new TextDecoder().decode((await client.request({ head: getHead(path, proxy.port) })).body);
  try {
    assert.equal(await body("/x"), "a /x");
    dns.set("ttl.test", { a: ["127.0.0.2"], ttl: 1 });
    await until(
      async () => (await body("/y")).startsWith("b "),
      20_000,
      "requests move within a few TTLs",
    );
  } finally {
    await client.close();
    await proxy.stop();
    await Promise.all([a.close(), b.close()]);
    dns.close();
  }
});

Deno.test("#30.5: hostname backend: a name that does not resolve is a warning with its key and line, at startup and with --check", async () => {
  const dns = startDnsServer();
  try {
    const yaml = await configOf(dns.address, "nowhere.test:8080", 30_000);
    const line = yaml.split("\n").findIndex((l) => l.includes("nowhere.test")) + 1;
    const warning =
      `Warning: upstream.p.backends[0].address (line ${line}): lookup of nowhere.test failed`;
    const path = await writeConfig(yaml);
    const check = await runCli(["--check", "-c", path]);
    assert.equal(check.code, 0, check.stdout + check.stderr);
    assert.ok(check.stderr.includes(warning), check.stderr);
    const proxy = await startProxy(yaml);
    try {
      assert.ok(proxy.stderr.some((l) => l.startsWith(warning)), proxy.stderr.join("\n"));
      const ready = await fetch(`http://127.0.0.1:${proxy.adminPort}/health`);
      assert.equal(ready.status, 200, "the proxy runs; the backend is not probed");
      await ready.body?.cancel();
    } finally {
      await proxy.stop();
    }
    await Deno.remove(path.slice(0, path.lastIndexOf("/")), { recursive: true });
  } finally {
    dns.close();
  }
});
