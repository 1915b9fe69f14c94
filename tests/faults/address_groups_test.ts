/**
 * Fault tests of the per-address admission caps. Issue #25 item 7: the
 * per-address cap counts an address group, not an exact address. IPv6 groups
 * are /64 by default (unit-tested in `proxy/quic/address_group_test.ts`:
 * loopback has a single IPv6 address); here the same code path end to end
 * with `limits.address_prefix_v4: 24`, clients bound to chosen 127.0.0.0/8
 * source addresses. Issue #35 item 7: the caps bite only under pressure, so
 * a burst of legitimate handshakes from one address (a NAT, a load test) is
 * never shed.
 */
import assert from "node:assert/strict";
import { startBackend } from "../support/backend.ts";
import { connectH3, H3TestClient } from "../support/h3_client.ts";
import { startProxy, testCerts } from "../support/proxy_process.ts";
import { faultConfig, getHead } from "../support/faults.ts";
import { metricValue, scrapeMetrics } from "../support/metrics.ts";
import { sleep, withTimeout } from "../support/wait.ts";

/** Connects from `source`; resolves with the open connection, or `undefined` when turned away. */
async function connectFrom(
  source: string,
  port: number,
  ca: string,
): Promise<{ conn: Deno.QuicConn; endpoint: Deno.QuicEndpoint } | undefined> {
  const endpoint = new Deno.QuicEndpoint({ hostname: source, port: 0 });
  try {
    const conn = await connectH3(endpoint, port, ca);
    // The close may arrive just after the handshake completes.
    const closedSoon = await Promise.race([
      conn.closed.then(() => true, () => true),
      sleep(1000).then(() => false),
    ]);
    if (closedSoon) {
      endpoint.close();
      return undefined;
    }
    return { conn, endpoint };
  } catch {
    endpoint.close();
    return undefined;
  }
}

Deno.test("#25.7: with address_prefix_v4 24, two addresses of one /24 share max_connections_per_address; another /24 does not", async () => {
  const be = startBackend("b");
  // max_connections 4: two open connections make it half full, where the cap applies.
  const proxy = await startProxy(faultConfig([be.address], {
    extra: "limits: {max_connections_per_address: 2, max_connections: 4, address_prefix_v4: 24}",
  }));
  const ca = await Deno.readTextFile((await testCerts()).caPath);
  const held: { conn: Deno.QuicConn; endpoint: Deno.QuicEndpoint }[] = [];
  try {
    for (const source of ["127.0.3.1", "127.0.3.2"]) {
      const c = await connectFrom(source, proxy.port, ca);
      assert.ok(c, `${source} gets in`);
      held.push(c);
    }
    // A third address of the same /24: over the group's cap.
    assert.equal(await connectFrom("127.0.3.3", proxy.port, ca), undefined);
    // Another /24 is another group.
    const other = await connectFrom("127.0.4.1", proxy.port, ca);
    assert.ok(other, "127.0.4.1 gets in");
    held.push(other);
  } finally {
    for (const { conn, endpoint } of held) {
      conn.close({ closeCode: 0x100, reason: "" });
      endpoint.close();
    }
    assert.equal(await proxy.stop(), 0);
    await be.close();
  }
});

Deno.test("#35.7: 200 simultaneous connections from one address, one GET each, three rounds: none fails with the default limits", async () => {
  const be = startBackend("b");
  const proxy = await startProxy(faultConfig([be.address], {
    extra: "admin: {address: 127.0.0.1, port: 0}\nlog: {level: info, access: false}",
  }));
  const ca = await Deno.readTextFile((await testCerts()).caPath);
  const failures: string[] = [];
  try {
    for (let round = 0; round < 3; round++) {
      await Promise.all(Array.from({ length: 200 }, async () => {
        let client: H3TestClient | undefined;
        try {
          client = await withTimeout(H3TestClient.connect(proxy.port, ca), 30_000, "connect");
          const r = await withTimeout(
            client.request({ head: getHead("/x", proxy.port) }),
            30_000,
            "GET",
          );
          if (r.status !== 200) failures.push(`status ${r.status}`);
        } catch (err) {
          failures.push(String(err));
        } finally {
          await client?.close();
        }
      }));
    }
    const text = await scrapeMetrics(proxy.adminPort!);
    const shed = [...text.matchAll(/^spooky_connections_rejected_total\{reason="(\w+)"\} (\d+)$/gm)]
      .filter((m) => m[2] !== "0").map((m) => `${m[1]}=${m[2]}`);
    assert.deepEqual(failures, [], `failed: ${failures.length} of 600; shed: ${shed.join(" ")}`);
    assert.deepEqual(shed, []);
    // The socket's receive buffer: raised at startup, reported in the log and in /metrics.
    const bytes = metricValue(text, "spooky_quic_receive_buffer_bytes");
    assert.ok(bytes !== undefined && bytes > 0, "spooky_quic_receive_buffer_bytes");
    const report = proxy.stderr.find((l) => /the QUIC socket's UDP receive buffer is/.test(l));
    assert.ok(report, proxy.stderr.join("\n"));
    assert.ok(report.includes(`${Math.round(bytes / 1024)} KiB`), `${report} vs ${bytes}`);
    // Raised (root, or rmem_max allows 7 MiB), or a warning with the cause.
    if (bytes < 7 * 1024 * 1024) {
      assert.ok(proxy.stderr.some((l) => /not the 7168 KiB asked for/.test(l)), report);
    }
  } finally {
    assert.equal(await proxy.stop(), 0);
    await be.close();
  }
});
