/**
 * Fault test (issue #8), regression found by the frame fuzzer: a client whose
 * request bodies are broken (shorter than their `content-length`) gets 400,
 * and its failures are not counted against the backends, so passive health
 * never ejects a healthy backend because of a bad client.
 */
import assert from "node:assert/strict";
import { startBackend } from "../support/backend.ts";
import { H3TestClient } from "../support/h3_client.ts";
import { startProxy, testCerts } from "../support/proxy_process.ts";
import { faultConfig, getHead } from "../support/faults.ts";

Deno.test("faults: broken request bodies get 400 and do not eject healthy backends", async () => {
  const a = startBackend("a");
  const b = startBackend("b");
  const proxy = await startProxy(faultConfig([a.address, b.address]));
  const ca = await Deno.readTextFile((await testCerts()).caPath);
  const client = await H3TestClient.connect(proxy.port, ca);
  try {
    // Larger than the proxy's 64 KiB buffering limit, so the body streams to
    // the backend and breaks mid-way. 12 failures would eject both backends
    // (5 consecutive failures each) if they were blamed on them.
    const body = new Uint8Array(100_000);
    for (let i = 0; i < 12; i++) {
      const r = await client.request({
        head: [
          [":method", "POST"],
          [":scheme", "https"],
          [":authority", `localhost:${proxy.port}`],
          [":path", "/echo"],
          ["content-length", "200000"],
        ],
        body,
      });
      assert.equal(r.status, 400, new TextDecoder().decode(r.body));
    }
    const served = new Set<string>();
    for (let i = 0; i < 10; i++) {
      const r = await client.request({ head: getHead("/after", proxy.port) });
      assert.equal(r.status, 200);
      served.add(r.headers.find(([k]) => k === "x-backend")?.[1] ?? "?");
    }
    assert.deepEqual([...served].sort(), ["a", "b"], "both backends still take traffic");
    assert.deepEqual(proxy.stderr.filter((l) => /ejected/.test(l)), []);
  } finally {
    await client.close();
    assert.equal(await proxy.stop(), 0);
    await a.close();
    await b.close();
  }
});
