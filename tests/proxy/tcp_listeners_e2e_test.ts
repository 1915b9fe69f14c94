/**
 * The proxy's listeners end to end, on a real process (issue #21, items 3
 * and 4):
 *
 * - a port in use, for each listener in turn (HTTP/3, TCP fallback, admin):
 *   one line naming the listener, its address and the configuration keys,
 *   nothing about `os error 98` and exit code 1;
 * - certificate renewal: after the files are rewritten and the proxy is
 *   reloaded (`POST /admin/reload`, then SIGHUP), new connections on both
 *   the TCP fallback (fingerprint read with `openssl s_client`) and HTTP/3
 *   (a client that trusts only the new CA) get the new certificate, nothing
 *   is listed as needing a restart, and a connection opened before keeps
 *   being served.
 *
 * @module
 */
import assert from "node:assert/strict";
import { generateDevCerts } from "../../shared/certs/generate.ts";
import { startBackend } from "../support/backend.ts";
import { freePort } from "../support/free_port.ts";
import { H3TestClient } from "../support/h3_client.ts";
import { runCli, startProxy, testCerts, writeConfig } from "../support/proxy_process.ts";
import { sleep } from "../support/wait.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

function yaml(opts: { port: number; fallback: boolean; admin?: number }): string {
  return `version: 1
listen: {protocol: http3, address: 127.0.0.1, port: ${opts.port}, tcp_fallback: ${opts.fallback}, tls: {cert: "{{cert}}", key: "{{key}}"}}
${opts.admin === undefined ? "" : `admin: {address: 127.0.0.1, port: ${opts.admin}}`}
upstream:
  api: {route: {path_prefix: /}, backends: [{id: a, address: "127.0.0.1:1"}]}
`;
}

for (
  const c of [
    { listener: "HTTP/3 listener", keys: "listen.address, listen.port", occupy: "udp" },
    { listener: "TCP fallback", keys: "listen.address, listen.port", occupy: "tcp-main" },
    { listener: "admin listener", keys: "admin.address, admin.port", occupy: "tcp-admin" },
  ] as const
) {
  Deno.test(`startup: a port in use by the ${c.listener} is one line naming it, its address and keys; exit 1`, async () => {
    const port = freePort();
    const adminPort = freePort();
    const taken = c.occupy === "udp"
      ? Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port })
      : Deno.listen({ hostname: "127.0.0.1", port: c.occupy === "tcp-main" ? port : adminPort });
    const path = await writeConfig(yaml({ port, fallback: true, admin: adminPort }));
    try {
      const out = await runCli(["-c", path]);
      assert.equal(out.code, 1, out.stdout + out.stderr);
      const all = (out.stdout + out.stderr).split("\n");
      const inUse = all.filter((l) => /in use|AddrInUse|os error 98/i.test(l));
      const at = c.occupy === "tcp-admin" ? adminPort : port;
      assert.deepEqual(inUse, [
        `Error: cannot start the ${c.listener} on 127.0.0.1:${at} (${c.keys}): ` +
        "the address is already in use",
      ]);
      assert.ok(!/os error|AddrInUse|at .*\.ts:\d+/.test(out.stdout + out.stderr), out.stderr);
    } finally {
      taken.close();
      await Deno.remove(path.slice(0, path.lastIndexOf("/")), { recursive: true });
    }
  });
}

/** SHA-256 fingerprint of the certificate `openssl s_client` is served on `port`. */
async function fallbackFingerprint(port: number): Promise<string> {
  const out = await new Deno.Command("bash", {
    args: [
      "-c",
      `openssl s_client -connect 127.0.0.1:${port} -servername localhost </dev/null 2>/dev/null` +
      " | openssl x509 -noout -fingerprint -sha256",
    ],
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(20_000),
  }).output();
  const text = dec.decode(out.stdout).trim();
  assert.match(text, /Fingerprint=/i, dec.decode(out.stderr));
  return text.split("=")[1];
}

/** SHA-256 fingerprint of a PEM certificate file, as openssl prints it. */
async function fileFingerprint(path: string): Promise<string> {
  const out = await new Deno.Command("openssl", {
    args: ["x509", "-noout", "-fingerprint", "-sha256", "-in", path],
    stdout: "piped",
  }).output();
  return dec.decode(out.stdout).trim().split("=")[1];
}

