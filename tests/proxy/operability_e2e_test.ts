/**
 * Operability end to end: the admin listener (/health, /metrics checked by
 * promtool, the admin API), hot reload (good and bad files, under load), and
 * the Alt-Svc TCP fallback listener.
 */
import assert from "node:assert/strict";
import { startBackend, type TestBackend } from "../support/backend.ts";
import { curlLocal } from "../support/curl.ts";
import { gtls } from "../support/gtls.ts";
import { H3TestClient } from "../support/h3_client.ts";
import { type ProxyProcess, startProxy, testCerts } from "../support/proxy_process.ts";
import { sleep } from "../support/wait.ts";

const TOKEN = "admin-secret";

function yaml(a: TestBackend, b: TestBackend, extraPools = ""): string {
  return `version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tls: {cert: "{{cert}}", key: "{{key}}"}}
admin: {address: 127.0.0.1, port: 0, token: ${TOKEN}}
load_balancing: {type: round-robin}
upstream:
  api:
    route: {path_prefix: /}
    backends:
      - {id: a, address: "${a.address}", health_check: {interval: 200, timeout_ms: 200}}
      - {id: b, address: "${b.address}", health_check: {interval: 200, timeout_ms: 200}}
${extraPools}`;
}

function adminUrl(p: ProxyProcess, path: string): string {
  return `http://127.0.0.1:${p.adminPort}${path}`;
}

async function admin(
  p: ProxyProcess,
  method: string,
  path: string,
  opts: { token?: string; body?: unknown } = {},
): Promise<
  { status: number; json: Record<string, unknown> | null; text: string; headers: Headers }
