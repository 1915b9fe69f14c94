/**
 * #31.4: client certificates to backends, end to end behind the real
 * proxy: nginx with `ssl_verify_client on` (HTTP/1.1) and Caddy with
 * `client_auth require_and_verify` (HTTP/2). Without `tls.cert` each
 * backend refuses (nginx answers 400, Caddy ends the handshake: 502), with
 * it 200 and the backend names the certificate it was shown; health probes
 * present it too; a renewed pair applies on SIGHUP (new connections
 * present it); a pair that does not match is refused on reload, naming
 * `tls.key`, and the pair in effect keeps serving. The client certificates
 * are made by `openssl`, signed by the tests' CA.
 */
import assert from "node:assert/strict";
import { startNginx } from "../interop/_h1_servers.ts";
import { runCaddy, type Server } from "../interop/_servers.ts";
import { getHead } from "../support/faults.ts";
import { H3TestClient } from "../support/h3_client.ts";
import { adminReload, startProxy, testCerts } from "../support/proxy_process.ts";
import { pollUntil } from "../support/wait.ts";

/** Makes `<name>.pem` and `<name>-key.pem` in `dir`: a client certificate for `cn` signed by the test CA. */
async function clientCertificate(dir: string, name: string, cn: string): Promise<void> {
  const certs = await testCerts();
  const caKey = `${certs.caPath.slice(0, certs.caPath.lastIndexOf("/"))}/ca-key.pem`;
  const run = async (args: string[]) => {
    const out = await new Deno.Command("openssl", { args, cwd: dir, stderr: "piped" }).output();
    assert.ok(out.success, new TextDecoder().decode(out.stderr));
  };
  await Deno.writeTextFile(`${dir}/client.ext`, "extendedKeyUsage=clientAuth\n");
  await run([
    "req",
    "-new",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-nodes",
    "-subj",
    `/CN=${cn}`,
    "-keyout",
    `${name}-key.pem`,
    "-out",
    `${name}.csr`,
  ]);
  await run([
    "x509",
    "-req",
    "-in",
    `${name}.csr`,
    "-CA",
    certs.caPath,
    "-CAkey",
    caKey,
    "-CAcreateserial",
    "-days",
    "2",
    "-extfile",
    "client.ext",
    "-out",
    `${name}.pem`,
  ]);
}

/** Caddy over TLS (HTTP/2) requiring a client certificate of the test CA; `…/whoami` answers its subject. */
async function startCaddyMutualTls(): Promise<Server> {
  const certs = await testCerts();
  return await runCaddy(
    // Probes name the address, requests localhost; SNI is localhost for both.
    "strict_sni_host insecure_off",
    (port) =>
      `https://:${port} {
  bind 127.0.0.1
  tls ${certs.certPath} ${certs.keyPath} {
    client_auth {
      mode require_and_verify
      trusted_ca_cert_file ${certs.caPath}
    }
  }
  @whoami path */whoami
  respond @whoami "{http.request.tls.client.subject}" 200
  respond "ok" 200
}
`,
  );
}

