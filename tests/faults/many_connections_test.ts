/**
 * Fault test (issue #8): 1,000 concurrent QUIC connections, each with one
 * request in flight at the same time. Every request gets 200.
 *
 * Under load (issue #24 item 7) a handshake can fail for reasons that are the
 * machine's, not the proxy's: the QUIC socket's receive buffer (Linux's
 * default, 208 KiB) overflows during a wave of Initials, and each dropped one
 * costs a retransmission timeout. So the connections open in waves of 50, a
 * handshake that fails is tried again (at most twice, counted and printed),
 * and the assertion is on behaviour: all 1,000 connections open together and
 * every request on them gets 200.
 */
// deno-lint-ignore-file no-console
import assert from "node:assert/strict";
import { startBackend } from "../support/backend.ts";
import { H3TestClient } from "../support/h3_client.ts";
import { startProxy, testCerts } from "../support/proxy_process.ts";
import { faultConfig, getHead, mib, rssBytes } from "../support/faults.ts";
import { withTimeout } from "../support/wait.ts";

const CONNECTIONS = 1000;
/** Handshakes started at once while opening (all connections stay open together). */
const HANDSHAKE_WAVE = 50;
/** Tries of one handshake before the test gives up on it. */
const ATTEMPTS = 3;

Deno.test("faults: 1,000 concurrent connections with one request each all get 200", async () => {
  const be = startBackend("b");
  // Every client here shares 127.0.0.1 (and its /24): lift the per-address and
  // per-network caps on connections and unfinished handshakes.
  const proxy = await startProxy(faultConfig([be.address], {
    requestTimeoutMs: 30_000,
    // debug: a connection turned away (a handshake timeout, say) is logged.
    extra: "limits: {max_connections_per_address: 2000, max_handshakes_per_address: 1000, " +
      "max_handshakes_per_network: 1000}\nlog: {level: debug, access: false}",
  }));
  const ca = await Deno.readTextFile((await testCerts()).caPath);
  const clients: H3TestClient[] = [];
  let retried = 0;
  const failures: string[] = [];
  const connect = async (): Promise<H3TestClient> => {
    for (let attempt = 1;; attempt++) {
      try {
        return await withTimeout(H3TestClient.connect(proxy.port, ca), 30_000, "handshake");
      } catch (err) {
        failures.push(String(err));
        if (attempt === ATTEMPTS) throw err;
        retried++;
      }
    }
  };
  try {
    const t0 = performance.now();
    for (let i = 0; i < CONNECTIONS; i += HANDSHAKE_WAVE) {
      const wave = await Promise.allSettled(
        Array.from({ length: Math.min(HANDSHAKE_WAVE, CONNECTIONS - i) }, connect),
      );
      for (const r of wave) if (r.status === "fulfilled") clients.push(r.value);
      const failed = wave.filter((r) => r.status === "rejected").length;
      const why = proxy.stderr.filter((l) => /turned away|WARN|ERROR/.test(l)).slice(-20);
      assert.equal(
        failed,
        0,
        `${failed} handshakes of wave ${i / HANDSHAKE_WAVE} failed ${ATTEMPTS} times: ${
          failures.slice(-5).join("; ")
        }; the proxy said:\n${why.join("\n")}`,
      );
    }
    const t1 = performance.now();
    const rssOpen = await rssBytes(proxy.pid);
    const results = await withTimeout(
      Promise.all(clients.map((c, i) => c.request({ head: getHead(`/c/${i}`, proxy.port) }))),
      120_000,
      "1,000 requests",
    );
    const t2 = performance.now();
    const bad = results.map((r, i) => ({ i, status: r.status, finished: r.finished }))
      .filter((r) => r.status !== 200 || !r.finished);
    const why = proxy.stderr.filter((l) => /turned away|WARN|ERROR/.test(l)).slice(-20);
    assert.deepEqual(
      bad,
      [],
      `every connection's request gets 200; the proxy said:\n${why.join("\n")}`,
    );
    for (const [i, r] of results.entries()) {
      assert.equal(JSON.parse(new TextDecoder().decode(r.body)).path, `/c/${i}`);
    }
    console.log(
      `1,000 connections: opened in ${(t1 - t0).toFixed(0)} ms (${retried} handshakes retried${
        failures.length ? `: ${failures.slice(0, 3).join("; ")}` : ""
      }), 1,000 concurrent requests in ${(t2 - t1).toFixed(0)} ms; proxy RSS with all open ${
        mib(rssOpen)
      }`,
    );
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    assert.equal(await proxy.stop(), 0);
    await be.close();
  }
});
