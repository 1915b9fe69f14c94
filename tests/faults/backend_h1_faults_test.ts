/**
 * Fault test (#29.1): HTTP/1.1 backends that break the protocol on purpose
 * (`tests/support/evil_h1_backend.ts`: response splitting, CL+TE, differing
 * lengths, huge and endless heads, an endless chunk line and an endless
 * chunked body, a 1xx flood, an early close, bytes after the response,
 * not HTTP at all). Each case is its own pool (`protocol: http1`) on its own
 * raw-socket backend. Against the real proxy process, for every case:
 *
 * - a violation before the head is answered 502; one after it ends the
 *   client's stream abnormally; bytes after a valid response leave the
 *   answer standing and the connection unused again;
 * - a request to a healthy pool in flight meanwhile succeeds;
 * - the proxy process stays alive; the guilty backend is counted in
 *   passive health (ejected after `consecutive_failures`).
 */
import assert from "node:assert/strict";
import { startBackend } from "../support/backend.ts";
import {
  EVIL_H1_CASES,
  type EvilH1Backend,
  startEvilH1Backend,
} from "../support/evil_h1_backend.ts";
import { H3TestClient } from "../support/h3_client.ts";
import { startProxy, testCerts } from "../support/proxy_process.ts";
import { getHead, isAlive } from "../support/faults.ts";
import { sleep, withTimeout } from "../support/wait.ts";

function proxyConfig(good: string, evil: EvilH1Backend[]): string {
  const pools = evil.map((b) =>
    `  ${b.case.name}:
    route: {path_prefix: /evil/${b.case.name}/}
    request_timeout_ms: 10000
    backends: [{id: ${b.case.name}, address: "${b.address}", protocol: http1}]`
  ).join("\n");
  return `version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tls: {cert: "{{cert}}", key: "{{key}}"}}
passive_health: {consecutive_failures: 3, eject_ms: 60000}
upstream:
  good:
    route: {path_prefix: /good/}
    backends: [{id: good, address: "${good}"}]
${pools}
`;
}

Deno.test({
  name: "#29.1: misbehaving HTTP/1.1 backends fail only their own requests",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const evil = EVIL_H1_CASES.map((c) => startEvilH1Backend(c));
    const good = startBackend("good");
    const proxy = await startProxy(proxyConfig(good.address, evil));
    const ca = await Deno.readTextFile((await testCerts()).caPath);
    const client = await H3TestClient.connect(proxy.port, ca);
    const wrong: string[] = [];
    try {
      for (const b of evil) {
        const c = b.case;
        const healthy = client.request({ head: getHead("/good/slow/200", proxy.port) });
        if (c.name === "endless_chunked") {
          // The client reads for a while, then leaves: the backend's connection is closed.
          const leaving = await H3TestClient.connect(proxy.port, ca);
          const p = leaving.request({ head: getHead(`/evil/${c.name}/x`, proxy.port) });
          await sleep(1_000);
          await leaving.close();
          await p.catch(() => {});
          await withTimeout(
            (async () => {
              while (b.ended() === 0) await sleep(20);
            })(),
            10_000,
            `${c.name}: the backend's connection closed`,
          );
        } else {
          const res = await withTimeout(
            client.request({ head: getHead(`/evil/${c.name}/x`, proxy.port) }),
            30_000,
            c.name,
          );
          // A body cut mid-way ends with a malformed trailer section (a
          // pseudo-header) or a reset: never a clean end.
          const cut = !res.finished || (res.trailers ?? []).some(([n]) => n.startsWith(":"));
          const got = c.expect === "truncated"
            ? (cut ? "truncated" : `${res.status} clean`)
            : res.status;
          if (got !== c.expect) wrong.push(`${c.name}: ${got} (want ${c.expect})`);
          if (b.requests() < 1 || b.requests() > 2) {
            wrong.push(`${c.name}: reached the backend ${b.requests()} times`);
          }
        }
        const h = await withTimeout(healthy, 30_000, `${c.name} (healthy)`);
        if (h.status !== 200) wrong.push(`${c.name}: the healthy pool got ${h.status}`);
      }
      assert.ok(await isAlive(proxy.pid), "the proxy process is alive");
      assert.deepEqual(wrong, [], "every case answered as expected, the healthy pool unharmed");

      // Bytes after a response: the answer stood, the connection was not used again.
      const split = evil.find((b) => b.case.name === "split_two_responses")!;
      const again = await client.request({
        head: getHead("/evil/split_two_responses/y", proxy.port),
      });
      assert.equal(again.status, 200);
      assert.equal(
        split.connections(),
        2,
        "a connection with bytes after a response is not reused",
      );

      // The guilty are counted: CL+TE (an invalid head) ejected after 3 failures.
      for (let i = 0; i < 2; i++) {
        await client.request({ head: getHead("/evil/cl_te/again", proxy.port) });
      }
      const log = () => proxy.stderr.join("\n");
      await withTimeout(
        (async () => {
          while (!/backend cl_te ejected/.test(log())) await sleep(50);
        })(),
        10_000,
        "cl_te ejected",
      ).catch(() => {});
      assert.match(log(), /backend cl_te ejected .*\(invalid_response\)/);
      assert.doesNotMatch(log(), /backend good ejected/);
      assert.equal((await client.request({ head: getHead("/good/x", proxy.port) })).status, 200);
    } finally {
      await client.close();
      const code = await proxy.stop();
      await Promise.all([...evil.map((b) => b.close()), good.close()]);
      assert.equal(code, 0, "the proxy shut down cleanly");
    }
  },
});
