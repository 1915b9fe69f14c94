/**
 * Fault test (issue #35 item 2): a backend with `tls` that accepts TCP and
 * never answers the ClientHello. TCP connect, TLS handshake and the first
 * SETTINGS share one deadline, the pool's `connect_timeout_ms`: past it the
 * session is closed, counted as a `connect` failure, and a new one is
 * opened for the requests that waited on it, which move there instead of
 * failing with it. Against the real proxy process:
 *
 * - with a second, good backend every request is answered 200 long before
 *   `request_timeout_ms`, and the stalled backend sees a new connection
 *   after the first deadline;
 * - a reload that changes `connect_timeout_ms` applies to the next session;
 * - with the stalled backend alone, once it starts to behave: the request
 *   its first session was opened for fails 502 `connect`, the others waiting
 *   on that session move to a new connection and are answered 200.
 */
import assert from "node:assert/strict";
import { startBackend } from "../support/backend.ts";
import { H3TestClient } from "../support/h3_client.ts";
import { startProxy, testCerts } from "../support/proxy_process.ts";
import { getHead } from "../support/faults.ts";
import { sleep, withTimeout } from "../support/wait.ts";
import { closeAll } from "../support/tcp.ts";

/** Pool `connect_timeout_ms` of the tests (ms). */
const CONNECT_TIMEOUT_MS = 500;
/** Pool `request_timeout_ms`: far above what the tests wait for. */
const REQUEST_TIMEOUT_MS = 20_000;
/** Bound on every wait for an answer: below the request timeout, far above the connect timeout. */
const ANSWER_WITHIN_MS = 12_000;

/**
 * A raw TCP backend: the first `stalls` connections are accepted and never
 * answered (the ClientHello goes unanswered); later ones are relayed to
 * `behave` (a real TLS HTTP/2 server) when given.
 */
function stallingBackend(stalls: number, behave?: string) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const held: Deno.Conn[] = [];
  let accepts = 0;
  (async () => {
    for await (const conn of listener) {
      accepts++;
      held.push(conn);
      if (accepts <= stalls || behave === undefined) continue;
      relay(conn, behave).catch(() => {});
    }
  })().catch(() => {});
  return {
    address: `127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    accepts: () => accepts,
    close() {
      listener.close();
      closeAll(held);
    },
  };
}

/** Copies bytes both ways between `conn` and a new connection to `address`. */
async function relay(conn: Deno.Conn, address: string): Promise<void> {
  const port = Number(address.slice(address.lastIndexOf(":") + 1));
  const upstream = await Deno.connect({ hostname: "127.0.0.1", port });
  await Promise.allSettled([
    conn.readable.pipeTo(upstream.writable),
    upstream.readable.pipeTo(conn.writable),
  ]);
}

/** A TLS (ALPN h2) backend answering 200 "behaving". */
async function tlsBackend() {
  const certs = await testCerts();
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    cert: await Deno.readTextFile(certs.certPath),
    key: await Deno.readTextFile(certs.keyPath),
    onListen() {},
  }, () => new Response("behaving"));
  return { address: `127.0.0.1:${server.addr.port}`, close: () => server.shutdown() };
}

function config(backends: string, connectTimeoutMs: number, requestTimeoutMs: number) {
  return `version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tls: {cert: "{{cert}}", key: "{{key}}"}}
load_balancing: {type: round-robin}
passive_health: {consecutive_failures: 1000}
upstream:
  root:
    route: {path_prefix: /}
    request_timeout_ms: ${requestTimeoutMs}
    connect_timeout_ms: ${connectTimeoutMs}
    backends:
