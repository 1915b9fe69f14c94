/**
 * Fault tests (issue #25, items 1 and 2) for the proxy's TCP listeners, on a
 * real `proxy/main.ts` process with raw sockets:
 *
 * - descriptor exhaustion: under `prlimit --nofile=256`, more plain TCP
 *   connects to the TCP fallback port and to the admin port than the process
 *   has descriptors (no TLS, nothing sent). With the default cap (`auto`) each
 *   newcomer sheds the oldest of them (#35.6); with a cap above the
 *   descriptor limit accept fails with EMFILE and backs off. Either way the
 *   process stays up, HTTP/3 and a kept-alive TCP fallback connection keep
 *   being answered, a log line
 *   and `spooky_tcp_connections_rejected_total` say so, and a new TCP client
 *   is served once the flood is gone (before the fix: `Too many open files`
 *   ended the process);
 * - slowloris: a connection without a ClientHello, with half of one, with TLS
 *   done and nothing sent, trickling an HTTP/1.1 head, and on the admin port
 *   idle or trickling: each is closed at its (small, configured) timeout,
 *   while HTTP/3 and a normal TCP fallback request are served.
 *
 * @module
 */
import assert from "node:assert/strict";
import { startBackend } from "../support/backend.ts";
import { H3TestClient } from "../support/h3_client.ts";
import { type ProxyProcess, startProxy, testCerts } from "../support/proxy_process.ts";
import { isAlive, tcpFallbackConfig } from "../support/faults.ts";
import { metricValue, scrapeMetrics } from "../support/metrics.ts";
import { sleep } from "../support/wait.ts";
import { closeAll, closedWithin, connect } from "../support/tcp.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

async function tlsConnect(port: number, ca: string): Promise<Deno.TlsConn> {
  const conn = await Deno.connectTls({
    hostname: "localhost",
    port,
    caCerts: [ca],
    alpnProtocols: ["http/1.1"],
  });
  await conn.handshake();
  return conn;
}

/** One HTTP/1.1 GET on an open connection; resolves with the status line. */
async function get(conn: Deno.Conn, path = "/who"): Promise<string> {
  await conn.write(enc.encode(`GET ${path} HTTP/1.1\r\nhost: localhost\r\n\r\n`));
  const buf = new Uint8Array(16 * 1024);
  let text = "";
  // The status line and head; the small JSON body follows in the same reads.
  while (!text.includes("\r\n\r\n")) {
    const n = await conn.read(buf);
    if (n === null) throw new Error(`closed before an answer: ${JSON.stringify(text)}`);
    text += dec.decode(buf.subarray(0, n));
  }
  const length = Number(/content-length: (\d+)/i.exec(text)?.[1] ?? 0);
  while (text.length - text.indexOf("\r\n\r\n") - 4 < length) {
    const n = await conn.read(buf);
    if (n === null) break;
    text += dec.decode(buf.subarray(0, n));
  }
  return text.split("\r\n")[0];
}

/** A GET over HTTP/3 on `client`; resolves with the status. */
async function h3Status(client: H3TestClient): Promise<number> {
  const r = await client.request({
    head: [[":method", "GET"], [":scheme", "https"], [":authority", "localhost"], [
      ":path",
      "/who",
    ]],
  });
  return r.status;
}

/** One sample of the proxy's `/metrics`, e.g. `tcp_connections_rejected_total{listener="admin",reason="max_connections"}`. */
async function metric(proxy: ProxyProcess, series: string): Promise<number> {
  const value = metricValue(await scrapeMetrics(proxy.adminPort!), `spooky_${series}`);
  assert.ok(value !== undefined, `no spooky_${series} in /metrics`);
  return value;
}

/** Opens `n` plain TCP connections to `port` (nothing sent); the ones the kernel refused are not kept. */
async function flood(port: number, n: number): Promise<Deno.Conn[]> {
  const out: Deno.Conn[] = [];
  for (let i = 0; i < n; i++) {
    try {
      out.push(await connect(port));
    } catch {
      // the listen queue was full
    }
  }
  return out;
}

