/**
 * The admin listener fails closed (issue 15.1), with the real proxy process:
 * on an address other than loopback it needs `admin.token` (exit 1 at
 * startup, refused on reload); on loopback it may go without; with a token,
 * every `/admin/` call needs it while `/health` and `/metrics` stay open.
 * Every listener here binds loopback only: the non-loopback cases never get
 * as far as binding.
 */
import assert from "node:assert/strict";
import { startBackend } from "../support/backend.ts";
import { runCli, startProxy, testCerts, writeConfig } from "../support/proxy_process.ts";
import { sleep } from "../support/wait.ts";

const TOKEN = "admin-e2e-token";

function config(admin: string, backend = "127.0.0.1:1"): string {
  return `version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tls: {cert: "{{cert}}", key: "{{key}}"}}
${admin}
upstream:
  web: {route: {path_prefix: /}, backends: [{id: w1, address: "${backend}"}]}
`;
}

for (const address of ["0.0.0.0", "::", "192.0.2.10", "admin.example.com"]) {
  Deno.test(`admin: ${address} without a token is a validation error naming admin.token, exit 1`, async () => {
    const path = await writeConfig(config(`admin:\n  address: "${address}"\n  port: 9902`));
    const r = await runCli(["-c", path]);
    assert.equal(r.code, 1, r.stderr);
    assert.match(
      r.stderr,
      /^admin\.token \(line 3\): is required when admin\.address is not a loopback address/m,
    );
    assert.match(r.stderr, /^Configuration validation failed\. Exiting\.\.\.$/m);
    assert.doesNotMatch(r.stdout, /successful|Admin listening/);
  });
}

Deno.test("admin: on loopback without a token it starts, and calls need no token", async () => {
  const backend = startBackend("w1");
  const proxy = await startProxy(config("admin: {address: 127.0.0.1, port: 0}", backend.address));
  try {
    const res = await fetch(`http://127.0.0.1:${proxy.adminPort}/admin/backends/w1/disable`, {
      method: "POST",
    });
    assert.equal(res.status, 200);
    await res.body?.cancel();
  } finally {
    assert.equal(await proxy.stop(), 0);
    await backend.close();
  }
});

Deno.test("admin: with a token, /admin/ needs it, /health and /metrics stay open; a reload to a tokenless public admin is refused", async (t) => {
  const backend = startBackend("w1");
  const proxy = await startProxy(
    config(`admin: {address: 127.0.0.1, port: 0, token: ${TOKEN}}`, backend.address),
  );
  const base = `http://127.0.0.1:${proxy.adminPort}`;
  const call = async (method: string, path: string, token?: string) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: token ? { authorization: `Bearer ${token}` } : {},
    });
    return { status: res.status, text: await res.text() };
  };
  try {
    await t.step("every /admin/ call without the token is 401", async () => {
      for (
        const [method, path] of [
          ["POST", "/admin/drain"],
          ["POST", "/admin/reload"],
          ["POST", "/admin/backends/w1/disable"],
          ["PUT", "/admin/backends/w1/weight"],
          ["GET", "/admin/backends"],
          ["GET", "/admin/connections"],
        ]
      ) {
        assert.equal((await call(method, path)).status, 401, `${method} ${path}`);
        assert.equal((await call(method, path, "wrong")).status, 401, `${method} ${path}`);
      }
      assert.equal((await call("GET", "/admin/backends", TOKEN)).status, 200);
    });
    await t.step("/health and /metrics stay open", async () => {
      assert.equal((await call("GET", "/health")).status, 200);
      const metrics = await call("GET", "/metrics");
      assert.equal(metrics.status, 200);
      assert.match(metrics.text, /^spooky_requests_total\{code="2xx"\} \d+$/m);
    });
    await t.step("a reload to admin on 0.0.0.0 without a token is refused", async () => {
      const certs = await testCerts();
      await Deno.writeTextFile(
        proxy.configPath,
        config("admin: {address: 0.0.0.0, port: 0}", backend.address)
          .replace("{{cert}}", certs.certPath).replace("{{key}}", certs.keyPath),
      );
      const r = await call("POST", "/admin/reload", TOKEN);
      assert.equal(r.status, 400, r.text);
      assert.match(
        r.text,
        /admin\.token \(line 3\): is required when admin\.address is not a loopback/,
      );
      // SIGHUP is refused the same way: the token still guards the listener.
      Deno.kill(proxy.pid, "SIGHUP");
      await sleep(300);
      assert.ok(
        proxy.stderr.some((l) => /reload rejected: admin\.token/.test(l)),
        proxy.stderr.join("\n"),
      );
      assert.equal((await call("POST", "/admin/drain")).status, 401);
    });
    await t.step("with the token, drain shuts the proxy down", async () => {
      assert.equal((await call("POST", "/admin/drain", TOKEN)).status, 202);
      assert.equal(await proxy.exited, 0);
    });
  } finally {
    await proxy.stop();
    await backend.close();
  }
});
