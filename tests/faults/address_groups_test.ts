/**
 * Fault test (issue #25 item 7): the per-address cap counts an address group,
 * not an exact address. IPv6 groups are /64 by default (unit-tested in
 * `proxy/quic/address_group_test.ts`: loopback has a single IPv6 address);
 * here the same code path end to end with `limits.address_prefix_v4: 24`,
 * clients bound to chosen 127.0.0.0/8 source addresses.
 */
import assert from "node:assert/strict";
import { startBackend } from "../support/backend.ts";
import { startProxy, testCerts } from "../support/proxy_process.ts";
import { faultConfig, sleep } from "./_support.ts";

/** Connects from `source`; resolves with the open connection, or `undefined` when turned away. */
async function connectFrom(
  source: string,
  port: number,
  ca: string,
): Promise<{ conn: Deno.QuicConn; endpoint: Deno.QuicEndpoint } | undefined> {
  const endpoint = new Deno.QuicEndpoint({ hostname: source, port: 0 });
  try {
    const conn = await Deno.connectQuic({
      endpoint,
      hostname: "127.0.0.1",
      port,
      serverName: "localhost",
      caCerts: [ca],
      alpnProtocols: ["h3"],
    });
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
  const proxy = await startProxy(faultConfig([be.address], {
    extra: "limits: {max_connections_per_address: 2, address_prefix_v4: 24}",
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
