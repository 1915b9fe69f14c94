/**
 * Fault test (issue #8): 5% packet loss in both directions, driven by
 * gtlsclient's loss simulation (`-t`/`-r`). QUIC loss recovery must carry
 * every request to completion.
 */
import assert from "node:assert/strict";
import { startBackend } from "../support/backend.ts";
import { gtls } from "../support/gtls.ts";
import { startProxy } from "../support/proxy_process.ts";
import { faultConfig } from "../support/faults.ts";

Deno.test("faults: with 5% packet loss both ways, 200 requests on one connection all get 200", async () => {
  const be = startBackend("b");
  const proxy = await startProxy(faultConfig([be.address]));
  try {
    // A 4 KiB body per response gives loss recovery several packets per stream.
    const r = await gtls(proxy.port, `https://localhost:${proxy.port}/bytes/4096`, {
      streams: 200,
      txLoss: 0.05,
      rxLoss: 0.05,
      timeoutMs: 90_000,
    });
    assert.equal(r.code, 0, r.output.slice(-2000));
    assert.equal(r.statuses.length, 200, r.output.slice(-2000));
    assert.ok(r.statuses.every((s) => s === 200), `statuses: ${r.statuses}`);
    assert.equal(be.seen.length, 200);
  } finally {
    assert.equal(await proxy.stop(), 0);
    await be.close();
  }
});
