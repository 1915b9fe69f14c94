/**
 * Issue #21.7: Ctrl-C in a terminal reaches every process of its group, and
 * `deno task start` (examples/demo.ts) then also sends SIGTERM: a second
 * signal during the drain must not kill the proxy before "Shutdown complete".
 */
import assert from "node:assert/strict";
import { startBackend } from "../support/backend.ts";
import { gtls } from "../support/gtls.ts";
import { startProxy } from "../support/proxy_process.ts";
import { faultConfig, sleep } from "../faults/_support.ts";

Deno.test("#21.7: SIGINT then SIGTERM during the drain: the drain finishes, Shutdown complete, exit 0", async () => {
  const be = startBackend("b");
  const proxy = await startProxy(faultConfig([be.address]));
  try {
    // A request in flight keeps the drain going for about 1.5 s.
    const slow = gtls(proxy.port, `https://localhost:${proxy.port}/slow/1500`);
    await sleep(500);
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