for (
  const variant of [
    {
      name: "the default cap (auto): each newcomer sheds the oldest silent connection",
      limits: "",
      reason: "shed",
    },
    {
      name: "a cap above the descriptor limit: accept fails (EMFILE) and backs off",
      limits: "tcp_max_connections: 2000",
      reason: "accept_failed",
    },
  ]
) {
  Deno.test(`faults: TCP listeners under prlimit --nofile=256, ${variant.name}; the process, HTTP/3 and open connections live on`, async () => {
    const certs = await testCerts();
    const ca = await Deno.readTextFile(certs.caPath);
    const backend = startBackend("a");
    const proxy = await startProxy(
      tcpFallbackConfig(backend.address, {
        limits: `tcp_header_timeout_ms: 2000, tcp_idle_timeout_ms: 60000${
          variant.limits ? `, ${variant.limits}` : ""
        }`,
        admin: "header_timeout_ms: 2000",
      }),
      {},
      { wrap: ["prlimit", "--nofile=256:256", "--"] },
    );
    const h3 = await H3TestClient.connect(proxy.port, ca);
    const kept = await tlsConnect(proxy.port, ca);
    let conns: Deno.Conn[] = [];
    try {
      // Warm: HTTP/3 and a kept-alive TCP fallback connection, both answered.
      assert.equal(await h3Status(h3), 200);
      assert.equal(await get(kept), "HTTP/1.1 200 OK");
      // /metrics through a connection opened now (fetch keeps it): the admin
      // port is flooded below.
      assert.equal(
        await metric(proxy, `tcp_connections_open{listener="tcp_fallback"}`),
        1,
        "the kept-alive fallback connection",
      );

      // More connections than the process has descriptors, on both ports.
      conns = [...await flood(proxy.port, 320), ...await flood(proxy.adminPort!, 120)];
      assert.ok(conns.length > 256, `only ${conns.length} connects went through`);
      await sleep(500);

      assert.ok(await isAlive(proxy.pid), `the proxy died:\n${proxy.stderr.join("\n")}`);
      assert.equal(await h3Status(h3), 200, "HTTP/3 is still served");
      assert.equal(await get(kept), "HTTP/1.1 200 OK", "an open TCP connection is still served");
      const warned = variant.reason === "shed"
        ? /TCP fallback: \d+ connections open \(limits\.tcp_max_connections\): closed \d+ connection\(s\) with no request in flight/
        : /TCP fallback: accept failed \d+ time\(s\).*Too many open files/;
      assert.ok(
        proxy.stderr.some((l) => /WARN/.test(l) && warned.test(l)),
        `no warning like ${warned}:\n${proxy.stderr.join("\n")}`,
      );
      const rejected = await metric(
        proxy,
        `tcp_connections_rejected_total{listener="tcp_fallback",reason="${variant.reason}"}`,
      );
      assert.ok(rejected > 0, `rejected ${variant.reason}: ${rejected}`);

      // The header timeout frees the flood; every queued connection is taken
      // and closed in turn, and a new TCP client is served.
      const t0 = performance.now();
      const closed = await Promise.all(conns.map((c) => closedWithin(c, 30_000, t0)));
      conns = [];
      assert.ok(
        closed.every((t) => t >= 0),
        `still open after 30 s: ${closed.filter((t) => t < 0).length} of ${closed.length}`,
      );
      const fresh = await tlsConnect(proxy.port, ca);
      assert.equal(await get(fresh), "HTTP/1.1 200 OK", "a new TCP client is served again");
      fresh.close();
      const admin = await fetch(`http://127.0.0.1:${proxy.adminPort}/health`);
      assert.equal(admin.status, 200);
      await admin.body?.cancel();
      assert.ok(await isAlive(proxy.pid));
    } finally {
      closeAll(conns);
      try {
        kept.close();
      } catch {
        // already closed
      }
      await h3.close();
      assert.equal(await proxy.stop(), 0, proxy.stderr.join("\n"));
      await backend.close();
    }
  });
}

