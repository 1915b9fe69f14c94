/**
 * Issue #21.7: the "Your own certificate" recipe of docs/getting-started.md, run as printed,
 * gives a pair the proxy serves and that curl (TCP fallback) and
 * examples/h3_client.ts (HTTP/3) both accept; and, as the page says, a
 * one-step self-signed certificate (CA:TRUE by OpenSSL's defaults) is
 * refused by h3_client with CaUsedAsEndEntity.
 */
import assert from "node:assert/strict";
import { startBackend } from "../support/backend.ts";
import { startProxy } from "../support/proxy_process.ts";
import { shell } from "../support/shell.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

/** The shell block after the `own-certificate` marker of docs/getting-started.md. */
async function recipe(): Promise<string> {
  const page = await Deno.readTextFile(`${ROOT}docs/getting-started.md`);
  const at = page.indexOf("<!-- own-certificate");
  assert.ok(at >= 0, "docs/getting-started.md lost its own-certificate block");
  const m = /```sh\n([\s\S]*?)```/.exec(page.slice(at));
  assert.ok(m);
  return m[1];
}

Deno.test("docs' own certificate: the proxy serves it; curl and h3_client accept it", async () => {
  const dir = await Deno.makeTempDir({ prefix: "spooky-own-cert-" });
  const be = startBackend("b");
  try {
    const made = await shell(`set -e\n${await recipe()}`, dir);
    assert.equal(made.code, 0, made.stderr);
    const proxy = await startProxy(`version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tcp_fallback: true, tls: {cert: "${dir}/cert.pem", key: "${dir}/key.pem"}}
upstream:
  root: {route: {path_prefix: /}, backends: [{id: b0, address: "${be.address}"}]}
`);
    try {
      const url = `https://localhost:${proxy.port}/hello`;
      const curl = await shell(
        `curl -s -o /dev/null -w '%{http_code}' --cacert ca.pem --resolve localhost:${proxy.port}:127.0.0.1 ${url}`,
        dir,
      );
      assert.equal(curl.stdout, "200", curl.stderr);
      const h3 = await shell(
        `'${Deno.execPath()}' run -A '${ROOT}examples/h3_client.ts' -i --ca ca.pem ${url}`,
        dir,
      );
      assert.equal(h3.code, 0, h3.stderr);
      assert.match(h3.stdout, /^HTTP\/3 200/m);
    } finally {
      assert.equal(await proxy.stop(), 0);
    }

    // The one-step self-signed certificate the page warns about.
    const self = await shell(
      `openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 ` +
        `-subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 ` +
        `-keyout self-key.pem -out self.pem`,
      dir,
    );
    assert.equal(self.code, 0, self.stderr);
    const selfProxy = await startProxy(`version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tls: {cert: "${dir}/self.pem", key: "${dir}/self-key.pem"}}
upstream:
  root: {route: {path_prefix: /}, backends: [{id: b0, address: "${be.address}"}]}
`);
    try {
      const h3 = await shell(
        `'${Deno.execPath()}' run -A '${ROOT}examples/h3_client.ts' --ca self.pem ` +
          `https://localhost:${selfProxy.port}/`,
        dir,
      );
      assert.notEqual(h3.code, 0);
      assert.match(h3.stdout + h3.stderr, /CaUsedAsEndEntity/);
    } finally {
      assert.equal(await selfProxy.stop(), 0);
    }
  } finally {
    await be.close();
    await Deno.remove(dir, { recursive: true });
  }
});
