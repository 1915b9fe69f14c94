/**
 * Fault tests (issue #35, items 3 and 6) for the proxy's TCP listeners at
 * their connection cap, on a real `proxy/main.ts` process with raw sockets:
 *
 * - a slowloris on the admin port: 150 connections trickling a request head
 *   (more than `admin.max_connections`, 64) and timeouts far away (60 s), so
 *   that only shedding can let anyone in: an operator's `GET /metrics` is
 *   answered within 1 s (before: closed at once for the whole header
 *   timeout), and the shed connections are counted;
 * - the same on the TCP fallback with stalled TLS handshakes and heads
 *   trickling after TLS: a new HTTPS client is answered;
 * - connections made straight to the fallback's internal TLS listener (found
 *   from `/proc`, as another local process would): counted in
 *   `spooky_tcp_connections_open` and as `reason="not_relayed"`, and gone
 *   from the count once they leave (before: 150 held, counted nowhere).
 *
 * @module
 */
import assert from "node:assert/strict";
import { startBackend } from "../support/backend.ts";
import { startProxy, testCerts } from "../support/proxy_process.ts";
import { tcpFallbackConfig } from "../support/faults.ts";
import { closeAll, connect, listeningPorts } from "../support/tcp.ts";
import { metricValue, scrapeMetrics } from "../support/metrics.ts";
import { sleep } from "../support/wait.ts";

const enc = new TextEncoder();

/** One sample of `/metrics`, e.g. `tcp_connections_open{listener="admin"}`. */
function sample(text: string, series: string): number {
  const value = metricValue(text, `spooky_${series}`);
  assert.ok(value !== undefined, `no spooky_${series} in /metrics`);
  return value;
}

/**
 * Sends `head` one byte every `everyMs` on each of `conns`, never ending it;
 * returns a function that stops.
 */
function trickle(conns: Deno.Conn[], head: Uint8Array, everyMs: number): () => void {
  let i = 0;
  const timer = setInterval(() => {
    if (i >= head.length) return;
    const byte = head.subarray(i, ++i);
    for (const c of conns) c.write(byte).catch(() => {});
  }, everyMs);
  return () => clearInterval(timer);
}

/** An HTTP/1.1 head long enough never to complete here (1 byte per 100 ms: 200 s). */
const SLOW_HEAD = enc.encode(
  "GET /who HTTP/1.1\r\nhost: localhost\r\nx-pad: " + "a".repeat(2000),
);

/** Whether the server closes `conn` within `ms` (a read sees the end, or a reset); closes it. */
async function isClosed(conn: Deno.Conn, ms: number): Promise<boolean> {
  const buf = new Uint8Array(1024);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    closeAll([conn]);
  }, ms);
  try {
    while (await conn.read(buf) !== null) { /* drop */ }
  } catch {
    // reset by the server, or closed by the timer
  } finally {
    clearTimeout(timer);
  }
  closeAll([conn]);
  return !timedOut;
}

Deno.test("#35.6: 150 connections trickling heads to the admin port (cap 64); GET /metrics is answered within 1 s", async () => {
  const backend = startBackend("a");
  const proxy = await startProxy(tcpFallbackConfig(backend.address, {
    admin: "header_timeout_ms: 60000, idle_timeout_ms: 60000",
  }));
  const conns: Deno.Conn[] = [];
  let stop = () => {};
  try {
    for (let i = 0; i < 150; i++) conns.push(await connect(proxy.adminPort!));
    stop = trickle(conns, SLOW_HEAD, 100);
    await sleep(1000); // every connect accepted; each past the 64th shed the oldest

    const client = Deno.createHttpClient({});
    const t0 = performance.now();
    try {
      const res = await fetch(`http://127.0.0.1:${proxy.adminPort}/metrics`, {
        client,
        signal: AbortSignal.timeout(10_000),
      });
      const text = await res.text();
      const ms = performance.now() - t0;
      assert.equal(res.status, 200);
      assert.ok(ms < 1000, `GET /metrics took ${Math.round(ms)} ms`);
      // 150 - 64 trickling ones, and one more for this request.
      const shed = sample(text, `tcp_connections_rejected_total{listener="admin",reason="shed"}`);
      assert.ok(shed >= 87, `shed ${shed}`);
      assert.equal(
        sample(text, `tcp_connections_rejected_total{listener="admin",reason="max_connections"}`),
        0,
      );
    } finally {
      client.close();
    }
    // The oldest were shed; the newest still trickle (their timeouts are 60 s away).
    const closed = await Promise.all(conns.map((c, i) => isClosed(c, i < 80 ? 5000 : 500)));
    assert.ok(closed.slice(0, 80).every((c) => c), "an old trickling connection is still open");
    assert.ok(closed.slice(-50).every((c) => !c), "a new trickling connection was closed");
  } finally {
    stop();
    closeAll(conns);
    assert.equal(await proxy.stop(), 0, proxy.stderr.join("\n"));
    await backend.close();
  }
});