> {
  const headers: Record<string, string> = {};
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  if (opts.body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(adminUrl(p, path), {
    method,
    headers,
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  const text = await res.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: res.status, json, text, headers: res.headers };
}

async function backendsHit(client: H3TestClient, n: number): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (let i = 0; i < n; i++) {
    const r = await client.request({
      head: [[":method", "GET"], [":scheme", "https"], [":authority", "localhost"], [
        ":path",
        "/who",
      ]],
    });
    assert.equal(r.status, 200);
    const who = JSON.parse(new TextDecoder().decode(r.body)).backend as string;
    counts[who] = (counts[who] ?? 0) + 1;
  }
  return counts;
}

Deno.test("e2e: admin API, Prometheus metrics and hot reload", async (t) => {
  const a = startBackend("a");
  const b = startBackend("b");
  const c = startBackend("c");
  const proxy = await startProxy(yaml(a, b));
  const ca = await Deno.readTextFile((await testCerts()).caPath);
  const client = await H3TestClient.connect(proxy.port, ca);
  try {
    assert.ok(proxy.adminPort, "admin port printed");

    await t.step("GET /health: status, version, uptime, backends", async () => {
      const r = await admin(proxy, "GET", "/health");
      assert.equal(r.status, 200);
      assert.equal(r.json!.status, "ok");
      assert.match(String(r.json!.version), /^\d+\.\d+\.\d+/);
      assert.equal(typeof r.json!.uptime, "number");
      assert.deepEqual(r.json!.backends, { a: "healthy", b: "healthy" });
    });

    await t.step("GET /metrics after traffic passes promtool check metrics", async () => {
      const g = await gtls(proxy.port, `https://localhost:${proxy.port}/x`, { streams: 20 });
      assert.equal(g.statuses.filter((s) => s === 200).length, 20);
      const r = await admin(proxy, "GET", "/metrics");
      assert.equal(r.status, 200);
      assert.match(r.headers.get("content-type") ?? "", /text\/plain; version=0\.0\.4/);
      const byClass = [...r.text.matchAll(/^spooky_requests_total\{code="(\dxx)"\} (\d+)$/gm)];
      assert.deepEqual(byClass.map((m) => m[1]), ["2xx", "3xx", "4xx", "5xx"]);
      const total = byClass.reduce((n, m) => n + Number(m[2]), 0);
      assert.ok(total >= 20);
      assert.match(
        r.text,
        /^spooky_backend_requests_total\{backend="a",pool="api",code="2xx"\} \d+$/m,
      );
      assert.match(r.text, /^spooky_requests_success_total \d+$/m);
      assert.match(r.text, /^spooky_backend_healthy\{backend="a",pool="api"\} 1$/m);
      assert.match(r.text, /^spooky_request_duration_seconds_bucket\{le="\+Inf"\} \d+$/m);
      assert.match(r.text, /^spooky_active_connections \d+$/m);
      const promtool = new Deno.Command("promtool", {
        args: ["check", "metrics"],
        stdin: "piped",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      const w = promtool.stdin.getWriter();
      await w.write(new TextEncoder().encode(r.text));
      await w.close();
      const out = await promtool.output();
      const msg = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
      assert.equal(out.code, 0, `promtool: ${msg}`);
    });

    await t.step("mutating calls need the bearer token", async () => {
      assert.equal((await admin(proxy, "POST", "/admin/backends/a/disable")).status, 401);
      assert.equal(
        (await admin(proxy, "POST", "/admin/backends/a/disable", { token: "wrong" })).status,
        401,
      );
      assert.equal(
        (await admin(proxy, "POST", "/admin/backends/zz/disable", { token: TOKEN })).status,
        404,
      );
    });

    await t.step("disable/enable is visible in traffic", async () => {
      const r = await admin(proxy, "POST", "/admin/backends/a/disable", { token: TOKEN });
      assert.equal(r.status, 200);
      assert.deepEqual(await backendsHit(client, 6), { b: 6 });
      const list = await admin(proxy, "GET", "/admin/backends", { token: TOKEN });
      const info = list.json!.backends as Array<{ id: string; enabled: boolean }>;
      assert.equal(info.find((x) => x.id === "a")!.enabled, false);
      await admin(proxy, "POST", "/admin/backends/a/enable", { token: TOKEN });
      const counts = await backendsHit(client, 6);
      assert.equal(counts.a, 3);
      assert.equal(counts.b, 3);
    });

    await t.step("weight changes are visible in traffic", async () => {
      const bad = await admin(proxy, "PUT", "/admin/backends/b/weight", {
        token: TOKEN,
        body: { weight: -1 },
      });
      assert.equal(bad.status, 400);
      const r = await admin(proxy, "PUT", "/admin/backends/b/weight", {
        token: TOKEN,
        body: { weight: 0 },
      });
      assert.equal(r.status, 200);
      assert.deepEqual(await backendsHit(client, 5), { a: 5 });
      await admin(proxy, "PUT", "/admin/backends/b/weight", {
        token: TOKEN,
        body: { weight: 300 },
      });
      const counts = await backendsHit(client, 8);
      assert.equal(counts.a, 2);
      assert.equal(counts.b, 6);
    });

    await t.step("/health is 503 when a pool has no available backend", async () => {
      await admin(proxy, "POST", "/admin/backends/a/disable", { token: TOKEN });
      await admin(proxy, "POST", "/admin/backends/b/disable", { token: TOKEN });
      const r = await admin(proxy, "GET", "/health");
      assert.equal(r.status, 503);
      const res = await client.request({
        head: [[":method", "GET"], [":scheme", "https"], [":authority", "localhost"], [
          ":path",
          "/x",
        ]],
      });
      assert.equal(res.status, 503);
      await admin(proxy, "POST", "/admin/backends/a/enable", { token: TOKEN });
      await admin(proxy, "POST", "/admin/backends/b/enable", { token: TOKEN });
    });

    await t.step("GET /admin/connections lists open connections", async () => {
      const r = await admin(proxy, "GET", "/admin/connections", { token: TOKEN });
      assert.equal(r.status, 200);
      assert.ok((r.json!.connections as unknown[]).length >= 1);
    });

    await t.step(
      "reload with a good file under load: the new pool serves, nothing fails",
      async () => {
        const load = gtls(proxy.port, `https://localhost:${proxy.port}/slow/20`, { streams: 200 });
        await sleep(100);
        await Deno.writeTextFile(
          proxy.configPath,
          yaml(
            a,
            b,
            `  fresh:\n    route: {path_prefix: /fresh}\n    backends: [{id: c, address: "${c.address}"}]\n`,
          )
            .replaceAll("{{cert}}", (await testCerts()).certPath)
            .replaceAll("{{key}}", (await testCerts()).keyPath),
        );
        const r = await admin(proxy, "POST", "/admin/reload", { token: TOKEN });
        assert.equal(r.status, 200, r.text);
        const fresh = await client.request({
          head: [[":method", "GET"], [":scheme", "https"], [":authority", "localhost"], [
            ":path",
            "/fresh/x",
          ]],
        });
        assert.equal(JSON.parse(new TextDecoder().decode(fresh.body)).backend, "c");
        const done = await load;
        assert.equal(done.statuses.length, 200);
        assert.ok(done.statuses.every((s) => s === 200), "no failed request during reload");
      },
    );

    await t.step(
      "reload with a bad file under load: rejected, the old config keeps serving",
      async () => {
        const good = await Deno.readTextFile(proxy.configPath);
        const load = gtls(proxy.port, `https://localhost:${proxy.port}/slow/20`, { streams: 200 });
        await Deno.writeTextFile(proxy.configPath, good.replace("version: 1", "version: 7"));
        const r = await admin(proxy, "POST", "/admin/reload", { token: TOKEN });
        assert.equal(r.status, 400);
        assert.match(JSON.stringify(r.json!.errors), /version/);
        const still = await client.request({
          head: [[":method", "GET"], [":scheme", "https"], [":authority", "localhost"], [
            ":path",
            "/fresh/y",
          ]],
        });
        assert.equal(still.status, 200);
        const done = await load;
        assert.ok(done.statuses.length === 200 && done.statuses.every((s) => s === 200));
        await Deno.writeTextFile(proxy.configPath, good);
      },
    );

    await t.step("SIGHUP reloads the file too", async () => {
      const good = await Deno.readTextFile(proxy.configPath);
      await Deno.writeTextFile(
        proxy.configPath,
        good.replace("path_prefix: /fresh", "path_prefix: /renamed"),
      );
      Deno.kill(proxy.pid, "SIGHUP");
      let backend = "";
      for (let i = 0; i < 50 && backend !== "c"; i++) {
        await sleep(100);
        const r = await client.request({
          head: [[":method", "GET"], [":scheme", "https"], [":authority", "localhost"], [
            ":path",
            "/renamed/x",
          ]],
        });
        backend = JSON.parse(new TextDecoder().decode(r.body)).backend;
      }
      assert.equal(backend, "c");
    });

    await t.step("POST /admin/drain shuts the proxy down gracefully", async () => {
      const r = await admin(proxy, "POST", "/admin/drain", { token: TOKEN });
      assert.equal(r.status, 202);
      assert.equal(await proxy.exited, 0);
    });
  } finally {
    await client.close();
    await proxy.stop();
    await a.close();
    await b.close();
    await c.close();
  }
});

Deno.test("e2e: the TCP fallback answers HTTP/2 with alt-svc pointing at HTTP/3", async () => {
  const a = startBackend("a");
  const proxy = await startProxy(`version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tcp_fallback: true, tls: {cert: "{{cert}}", key: "{{key}}"}}
upstream:
  api: {route: {path_prefix: /}, backends: [{id: a, address: "${a.address}"}]}
`);
  try {
    for (const proto of ["--http2", "--http1.1"]) {
      const out = await curlLocal(proxy.port, [
        "-sk",
        proto,
        "-i",
        `https://localhost:${proxy.port}/hello`,
      ]);
      const text = out.stdout;
      assert.equal(out.exit, 0, out.stderr);
      assert.match(text, proto === "--http2" ? /^HTTP\/2 200/ : /^HTTP\/1\.1 200/);
      assert.match(text, new RegExp(`alt-svc: h3=":${proxy.port}"; ma=86400`, "i"));
      assert.match(text, /"backend":"a"/);
    }
    // And HTTP/3 still works on the same port number.
    const r = await gtls(proxy.port, `https://localhost:${proxy.port}/hello`);
    assert.deepEqual(r.statuses, [200]);
  } finally {
    assert.equal(await proxy.stop(), 0);
    await a.close();
  }
});

Deno.test("e2e: a reload that removes a backend lets its streaming responses finish", async () => {
  const CHUNKS = 20;
  const old = startBackend("old", () => {
    let sent = 0;
    return new Response(
      new ReadableStream<Uint8Array>({
        async pull(c) {
          if (sent++ === CHUNKS) return c.close();
          await sleep(75);
          c.enqueue(new Uint8Array(10_000).fill(111));
        },
      }),
    );
  });
  const fresh = startBackend("fresh");
  const config = (address: string) =>
    `version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tls: {cert: "{{cert}}", key: "{{key}}"}}
admin: {address: 127.0.0.1, port: 0, token: ${TOKEN}}
upstream:
  api: {route: {path_prefix: /}, backends: [{id: only, address: "${address}"}]}
`;
  const proxy = await startProxy(config(old.address));
  const certs = await testCerts();
  const client = await H3TestClient.connect(proxy.port, await Deno.readTextFile(certs.caPath));
  try {
    const download = client.request({
      head: [[":method", "GET"], [":scheme", "https"], [":authority", "localhost"], [
        ":path",
        "/stream",
      ]],
    });
    await sleep(300); // the body is streaming
    await Deno.writeTextFile(
      proxy.configPath,
      config(fresh.address).replaceAll("{{cert}}", certs.certPath).replaceAll(
        "{{key}}",
        certs.keyPath,
      ),
    );
    const r = await admin(proxy, "POST", "/admin/reload", { token: TOKEN });
    assert.equal(r.status, 200, r.text);
    const res = await download;
    assert.equal(res.status, 200);
    assert.equal(res.body.length, CHUNKS * 10_000, "the response was cut");
    assert.ok(res.body.every((b) => b === 111));
    assert.equal(res.trailers, undefined, "the response ended with a malformed trailer section");
    // New requests go to the new backend.
    const after = await backendsHit(client, 2);
    assert.deepEqual(after, { fresh: 2 });
  } finally {
    await client.close();
    await proxy.stop();
    await old.close();
    await fresh.close();
  }
});

Deno.test("e2e: a reload serves a renewed certificate to new connections; open ones keep theirs; an unusable pair is rejected", async () => {
  const { generateDevCerts } = await import("../../shared/certs/generate.ts");
  const a = await testCerts();
  const caA = await Deno.readTextFile(a.caPath);
  const b = await generateDevCerts(); // another CA: a client trusting only one tells them apart
  const dir = await Deno.makeTempDir({ prefix: "spooky-renew-" });
  // The files a renewal rewrites in place, starting with pair A.
  await Deno.copyFile(a.certPath, `${dir}/cert.pem`);
  await Deno.copyFile(a.keyPath, `${dir}/key.pem`);
  const backend = startBackend("only");
  const proxy = await startProxy(`version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tls: {cert: "${dir}/cert.pem", key: "${dir}/key.pem"}}
admin: {address: 127.0.0.1, port: 0, token: ${TOKEN}}
upstream:
  api: {route: {path_prefix: /}, backends: [{id: only, address: "${backend.address}"}]}
`);
  const before = await H3TestClient.connect(proxy.port, caA);
  const clients = [before];
  const connects = async (ca: string): Promise<boolean> => {
    try {
      const c = await H3TestClient.connect(proxy.port, ca);
      clients.push(c);
      assert.deepEqual(await backendsHit(c, 1), { only: 1 });
      return true;
    } catch {
      return false;
    }
  };
  try {
    assert.deepEqual(await backendsHit(before, 1), { only: 1 });
    assert.equal(await connects(b.caCertPem), false);

    // Renewed in place: same paths, new contents.
    await Deno.writeTextFile(`${dir}/cert.pem`, b.certPem);
    await Deno.writeTextFile(`${dir}/key.pem`, b.keyPem);
    const r = await admin(proxy, "POST", "/admin/reload", { token: TOKEN });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json?.restart_required, []);
    assert.equal(await connects(b.caCertPem), true, "a new connection gets the new certificate");
    assert.equal(await connects(caA), false, "the old certificate is no longer served");
    // The connection opened before the reload goes on.
    assert.deepEqual(await backendsHit(before, 2), { only: 2 });

    // A certificate with a key that is not its own: rejected, pair B keeps serving.
    await Deno.writeTextFile(`${dir}/cert.pem`, (await generateDevCerts()).certPem);
    const bad = await admin(proxy, "POST", "/admin/reload", { token: TOKEN });
    assert.equal(bad.status, 400, bad.text);
    assert.match(bad.text, /listen\.tls/);
    assert.equal(await connects(b.caCertPem), true);
  } finally {
    for (const c of clients) await c.close();
    assert.equal(await proxy.stop(), 0);
    await backend.close();
    await Deno.remove(dir, { recursive: true });
  }
});
