import "reflect-metadata";
import assert from "node:assert/strict";
import * as x509 from "@peculiar/x509";
import { type DevCerts, ensureDevCerts, generateDevCerts, LEAF_VALIDITY_DAYS } from "./generate.ts";
import { main } from "./main.ts";
import { needs } from "../../tests/support/tools.ts";
import { withTimeout } from "../../tests/support/wait.ts";

const DAY_MS = 24 * 60 * 60 * 1000;

let cached: Promise<DevCerts> | undefined;
/** One generated set shared by the read-only tests. */
function certs(): Promise<DevCerts> {
  cached ??= generateDevCerts();
  return cached;
}

/** The pin computed without the certificate: from the private key alone. */
async function pinFromPrivateKey(keyPem: string): Promise<string> {
  const b64 = keyPem.replace(/-----[A-Z ]+-----/g, "").replace(/\s+/g, "");
  const der = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const priv = await crypto.subtle.importKey(
    "pkcs8",
    der,
    { name: "ECDSA", namedCurve: "P-256" },
    true,
    ["sign"],
  );
  const { kty, crv, x, y } = await crypto.subtle.exportKey("jwk", priv);
  const pub = await crypto.subtle.importKey(
    "jwk",
    { kty, crv, x, y },
    { name: "ECDSA", namedCurve: "P-256" },
    true,
    ["verify"],
  );
  const spki = await crypto.subtle.exportKey("spki", pub);
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", spki));
  return btoa(String.fromCharCode(...digest));
}

Deno.test("generateDevCerts: CA is a critical CA:TRUE with keyCertSign and cRLSign", async () => {
  const { caCertPem } = await certs();
  const ca = new x509.X509Certificate(caCertPem);
  const bc = ca.getExtension(x509.BasicConstraintsExtension);
  assert.ok(bc);
  assert.equal(bc.ca, true);
  assert.equal(bc.critical, true);
  const ku = ca.getExtension(x509.KeyUsagesExtension);
  assert.ok(ku);
  assert.equal(ku.usages, x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign);
  assert.ok(ca.getExtension(x509.SubjectKeyIdentifierExtension));
  assert.equal(ca.subject, ca.issuer);
  assert.ok(await ca.verify({ publicKey: ca.publicKey, signatureOnly: true }));
});

Deno.test("generateDevCerts: leaf fields (CA:FALSE, usages, SANs, validity, key ids)", async () => {
  const { caCertPem, certPem, keyPem, caKeyPem } = await certs();
  const ca = new x509.X509Certificate(caCertPem);
  const leaf = new x509.X509Certificate(certPem);

  const bc = leaf.getExtension(x509.BasicConstraintsExtension);
  assert.ok(bc);
  assert.equal(bc.ca, false);
  const ku = leaf.getExtension(x509.KeyUsagesExtension);
  assert.equal(ku?.usages, x509.KeyUsageFlags.digitalSignature);
  const eku = leaf.getExtension(x509.ExtendedKeyUsageExtension);
  assert.deepEqual([...(eku?.usages ?? [])], [x509.ExtendedKeyUsage.serverAuth]);
  const san = leaf.getExtension(x509.SubjectAlternativeNameExtension);
  assert.ok(san);
  assert.deepEqual(san.names.toJSON(), [
    { type: "dns", value: "localhost" },
    { type: "ip", value: "127.0.0.1" },
    { type: "ip", value: "::1" },
  ]);

  // Issued by the CA, with matching key identifiers and a valid signature.
  assert.equal(leaf.issuer, ca.subject);
  const aki = leaf.getExtension(x509.AuthorityKeyIdentifierExtension);
  const caSki = ca.getExtension(x509.SubjectKeyIdentifierExtension);
  assert.ok(aki?.keyId && caSki?.keyId);
  assert.equal(aki.keyId, caSki.keyId);
  assert.ok(leaf.getExtension(x509.SubjectKeyIdentifierExtension));
  assert.ok(await leaf.verify({ publicKey: ca.publicKey, signatureOnly: true }));

  // Valid now, from about a day ago, for no more than 397 days.
  const now = Date.now();
  assert.ok(leaf.notBefore.getTime() <= now - DAY_MS + 60_000);
  assert.ok(leaf.notAfter.getTime() > now + (LEAF_VALIDITY_DAYS - 1) * DAY_MS);
  assert.ok(leaf.notAfter.getTime() - leaf.notBefore.getTime() <= 397 * DAY_MS);
  assert.equal(leaf.signatureAlgorithm.name, "ECDSA");

  assert.match(keyPem, /^-----BEGIN PRIVATE KEY-----\n/);
  assert.match(caKeyPem, /^-----BEGIN PRIVATE KEY-----\n/);
  assert.match(certPem, /^-----BEGIN CERTIFICATE-----\n[\s\S]+-----END CERTIFICATE-----\n$/);
});

