import assert from "node:assert/strict";
import { generateDevCerts } from "../../shared/certs/generate.ts";
import { createConnector } from "./backend_connect.ts";
import { clientCertificate } from "./client_certificate.ts";

const certs = await generateDevCerts();
const other = await generateDevCerts();

Deno.test("#31.4: client certificate: a pair is checked; another key, or no certificate, is refused", () => {
  const ok = clientCertificate(certs.certPem, certs.keyPem);
  assert.ok(ok.ok);
  assert.match(ok.certificate.fingerprint, /^[0-9a-f]{16}$/);
  assert.ok(ok.certificate.notAfter > Date.now());
  assert.notEqual(
    ok.certificate.fingerprint,
    (clientCertificate(other.certPem, other.keyPem) as { certificate: { fingerprint: string } })
      .certificate.fingerprint,
  );
  assert.deepEqual(clientCertificate(certs.certPem, other.keyPem), {
    ok: false,
    at: "key",
    message: "does not match tls.cert",
  });
  const notCert = clientCertificate(certs.keyPem, certs.keyPem);
  assert.ok(!notCert.ok && notCert.at === "cert");
});

Deno.test("#31.4: connector with a client certificate: connects to the address, checks the server name it is given", async () => {
  const listener = Deno.listenTls({
    hostname: "127.0.0.1",
    port: 0,
    cert: certs.certPem,
    key: certs.keyPem,
    alpnProtocols: ["h2"],
  });
  const accepted = (async () => {
    for await (const conn of listener) {
      conn.handshake().catch(() => {}).finally(() => conn.close());
    }
  })();
  const pair = clientCertificate(certs.certPem, certs.keyPem);
  assert.ok(pair.ok);
  const connect = createConnector({ maxStalledHandshakes: 8 });
  const address = `127.0.0.1:${listener.addr.port}`;
  const tls = (serverName: string) => ({
    caCerts: [certs.caCertPem],
    serverName,
    clientCertificate: pair.certificate,
  });
  try {
    const conn = await connect(address, tls("localhost"), AbortSignal.timeout(10_000));
    conn.close();
    // The name checked is the one given, not the address connected to (the
    // certificate is valid for 127.0.0.1 as well).
    await assert.rejects(
      connect(address, tls("wrong.example"), AbortSignal.timeout(10_000)),
      /not valid for name "wrong\.example"/,
    );
  } finally {
    listener.close();
    await accepted.catch(() => {});
  }
});
