/**
 * Fault test (issue #24 items 1, 2, 6): backends that break HTTP/2 on
 * purpose. Each case of the corpus (`tests/support/evil_h2_backend.ts`: push
 * promises, frames on stream 0, bad HPACK, oversized frames, window
 * overflows, invalid SETTINGS, an HTTP/1.1 reply, GOAWAY mid-response,
 * invalid statuses and fields, a stall, …) is its own pool on its own
 * raw-socket backend. For every case, against the real proxy process:
 *
 * - the request to the evil backend is answered 502 (503 for the stall;
 *   200 for the control cases), never 400 and never the backend's own
 *   invalid status;
 * - a response head that fails the response check (whether the HTTP/2
 *   codec or the response phase finds it) is answered `invalid_response`
 *   and reaches the backend once: it answered, so it is never sent again;
 * - a request to another, healthy pool that is in flight meanwhile succeeds;
 * - the proxy process stays alive and serves the next request.
 *
 * Afterwards the guilty backends are blamed in passive health (ejected
 * after `consecutive_failures`): a protocol violation and a timeout both
 * count; a client that leaves while a backend is asked is logged as 499
 * and does not count against it.
 */
// deno-lint-ignore-file no-console
import assert from "node:assert/strict";
import { startBackend } from "../support/backend.ts";
import { EVIL_CASES, type EvilBackend, startEvilBackend } from "../support/evil_h2_backend.ts";
import { H3TestClient } from "../support/h3_client.ts";
import { startProxy, testCerts } from "../support/proxy_process.ts";
import { getHead, isAlive } from "../support/faults.ts";
import { sleep, withTimeout } from "../support/wait.ts";

/** Pool timeout of the stall case (ms): long enough for a busy machine, short for the test. */
const STALL_TIMEOUT_MS = 1_000;
/** Cases run at once (each with its own in-flight healthy request). */
const PARALLEL = 4;

/** The `error` of the proxy's JSON answer, or what the body is instead. */
function errorOf(body: Uint8Array): string {
  const text = new TextDecoder().decode(body);
  try {
    return String(JSON.parse(text).error);
  } catch {
    return JSON.stringify(text.slice(0, 80));
  }
}

function proxyConfig(good: string, evil: EvilBackend[]): string {
  const pools = evil.map((b) => {
    const name = b.case.name;
    const timeout = b.case.expect === 503 ? STALL_TIMEOUT_MS : 10_000;
    return `  ${name}:
    route: {path_prefix: /evil/${name}/}
    request_timeout_ms: ${timeout}
    backends: [{id: ${name}, address: "${b.address}"}]`;
  }).join("\n");
  return `version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tls: {cert: "{{cert}}", key: "{{key}}"}}
passive_health: {consecutive_failures: 3, eject_ms: 60000}
upstream:
  good:
    route: {path_prefix: /good/}
    request_timeout_ms: 10000
    backends: [{id: good, address: "${good}"}]
${pools}
`;
}

Deno.test({
  name: "faults: misbehaving HTTP/2 backends fail only their own requests",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const evil = EVIL_CASES.map((c) => startEvilBackend(c));
    const good = startBackend("good");
    const proxy = await startProxy(proxyConfig(good.address, evil));
    const ca = await Deno.readTextFile((await testCerts()).caPath);
    const client = await H3TestClient.connect(proxy.port, ca);
    const wrong: string[] = [];
    try {
      const runCase = async (b: EvilBackend) => {
        const c = b.case;
        // A request to the healthy pool, in flight while the evil one runs.
        const healthy = client.request({ head: getHead("/good/slow/300", proxy.port) });
        const head = getHead(`/evil/${c.name}/x`, proxy.port);
        if (c.request !== undefined) head[0] = [":method", c.request.method];
        const body = c.request === undefined ? undefined : new Uint8Array(c.request.bodyBytes);
        const res = await withTimeout(client.request({ head, body }), 30_000, c.name);
        if (res.status !== c.expect) wrong.push(`${c.name}: ${res.status} (want ${c.expect})`);
        if (b.connections() === 0) wrong.push(`${c.name}: the backend was never reached`);
        if (c.error !== undefined) {
          // A head no client may be given is the backend's answer: `invalid_response`, never sent again.
          const error = errorOf(res.body);
          if (error !== c.error) wrong.push(`${c.name}: error ${error} (want ${c.error})`);
          if (b.requests() !== 1) wrong.push(`${c.name}: sent ${b.requests()} times (want once)`);
        }
        const h = await withTimeout(healthy, 30_000, `${c.name} (healthy)`);
        if (h.status !== 200 || !h.finished) {
          wrong.push(`${c.name}: the healthy pool's request got ${h.status}`);
        }
      };
      const queue = [...evil];
      await Promise.all(
        Array.from({ length: PARALLEL }, async () => {
          for (let b = queue.shift(); b !== undefined; b = queue.shift()) await runCase(b);
        }),
      );
      assert.ok(await isAlive(proxy.pid), "the proxy process is alive");
      assert.deepEqual(wrong, [], "every case answered as expected, the healthy pool unharmed");

      // The next requests are served, on the same connection and a new one.
      assert.equal((await client.request({ head: getHead("/good/x", proxy.port) })).status, 200);
      const fresh = await H3TestClient.connect(proxy.port, ca);
      try {
        assert.equal((await fresh.request({ head: getHead("/good/y", proxy.port) })).status, 200);
      } finally {
        await fresh.close();
      }

      const log = () => proxy.stderr.join("\n");
      const waitFor = (re: RegExp, what: string) =>
        withTimeout(
          (async () => {
            while (!re.test(log())) await sleep(50);
          })(),
          10_000,
          what,
        );

      // A client that leaves while the staller is asked: logged as 499
      // (outcome aborted), and not counted against the backend.
      const leaving = await H3TestClient.connect(proxy.port, ca);
      const gone = leaving.request({ head: getHead("/evil/stall/gone", proxy.port) });
      await sleep(300);
      await leaving.close();
      await gone;
      await waitFor(/\/evil\/stall\/gone" 499 .*outcome=aborted/, "the 499 access-log line");

      // The guilty are blamed (consecutive_failures 3): the protocol
      // violator after two more requests (each retried once), the staller
      // at its 3rd timeout. Its 2nd timeout must not eject it: the client
      // that left did not count.
      for (let i = 0; i < 2; i++) {
        await client.request({ head: getHead("/evil/push_promise/again", proxy.port) });
      }
      await client.request({ head: getHead("/evil/stall/again", proxy.port) });
      await sleep(200);
      assert.doesNotMatch(log(), /backend stall ejected/, "a client that left is not a failure");
      await client.request({ head: getHead("/evil/stall/again", proxy.port) });
      await waitFor(/backend stall ejected .*\(timeout\)/, "stall ejected").catch(() => {});
      assert.match(log(), /backend push_promise ejected .*\(protocol\)/);
      assert.match(log(), /backend stall ejected .*\(timeout\)/);
      assert.doesNotMatch(log(), /backend good ejected/);
      console.log(
        `${EVIL_CASES.length} cases, ${
          evil.reduce((n, b) => n + b.requests(), 0)
        } requests reached the evil backends`,
      );
    } finally {
      await client.close();
      const code = await proxy.stop();
      await Promise.all([...evil.map((b) => b.close()), good.close()]);
      assert.equal(code, 0, "the proxy shut down cleanly");
    }
  },
});