${backends}
`;
}

async function client(port: number): Promise<H3TestClient> {
  return await H3TestClient.connect(port, await Deno.readTextFile((await testCerts()).caPath));
}

Deno.test({
  name:
    "#35.2: a TLS backend that never answers its ClientHello: connect_timeout_ms closes the session, a new connection is tried, every request is answered by the good backend; a reload applies to the next session",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const certs = await testCerts();
    const stalled = stallingBackend(Infinity);
    const good = startBackend("good");
    const backends =
      `      - {id: stalled, address: "${stalled.address}", tls: {ca: "${certs.caPath}", server_name: localhost}}
      - {id: good, address: "${good.address}"}`;
    const proxy = await startProxy(config(backends, CONNECT_TIMEOUT_MS, REQUEST_TIMEOUT_MS));
    const c = await client(proxy.port);
    const get = (path: string) =>
      withTimeout(c.request({ head: getHead(path, proxy.port) }), ANSWER_WITHIN_MS, path);
    try {
      // Half go to the stalled backend first and wait on its one session.
      const statuses = await Promise.all(
        Array.from({ length: 6 }, (_, i) => get(`/r${i}`).then((r) => r.status)),
      );
      assert.deepEqual(statuses, Array(6).fill(200));
      assert.ok(stalled.accepts() >= 2, `a new connection was tried (${stalled.accepts()})`);
      const log = proxy.stderr.join("\n");
      assert.match(log, /not established within connect_timeout_ms \(500 ms\)/);

      // A reload to a deadline past the request's own: the next session to
      // the stalled backend waits it out (503), it does not fail at 500 ms.
      const before = stalled.accepts();
      await Deno.writeTextFile(
        proxy.configPath,
        config(backends, 60_000, 1_500).replace("{{cert}}", certs.certPath)
          .replace("{{key}}", certs.keyPath),
      );
      Deno.kill(proxy.pid, "SIGHUP");
      const reloaded = () => proxy.stderr.filter((l) => /configuration reloaded/.test(l)).length;
      for (let i = 0; i < 100 && reloaded() === 0; i++) await sleep(50);
      assert.equal(reloaded(), 1, "reloaded");
      const after = [(await get("/a")).status, (await get("/b")).status].sort();
      assert.deepEqual(after, [200, 503]);
      assert.equal(stalled.accepts(), before + 1, "one new session, with the new deadline");
    } finally {
      await c.close();
      await proxy.stop();
      stalled.close();
      await good.close();
    }
  },
});

Deno.test({
  name:
    "#35.2: requests waiting on a session stuck in its TLS handshake move to a new connection once the backend behaves; only the request it was opened for fails",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const certs = await testCerts();
    const real = await tlsBackend();
    const flaky = stallingBackend(1, real.address);
    const backends =
      `      - {id: flaky, address: "${flaky.address}", tls: {ca: "${certs.caPath}", server_name: localhost}}`;
    const proxy = await startProxy(config(backends, CONNECT_TIMEOUT_MS, REQUEST_TIMEOUT_MS));
    const c = await client(proxy.port);
    try {
      const first = c.request({ head: getHead("/first", proxy.port) });
      // The session is opened for the first request: the others come once it is connecting.
      for (let i = 0; i < 200 && flaky.accepts() === 0; i++) await sleep(10);
      assert.equal(flaky.accepts(), 1);
      const rest = Array.from(
        { length: 3 },
        (_, i) => c.request({ head: getHead(`/w${i}`, proxy.port) }),
      );
      const [one, ...others] = await withTimeout(
        Promise.all([first, ...rest]),
        ANSWER_WITHIN_MS,
        "answers",
      );
      assert.equal(one.status, 502, "the request the stuck session was opened for");
      assert.deepEqual(others.map((r) => r.status), [200, 200, 200]);
      assert.equal(new TextDecoder().decode(others[0].body), "behaving");
      assert.equal(flaky.accepts(), 2, "one stuck connection, one new");
      assert.match(proxy.stderr.join("\n"), /backend flaky failed \(connect\)/);
    } finally {
      await c.close();
      await proxy.stop();
      flaky.close();
      await real.close();
    }
  },
});
