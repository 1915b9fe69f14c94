/**
 * `startPaymentsServer` in-process: generated token, port 0, h2c, TLS with
 * HTTP/2 negotiated by ALPN, shutdown.
 */
import assert from "node:assert/strict";
import { generateDevCerts } from "../../shared/certs/generate.ts";
import { startPaymentsServer } from "../../payments/mod.ts";

Deno.test("startPaymentsServer: port 0, generated token, h2c, shutdown closes everything", async () => {
  const srv = await startPaymentsServer({ port: 0, kv: await Deno.openKv(":memory:") });
  const client = Deno.createHttpClient({ http1: false, http2: true });
  try {
    assert.ok(srv.port > 0);
    assert.equal(srv.generatedToken, true);
    assert.ok(srv.token.length >= 40);
    assert.deepEqual(srv.basePaths, ["/quickbooks/v4", "/vendor/v4"]);
    const ok = await fetch(`${srv.url}/vendor/v4/customers/c/cards`, {
      client,
      headers: { authorization: `Bearer ${srv.token}` },
    });
    assert.equal(ok.status, 200);
    assert.deepEqual(await ok.json(), []);
    const no = await fetch(`${srv.url}/vendor/v4/customers/c/cards`, { client });
    assert.equal(no.status, 401);
    await no.body?.cancel();
  } finally {
    client.close();
    await srv.shutdown();
    await srv.shutdown(); // idempotent
  }
});

Deno.test("startPaymentsServer: HTTPS with --cert/--key speaks HTTP/2 and HTTP/1.1", async () => {
  const certs = await generateDevCerts();
  const srv = await startPaymentsServer({
    port: 0,
    hostname: "127.0.0.1",
    kv: await Deno.openKv(":memory:"),
    tokens: ["tls"],
    cert: certs.certPem,
    key: certs.keyPem,
  });
  assert.match(srv.url, /^https:/);
  const url = `https://localhost:${srv.port}/health`;
  const h2 = Deno.createHttpClient({ caCerts: [certs.caCertPem], http1: false, http2: true });
  const h1 = Deno.createHttpClient({ caCerts: [certs.caCertPem], http1: true, http2: false });
  try {
    for (const client of [h2, h1]) {
      const res = await fetch(url, { client });
      assert.equal(res.status, 200);
      assert.equal((await res.json()).status, "ok");
    }
  } finally {
    h2.close();
    h1.close();
    await srv.shutdown();
  }
});