Deno.test("#35.6: stalled TLS handshakes and trickling heads fill the TCP fallback (cap 16); a new HTTPS client is answered", async () => {
  const certs = await testCerts();
  const ca = await Deno.readTextFile(certs.caPath);
  const backend = startBackend("a");
  const proxy = await startProxy(tcpFallbackConfig(backend.address, {
    limits: "tcp_max_connections: 16, tcp_header_timeout_ms: 60000, tcp_idle_timeout_ms: 60000",
  }));
  const conns: Deno.Conn[] = [];
  let stop = () => {};
  const h2 = Deno.createHttpClient({ caCerts: [ca], http1: false, http2: true });
  try {
    for (let i = 0; i < 20; i++) {
      const c = await connect(proxy.port);
      await c.write(new Uint8Array([0x16, 0x03, 0x01, 0x02, 0x00, 0x01]));
      conns.push(c);
    }
    const tlsDone: Deno.TlsConn[] = [];
    for (let i = 0; i < 10; i++) {
      const c = await Deno.connectTls({
        hostname: "localhost",
        port: proxy.port,
        caCerts: [ca],
        alpnProtocols: ["http/1.1"],
      });
      await c.handshake();
      tlsDone.push(c);
    }
    conns.push(...tlsDone);
    stop = trickle(tlsDone, SLOW_HEAD, 100);
    await sleep(500);

    const res = await fetch(`https://localhost:${proxy.port}/who`, {
      client: h2,
      signal: AbortSignal.timeout(10_000),
    });
    assert.equal(res.status, 200);
    await res.body?.cancel();
    const text = await scrapeMetrics(proxy.adminPort!);
    const shed = sample(
      text,
      `tcp_connections_rejected_total{listener="tcp_fallback",reason="shed"}`,
    );
    assert.ok(shed >= 15, `shed ${shed}`);
    assert.ok(sample(text, `tcp_connections_open{listener="tcp_fallback"}`) <= 16);
  } finally {
    stop();
    h2.close();
    closeAll(conns);
    assert.equal(await proxy.stop(), 0, proxy.stderr.join("\n"));
    await backend.close();
  }
});

Deno.test("#35.3: 150 connections straight to the TCP fallback's internal TLS listener are counted in /metrics until they leave", async () => {
  const backend = startBackend("a");
  const proxy = await startProxy(tcpFallbackConfig(backend.address, {
    limits: "tcp_max_connections: 400, tcp_header_timeout_ms: 2000",
  }));
  const conns: Deno.Conn[] = [];
  try {
    const inner = [...listeningPorts(proxy.pid)].filter(
      (p) => p !== proxy.port && p !== proxy.adminPort,
    );
    assert.equal(inner.length, 1, `internal listener not found among ${inner}`);
    for (let i = 0; i < 150; i++) {
      const c = await connect(inner[0]);
      if (i % 2 === 1) await c.write(new Uint8Array([0x16, 0x03, 0x01, 0x02, 0x00, 0x01]));
      conns.push(c);
    }
    let text = "";
    for (let i = 0; i < 50; i++) {
      text = await scrapeMetrics(proxy.adminPort!);
      const n = sample(
        text,
        `tcp_connections_rejected_total{listener="tcp_fallback",reason="not_relayed"}`,
      );
      if (n >= 150) break;
      await sleep(100);
    }
    assert.equal(
      sample(text, `tcp_connections_rejected_total{listener="tcp_fallback",reason="not_relayed"}`),
      150,
    );
    assert.equal(sample(text, `tcp_connections_open{listener="tcp_fallback"}`), 150);
    assert.ok(
      proxy.stderr.some((l) => /WARN.*internal TLS listener.*relay did not open/.test(l)),
      proxy.stderr.join("\n"),
    );
    // They leave: the count follows.
    closeAll(conns);
    for (let i = 0; i < 100; i++) {
      text = await scrapeMetrics(proxy.adminPort!);
      if (sample(text, `tcp_connections_open{listener="tcp_fallback"}`) === 0) break;
      await sleep(100);
    }
    assert.equal(sample(text, `tcp_connections_open{listener="tcp_fallback"}`), 0);
  } finally {
    closeAll(conns);
    assert.equal(await proxy.stop(), 0, proxy.stderr.join("\n"));
    await backend.close();
  }
});