Deno.test("faults: slowloris on the TCP fallback and the admin listener: every kind of stalled connection is cut at its timeout", async () => {
  const certs = await testCerts();
  const ca = await Deno.readTextFile(certs.caPath);
  const backend = startBackend("a");
  const HEADER_MS = 1000;
  const IDLE_MS = 1500;
  const proxy = await startProxy(tcpFallbackConfig(backend.address, {
    limits: `tcp_header_timeout_ms: ${HEADER_MS}, tcp_idle_timeout_ms: ${IDLE_MS}`,
    admin: `header_timeout_ms: ${HEADER_MS}, idle_timeout_ms: ${IDLE_MS}`,
  }));
  const h3 = await H3TestClient.connect(proxy.port, ca);
  const trickles: ReturnType<typeof setInterval>[] = [];
  const EACH = 10;
  try {
    const t0 = performance.now();
    const noHello = await Promise.all(Array.from({ length: EACH }, () => connect(proxy.port)));
    const halfHello = await Promise.all(Array.from({ length: EACH }, async () => {
      const c = await connect(proxy.port);
      await c.write(new Uint8Array([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00]));
      return c;
    }));
    const tlsSilent = await Promise.all(
      Array.from({ length: EACH }, () => tlsConnect(proxy.port, ca)),
    );
    const tlsTrickle = await Promise.all(
      Array.from({ length: EACH }, () => tlsConnect(proxy.port, ca)),
    );
    const adminIdle = await Promise.all(
      Array.from({ length: EACH }, () => connect(proxy.adminPort!)),
    );
    const adminTrickle = await Promise.all(
      Array.from({ length: EACH }, () => connect(proxy.adminPort!)),
    );
    // A kept-alive admin connection after one request: closed at the idle timeout.
    const adminKept = await connect(proxy.adminPort!);
    assert.equal(await get(adminKept, "/health"), "HTTP/1.1 200 OK");
    const keptSince = performance.now();

    // An HTTP/1.1 head, one byte every 100 ms (it would take seconds to complete).
    const head = enc.encode("GET /who HTTP/1.1\r\nhost: localhost\r\nx-pad: " + "a".repeat(200));
    for (const c of [...tlsTrickle, ...adminTrickle]) {
      let i = 0;
      const timer = setInterval(() => {
        if (i >= head.length) return;
        c.write(head.subarray(i, ++i)).catch(() => clearInterval(timer));
      }, 100);
      trickles.push(timer);
    }

    // Meanwhile HTTP/3 and a normal TCP fallback request are served.
    assert.equal(await h3Status(h3), 200);
    const normal = await tlsConnect(proxy.port, ca);
    assert.equal(await get(normal), "HTTP/1.1 200 OK");
    normal.close();

    const SLACK = 5000; // sweeps every quarter timeout; a busy CI machine
    const groups: Array<[string, Deno.Conn[], number, number]> = [
      ["no ClientHello", noHello, HEADER_MS, t0],
      ["half a ClientHello", halfHello, HEADER_MS, t0],
      ["TLS done, nothing sent", tlsSilent, HEADER_MS, t0],
      ["TLS done, HTTP/1.1 head at 10 bytes/s", tlsTrickle, HEADER_MS, t0],
      ["admin: nothing sent", adminIdle, HEADER_MS, t0],
      ["admin: head at 10 bytes/s", adminTrickle, HEADER_MS, t0],
      ["admin: idle after a request", [adminKept], IDLE_MS, keptSince],
    ];
    const results = await Promise.all(
      groups.map(([, conns, ms, since]) =>
        Promise.all(conns.map((c) => closedWithin(c, ms + SLACK, since)))
      ),
    );
    for (const [i, [what, , ms]] of groups.entries()) {
      for (const t of results[i]) {
        assert.ok(t >= 0, `${what}: still open ${ms + SLACK} ms later`);
        assert.ok(t >= ms - 100, `${what}: closed after ${Math.round(t)} ms, before ${ms} ms`);
      }
    }
    assert.equal(await h3Status(h3), 200, "HTTP/3 still served");
    assert.ok(
      await metric(
        proxy,
        `tcp_connections_timeouts_total{listener="tcp_fallback",reason="header"}`,
      ) >=
        4 * EACH,
    );
    assert.ok(
      await metric(proxy, `tcp_connections_timeouts_total{listener="admin",reason="header"}`) >=
        2 * EACH,
    );
    assert.ok(
      await metric(proxy, `tcp_connections_timeouts_total{listener="admin",reason="idle"}`) >= 1,
    );
  } finally {
    for (const t of trickles) clearInterval(t);
    await h3.close();
    assert.equal(await proxy.stop(), 0, proxy.stderr.join("\n"));
    await backend.close();
  }
});