Deno.test("#31.4: backend mTLS: nginx and Caddy requiring a client certificate refuse without tls.cert, answer with it; renewed on SIGHUP", async () => {
  const certs = await testCerts();
  const dir = await Deno.makeTempDir({ prefix: "spooky-mtls-" });
  await clientCertificate(dir, "one", "spooky-client-1");
  await clientCertificate(dir, "two", "spooky-client-2");
  await Deno.copyFile(`${dir}/one.pem`, `${dir}/client.pem`);
  await Deno.copyFile(`${dir}/one-key.pem`, `${dir}/client-key.pem`);
  const nginx = await startNginx({
    cert: certs.certPath,
    key: certs.keyPath,
    clientCa: certs.caPath,
  });
  const caddy = await startCaddyMutualTls();
  const tls = (pair: boolean) =>
    `{ca: "${certs.caPath}", server_name: localhost${
      pair ? `, cert: ${dir}/client.pem, key: ${dir}/client-key.pem` : ""
    }}`;
  const probe = "health_check: {interval: 200, failure_threshold: 1, success_threshold: 1}";
  const proxy = await startProxy(`version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tls: {cert: "{{cert}}", key: "{{key}}"}}
upstream:
  h2:
    route: {path_prefix: /h2/}
    backends: [{id: h2, address: "${caddy.address}", tls: ${tls(true)}}]
  h1:
    route: {path_prefix: /h1/}
    backends: [{id: h1, address: "${nginx.address}", protocol: http1, tls: ${tls(true)}}]
  nocert-h2:
    route: {path_prefix: /nocert-h2/}
    backends: [{id: nocert-h2, address: "${caddy.address}", tls: ${tls(false)}}]
  nocert-h1:
    route: {path_prefix: /nocert-h1/}
    backends: [{id: nocert-h1, address: "${nginx.address}", protocol: http1, tls: ${tls(false)}}]
  probed:
    route: {path_prefix: /probed/}
    backends:
      - {id: probed-cert, address: "${caddy.address}", tls: ${tls(true)}, ${probe}}
      - {id: probed-nocert, address: "${caddy.address}", tls: ${tls(false)}, ${probe}}
admin: {port: 0}
`);
  const client = await H3TestClient.connect(proxy.port, await Deno.readTextFile(certs.caPath));
  const get = async (path: string) => {
    const r = await client.request({ head: getHead(path, proxy.port) });
    return { status: r.status, body: new TextDecoder().decode(r.body) };
  };
  try {
    // The same requests, but for the certificate: refused (Caddy ends the
    // handshake, nginx answers why).
    const handshakeRefused = await getWhoami(get, "nocert-h2");
    assert.equal(handshakeRefused.status, 502, handshakeRefused.body);
    const refused = await getWhoami(get, "nocert-h1");
    assert.equal(refused.status, 400, refused.body);
    assert.match(refused.body, /No required SSL certificate was sent/);
    assert.deepEqual(await getWhoami(get, "h2"), { status: 200, body: "CN=spooky-client-1" });
    assert.deepEqual(await getWhoami(get, "h1"), { status: 200, body: "CN=spooky-client-1" });

    // Probes present the certificate too: only the backend without one fails them.
    const health = async () =>
      (await (await fetch(`http://127.0.0.1:${proxy.adminPort}/health`)).json()).backends;
    await pollUntil(async () => (await health())["probed-nocert"] === "unhealthy");
    assert.deepEqual(
      [(await health())["probed-cert"], (await health())["probed-nocert"]],
      ["healthy", "unhealthy"],
    );

    // A renewed pair in place, then SIGHUP: new connections present it.
    await Deno.copyFile(`${dir}/two.pem`, `${dir}/client.pem`);
    await Deno.copyFile(`${dir}/two-key.pem`, `${dir}/client-key.pem`);
    const reloads = () => proxy.stderr.filter((l) => l.includes("configuration reloaded")).length;
    Deno.kill(proxy.pid, "SIGHUP");
    await pollUntil(() => reloads() === 1);
    assert.deepEqual(await getWhoami(get, "h2"), { status: 200, body: "CN=spooky-client-2" });
    assert.deepEqual(await getWhoami(get, "h1"), { status: 200, body: "CN=spooky-client-2" });

    // A key that is not the certificate's is refused; the pair in effect serves on.
    await Deno.copyFile(`${dir}/one-key.pem`, `${dir}/client-key.pem`);
    const rejected = await fetch(`http://127.0.0.1:${proxy.adminPort}/admin/reload`, {
      method: "POST",
    });
    assert.equal(rejected.status, 400);
    const errors: string[] = (await rejected.json()).errors;
    assert.ok(
      errors.includes("upstream.h2.backends[0].tls.key (line 6): does not match tls.cert"),
      errors.join("\n"),
    );
    assert.deepEqual(await getWhoami(get, "h2"), { status: 200, body: "CN=spooky-client-2" });
    await Deno.copyFile(`${dir}/two-key.pem`, `${dir}/client-key.pem`);
    assert.deepEqual(await adminReload(proxy.adminPort!), { reloaded: true, restart_required: [] });
    const output = [...proxy.stdout, ...proxy.stderr].join("\n");
    const keyBody = (await Deno.readTextFile(`${dir}/two-key.pem`)).split("\n")[1];
    assert.ok(!output.includes(keyBody), "the client key never appears in the output");
  } finally {
    await client.close();
    assert.equal(await proxy.stop(), 0);
    await nginx.close();
    await caddy.close();
    await Deno.remove(dir, { recursive: true });
  }
});

/** `GET /<pool>/whoami`: the subject of the client certificate nginx was shown, through `pool`. */
async function getWhoami(
  get: (path: string) => Promise<{ status: number; body: string }>,
  pool: string,
): Promise<{ status: number; body: string }> {
  return await get(`/${pool}/whoami`);
}
