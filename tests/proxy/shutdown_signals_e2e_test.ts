/**
 * Issue #21.7: Ctrl-C in a terminal reaches every process of its group, and
 * `deno task start` (examples/demo.ts) then also sends SIGTERM: a second
 * signal during the drain must not kill the proxy before "Shutdown complete".
 */
import assert from "node:assert/strict";
import { startBackend, type TestBackend } from "../support/backend.ts";
import { gtls } from "../support/gtls.ts";
import { startProxy } from "../support/proxy_process.ts";
import { faultConfig } from "../support/faults.ts";
import { sleep } from "../support/wait.ts";

Deno.test("#21.7: SIGINT then SIGTERM during the drain: the drain finishes, Shutdown complete, exit 0", async () => {
  const be = startBackend("b");
  const proxy = await startProxy(faultConfig([be.address]));
  try {
    // A request in flight (it has reached the backend) keeps the drain going for about 3 s.
    const slow = gtls(proxy.port, `https://localhost:${proxy.port}/slow/3000`);
    await inFlight(be);
    Deno.kill(proxy.pid, "SIGINT");
    await sleep(200);
    Deno.kill(proxy.pid, "SIGTERM");
    assert.equal(await proxy.exited, 0, proxy.stderr.join("\n"));
    assert.ok(proxy.stderr.some((l) => l.includes("Draining connections (SIGINT)")));
    assert.ok(proxy.stderr.some((l) => l.includes("SIGTERM: shutdown already under way")));
    assert.ok(proxy.stderr.some((l) => l.includes("Shutdown complete")), proxy.stderr.join("\n"));
    assert.deepEqual((await slow).statuses, [200], "the request in flight is answered");
  } finally {
    await proxy.stop();
    await be.close();
  }
});

Deno.test("#21.2: limits.drain_timeout_ms changed by a reload bounds the next shutdown", async () => {
  const be = startBackend("b");
  const proxy = await startProxy(
    faultConfig([be.address], { extra: "admin: {port: 0}\nlimits: {drain_timeout_ms: 60000}" }),
  );
  try {
    const yaml = await Deno.readTextFile(proxy.configPath);
    await Deno.writeTextFile(
      proxy.configPath,
      yaml.replace("drain_timeout_ms: 60000", "drain_timeout_ms: 200"),
    );
    const res = await fetch(`http://127.0.0.1:${proxy.adminPort}/admin/reload`, { method: "POST" });
    assert.deepEqual(await res.json(), { reloaded: true, restart_required: [] });
    // A request that holds a drain for about 8 s unless the (reloaded) bound cuts it.
    const slow = gtls(proxy.port, `https://localhost:${proxy.port}/slow/8000`, {
      timeoutMs: 3_000,
    }).catch(() => null);
    await inFlight(be);
    const t0 = performance.now();
    Deno.kill(proxy.pid, "SIGTERM");
    assert.equal(await proxy.exited, 0);
    const took = performance.now() - t0;
    // 60 s bound (startup's): about 7.5 s; 200 ms bound (reloaded): well under a second.
    assert.ok(took < 5_000, `shutdown took ${took.toFixed(0)} ms: the reloaded bound was not used`);
    await slow;
  } finally {
    await proxy.stop();
    await be.close();
  }
});

/** Waits until the backend has received a request (up to 20 s). */
async function inFlight(be: TestBackend): Promise<void> {
  for (let i = 0; i < 400 && be.seen.length === 0; i++) await sleep(50);
  assert.ok(be.seen.length > 0, "the request never reached the backend");
}