Deno.test("generateDevCerts: spkiPin matches an independent computation", async () => {
  const { certPem, keyPem, spkiPin } = await certs();
  assert.equal(spkiPin, await pinFromPrivateKey(keyPem));
  const leaf = new x509.X509Certificate(certPem);
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", leaf.publicKey.rawData));
  assert.equal(spkiPin, btoa(String.fromCharCode(...digest)));
  assert.equal(atob(spkiPin).length, 32);
});

Deno.test("ensureDevCerts: writes files, reuses them, regenerates when expiring or forced", async () => {
  const root = await Deno.makeTempDir();
  try {
    const dir = `${root}/nested/certs`;
    const first = await ensureDevCerts(dir);
    assert.equal(first.created, true);
    assert.equal(first.caPath, `${dir}/ca.pem`);
    assert.equal(first.certPath, `${dir}/cert.pem`);
    assert.equal(first.keyPath, `${dir}/key.pem`);
    assert.equal((await Deno.stat(first.keyPath)).mode! & 0o777, 0o600);
    assert.equal((await Deno.stat(`${dir}/ca-key.pem`)).mode! & 0o777, 0o600);
    const chain = await Deno.readTextFile(first.certPath);
    assert.equal(chain.match(/BEGIN CERTIFICATE/g)?.length, 2);
    assert.ok(chain.endsWith(await Deno.readTextFile(first.caPath)));
    assert.equal(first.spkiPin, await pinFromPrivateKey(await Deno.readTextFile(first.keyPath)));

    const again = await ensureDevCerts(dir);
    assert.equal(again.created, false);
    assert.equal(again.spkiPin, first.spkiPin);

    // Less than a day of validity left: regenerate.
    const leaf = new x509.X509Certificate(chain.split(/(?<=-----END CERTIFICATE-----\n)/)[0]);
    const late = await ensureDevCerts(dir, { now: () => leaf.notAfter.getTime() - DAY_MS / 2 });
    assert.equal(late.created, true);
    assert.notEqual(late.spkiPin, first.spkiPin);

    const forced = await ensureDevCerts(dir, { force: true });
    assert.equal(forced.created, true);
    assert.notEqual(forced.spkiPin, late.spkiPin);

    // A missing file also means regenerate.
    await Deno.remove(`${dir}/ca-key.pem`);
    assert.equal((await ensureDevCerts(dir)).created, true);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("certs CLI: --dir and --force, prints paths and the SPKI pin", async () => {
  const root = await Deno.makeTempDir();
  try {
    const out: string[] = [];
    assert.equal(await main(["--dir", root], (l) => out.push(l)), 0);
    const text = out.join("\n");
    const pin = (await ensureDevCerts(root)).spkiPin;
    assert.ok(text.includes(`SPKI pin (sha256/base64): ${pin}`));
    assert.ok(text.includes(`--ignore-certificate-errors-spki-list=${pin}`));
    assert.ok(text.includes(`${root}/cert.pem`));
    assert.match(text, /^Created/);

    out.length = 0;
    assert.equal(await main(["--dir", root], (l) => out.push(l)), 0);
    assert.match(out[0], /^Reusing/);
    out.length = 0;
    assert.equal(await main(["--dir", root, "--force"], (l) => out.push(l)), 0);
    assert.match(out[0], /^Created/);
    assert.equal(await main(["--bogus"], () => {}), 2);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

/** A QUIC listener on 127.0.0.1 that accepts every connection. */
function startServer(c: DevCerts) {
  const endpoint = new Deno.QuicEndpoint({ hostname: "127.0.0.1", port: 0 });
  const listener = endpoint.listen({
    cert: c.certPem + c.caCertPem,
    key: c.keyPem,
    alpnProtocols: ["h3"],
  });
  const conns: Deno.QuicConn[] = [];
  let onConn: ((conn: Deno.QuicConn) => void) | undefined;
  const loop = (async () => {
    try {
      for await (const incoming of listener) {
        try {
          // Accept first: reading remoteAddr before accept() consumes the incoming.
          const conn = await incoming.accept();
          conns.push(conn);
          conn.closed.catch(() => {});
          onConn?.(conn);
        } catch {
          // a client that failed its handshake
        }
      }
    } catch {
      // listener closed
    }
  })();
  return {
    port: endpoint.addr.port,
    conns,
    /** Resolves with the next accepted connection. */
    nextConn(): Promise<Deno.QuicConn> {
      return new Promise((resolve) => (onConn = resolve));
    },
    async close(): Promise<void> {
      for (const conn of conns) {
        try {
          conn.close({ closeCode: 0, reason: "" });
        } catch { /* already closed */ }
      }
      listener.stop();
      endpoint.close();
      await loop;
    },
  };
}

Deno.test("QUIC: Deno.connectQuic verifies the leaf against the CA and completes the handshake", async () => {
  const c = await certs();
  const server = startServer(c);
  try {
    const accepted = server.nextConn();
    const conn = await withTimeout(
      Promise.resolve(Deno.connectQuic({
        hostname: "127.0.0.1",
        port: server.port,
        alpnProtocols: ["h3"],
        caCerts: [c.caCertPem],
        serverName: "localhost",
      })),
      10_000,
      "connectQuic",
    );
    await withTimeout(conn.handshake, 10_000, "client handshake");
    assert.equal(conn.protocol, "h3");
    const serverConn = await withTimeout(accepted, 10_000, "server accept");
    await withTimeout(serverConn.handshake, 10_000, "server handshake");
    assert.equal(serverConn.protocol, "h3");
    assert.equal(serverConn.serverName, "localhost");
    conn.close({ closeCode: 0, reason: "done" });
    await withTimeout(conn.closed, 10_000, "client close");
  } finally {
    await server.close();
  }
});

Deno.test("QUIC: the handshake fails without the CA or for a name not in the SANs", async () => {
  const c = await certs();
  const server = startServer(c);
  try {
    const attempt = async (opts: { caCerts?: string[]; serverName: string }) => {
      const conn = await Deno.connectQuic({
        hostname: "127.0.0.1",
        port: server.port,
        alpnProtocols: ["h3"],
        ...opts,
      });
      await conn.handshake;
      conn.close({ closeCode: 0, reason: "" });
    };
    await assert.rejects(
      withTimeout(attempt({ serverName: "localhost" }), 10_000, "no CA"),
      /UnknownIssuer/,
    );
    await assert.rejects(
      withTimeout(attempt({ caCerts: [c.caCertPem], serverName: "example.com" }), 10_000, "SAN"),
      /not valid for name/,
    );
  } finally {
    await server.close();
  }
});

Deno.test({
  ...needs("QUIC: gtlsclient (ngtcp2 + GnuTLS) completes a handshake with ALPN h3", "gtlsclient"),
}, async () => {
  // gtlsclient has no option to trust a CA file and does not verify the
  // server's chain (it loads the system trust store but never checks the peer),
  // so this proves interoperability of the certificate and key with an
  // independent TLS stack; chain verification is covered by the rustls test
  // above and the openssl test below.
  const c = await certs();
  const server = startServer(c);
  const accepted = server.nextConn();
  const child = new Deno.Command("gtlsclient", {
    args: [
      "--no-quic-dump",
      "--no-http-dump",
      "--exit-on-all-streams-close",
      "--handshake-timeout=5s",
      "--timeout=5s",
      "--sni=localhost",
      "127.0.0.1",
      String(server.port),
    ],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const killer = setTimeout(() => {
    try {
      child.kill("SIGKILL");
    } catch { /* exited */ }
  }, 15_000);
  try {
    const serverConn = await withTimeout(accepted, 10_000, "server accept");
    await withTimeout(serverConn.handshake, 10_000, "server handshake");
    assert.equal(serverConn.protocol, "h3");
    // Let the client see the end of the connection and exit.
    serverConn.close({ closeCode: 0, reason: "bye" });
    const out = await child.output();
    const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    assert.match(text, /QUIC handshake has completed/);
    assert.match(text, /Negotiated ALPN is h3/);
    assert.doesNotMatch(text, /handshake.*(failed|error)|alert/i);
  } finally {
    clearTimeout(killer);
    try {
      child.kill("SIGKILL");
    } catch { /* exited */ }
    await child.status;
    await server.close();
  }
});

Deno.test({
  ...needs(
    "openssl verify: leaf chains to the CA for serverAuth, localhost, 127.0.0.1 and ::1",
    "openssl",
  ),
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      const files = await ensureDevCerts(dir);
      const leafPath = `${dir}/leaf.pem`;
      await Deno.writeTextFile(leafPath, (await certs()).certPem);
      for (
        const check of [["-verify_hostname", "localhost"], ["-verify_ip", "127.0.0.1"], [
          "-verify_ip",
          "::1",
        ]]
      ) {
        const out = await new Deno.Command("openssl", {
          args: [
            "verify",
            "-x509_strict",
            "-purpose",
            "sslserver",
            ...check,
            "-CAfile",
            files.caPath,
            files.certPath,
          ],
        }).output();
        const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
        assert.ok(out.success, `${check.join(" ")}: ${text}`);
      }
      // Wrong CA: a leaf from another generation must not verify.
      const wrong = await new Deno.Command("openssl", {
        args: ["verify", "-CAfile", files.caPath, leafPath],
      }).output();
      assert.equal(wrong.success, false);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
