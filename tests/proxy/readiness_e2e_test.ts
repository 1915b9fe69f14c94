/**
 * Issue #30.6: `GET /ready` end to end, probed with curl as a load balancer
 * would (no token, though the admin listener has one): 503 with the reasons
 * while a pool has no healthy enabled backend (`admin.ready.require:
 * all_pools`), 200 with `any_pool` after a reload (no restart needed); a
 * disabled backend counts out and `/health` lists it `disabled`; from
 * SIGTERM on, 503 at once while the request in flight is still served.
 */
import assert from "node:assert/strict";
import { startBackend } from "../support/backend.ts";
import { curlLocal } from "../support/curl.ts";
import { getHead } from "../support/faults.ts";
import { H3TestClient } from "../support/h3_client.ts";
import { startProxy, testCerts } from "../support/proxy_process.ts";
import { msUntil } from "../support/wait.ts";
import { needs } from "../support/tools.ts";

const TOKEN = "ready-test-token";

/** `GET /ready` with curl, no token: status and JSON body. */
async function ready(
  adminPort: number,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await curlLocal(adminPort, [
    "-s",
    "-w",
    "\n%{http_code}",
    `http://localhost:${adminPort}/ready`,
  ]);
  assert.equal(r.exit, 0, r.stderr);
  const cut = r.stdout.lastIndexOf("\n");
  return { status: Number(r.stdout.slice(cut + 1)), body: JSON.parse(r.stdout.slice(0, cut)) };
}

/** An admin call with the token (fetch). */
async function admin(adminPort: number, method: string, path: string) {
  const res = await fetch(`http://127.0.0.1:${adminPort}${path}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  return { status: res.status, json: await res.json() };
}

/** Waits until `/ready` answers `status`, failing the test when it does not within 10 s. */
async function readyBecomes(adminPort: number, status: number, what: string) {
  const ms = await msUntil(async () => (await ready(adminPort)).status === status, 10_000);
  assert.ok(ms >= 0, `${what}: /ready did not answer ${status} within 10 s`);
}

Deno.test({
  ...needs("#30.6: /ready: pools, admin.ready.require on reload, disabled backends, drain", "curl"),
  fn: async () => {
    const held = Promise.withResolvers<void>();
    const web = startBackend("web", async (req) => {
      if (new URL(req.url).pathname === "/hold") await held.promise;
      return new Response("web");
    });
    const certs = await testCerts();
    const probe = "{interval: 100, timeout_ms: 500, failure_threshold: 1, cooldown_ms: 0}";
    const config = (require: string) =>
      `version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tls: {cert: "${certs.certPath}", key: "${certs.keyPath}"}}
admin: {port: 0, token: ${TOKEN}, ready: {require: ${require}}}
upstream:
  web:
    route: {path_prefix: /}
    backends: [{id: w, address: "${web.address}", health_check: ${probe}}]
  api:
    route: {path_prefix: /api}
    backends: [{id: dead, address: "127.0.0.1:1", health_check: ${probe}}]
`;
    const proxy = await startProxy(config("all_pools"));
    const port = proxy.adminPort!;
    let client: H3TestClient | undefined;
    try {
      // Pool api has no healthy backend: not ready, and why.
      await readyBecomes(port, 503, "the dead pool");
      const notReady = await ready(port);
      assert.deepEqual(notReady.body, {
        status: "not_ready",
        reasons: ["pool api has no healthy enabled backend"],
        pools_without_healthy_backend: ["api"],
      });

      // any_pool, by reload: ready (the web pool has a backend); no restart needed.
      await Deno.writeTextFile(proxy.configPath, config("any_pool"));
      const reloaded = await admin(port, "POST", "/admin/reload");
      assert.deepEqual(reloaded.json, { reloaded: true, restart_required: [] });
      await readyBecomes(port, 200, "any_pool");
      assert.deepEqual((await ready(port)).body, { status: "ready" });

      // The one healthy backend disabled: no pool left; /health says disabled.
      assert.equal((await admin(port, "POST", "/admin/backends/w/disable")).status, 200);
      const down = await ready(port);
      assert.equal(down.status, 503);
      assert.deepEqual(down.body.reasons, [
        "no pool has a healthy enabled backend (admin.ready.require: any_pool)",
      ]);
      const health = await (await fetch(`http://127.0.0.1:${port}/health`)).json();
      assert.deepEqual(health.backends, { w: "disabled", dead: "unhealthy" });
      assert.equal((await admin(port, "POST", "/admin/backends/w/enable")).status, 200);
      assert.equal((await ready(port)).status, 200);

      // Drain: /ready is 503 at once, while the request in flight is still served.
      client = await H3TestClient.connect(proxy.port, await Deno.readTextFile(certs.caPath));
      const inFlight = client.request({ head: getHead("/hold", proxy.port) });
      const arrived = await msUntil(() => web.seen.some((r) => r.url.endsWith("/hold")), 10_000);
      assert.ok(arrived >= 0, "the held request reached the backend");
      let answered = false;
      inFlight.then(() => answered = true, () => answered = true);
      Deno.kill(proxy.pid, "SIGTERM");
      await readyBecomes(port, 503, "draining");
      const draining = await ready(port);
      assert.deepEqual(draining.body.reasons, ["draining: the proxy is shutting down"]);
      assert.equal(answered, false, "the request in flight is still being served");
      held.resolve();
      const res = await inFlight;
      assert.equal(res.status, 200);
      assert.equal(new TextDecoder().decode(res.body), "web");
      assert.equal(await proxy.exited, 0);
    } finally {
      held.resolve();
      await client?.close().catch(() => {});
      await proxy.stop();
      await web.close();
    }
  },
});