/** Whether a new HTTP/3 connection trusting only `ca` is served. */
async function h3Trusts(port: number, ca: string): Promise<boolean> {
  let client: H3TestClient | undefined;
  try {
    client = await H3TestClient.connect(port, ca);
    const r = await client.request({
      head: [[":method", "GET"], [":scheme", "https"], [":authority", "localhost"], [
        ":path",
        "/",
      ]],
    });
    return r.status === 200;
  } catch {
    return false;
  } finally {
    await client?.close().catch(() => {});
  }
}

async function tlsGet(conn: Deno.Conn): Promise<string> {
  await conn.write(enc.encode("GET / HTTP/1.1\r\nhost: localhost\r\n\r\n"));
  const buf = new Uint8Array(16 * 1024);
  const n = await conn.read(buf);
  assert.ok(n !== null, "closed before an answer");
  return dec.decode(buf.subarray(0, n)).split("\r\n")[0];
}

Deno.test("reload: a renewed certificate serves new TCP fallback and HTTP/3 connections; open ones keep theirs", async () => {
  const a = await testCerts();
  const caA = await Deno.readTextFile(a.caPath);
  const b = await generateDevCerts(); // another CA
  const c = await generateDevCerts();
  const dir = await Deno.makeTempDir({ prefix: "spooky-tcp-renew-" });
  await Deno.copyFile(a.certPath, `${dir}/cert.pem`);
  await Deno.copyFile(a.keyPath, `${dir}/key.pem`);
  for (const [name, pem] of [["b", b.certPem], ["c", c.certPem]]) {
    await Deno.writeTextFile(`${dir}/${name}.pem`, pem);
  }
  const backend = startBackend("a");
  const proxy = await startProxy(`version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tcp_fallback: true, tls: {cert: "${dir}/cert.pem", key: "${dir}/key.pem"}}
admin: {address: 127.0.0.1, port: 0}
upstream:
  api: {route: {path_prefix: /}, backends: [{id: a, address: "${backend.address}"}]}
`);
  const before = await Deno.connectTls({
    hostname: "localhost",
    port: proxy.port,
    caCerts: [caA],
    alpnProtocols: ["http/1.1"],
  });
  try {
    const fpA = await fileFingerprint(a.certPath);
    assert.equal(await fallbackFingerprint(proxy.port), fpA);
    assert.equal(await tlsGet(before), "HTTP/1.1 200 OK");
    assert.equal(await h3Trusts(proxy.port, caA), true);

    // Renewed in place, then POST /admin/reload.
    await Deno.writeTextFile(`${dir}/cert.pem`, b.certPem);
    await Deno.writeTextFile(`${dir}/key.pem`, b.keyPem);
    const res = await fetch(`http://127.0.0.1:${proxy.adminPort}/admin/reload`, {
      method: "POST",
    });
    const body = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.deepEqual(body.restart_required, []);
    assert.equal(await fallbackFingerprint(proxy.port), await fileFingerprint(`${dir}/b.pem`));
    assert.equal(await h3Trusts(proxy.port, b.caCertPem), true, "HTTP/3 serves the new pair");
    assert.equal(await h3Trusts(proxy.port, caA), false, "HTTP/3 no longer serves the old pair");
    const client = Deno.createHttpClient({ caCerts: [b.caCertPem] });
    const viaFallback = await fetch(`https://localhost:${proxy.port}/`, { client });
    assert.equal(viaFallback.status, 200, "a client trusting only the new CA is served over TCP");
    await viaFallback.body?.cancel();
    client.close();
    // The TCP connection opened before the reload keeps its certificate and is served.
    assert.equal(await tlsGet(before), "HTTP/1.1 200 OK");

    // Once more, by SIGHUP.
    await Deno.writeTextFile(`${dir}/cert.pem`, c.certPem);
    await Deno.writeTextFile(`${dir}/key.pem`, c.keyPem);
    Deno.kill(proxy.pid, "SIGHUP");
    const fpC = await fileFingerprint(`${dir}/c.pem`);
    let seen = "";
    for (let i = 0; i < 100 && seen !== fpC; i++) {
      await sleep(100);
      seen = await fallbackFingerprint(proxy.port);
    }
    assert.equal(seen, fpC, "SIGHUP: the TCP fallback serves the third pair");
    assert.equal(await h3Trusts(proxy.port, c.caCertPem), true, "SIGHUP: HTTP/3 too");
  } finally {
    before.close();
    assert.equal(await proxy.stop(), 0, proxy.stderr.join("\n"));
    await backend.close();
    await Deno.remove(dir, { recursive: true });
  }
});
