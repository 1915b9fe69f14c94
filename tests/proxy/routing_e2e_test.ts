/**
 * Issue #30.4: routing on methods and headers, end to end: a real proxy
 * process and real backends, over HTTP/3 (the project's client) and over
 * the TCP fallback (curl, HTTP/2 and HTTP/1.1). Writes and reads of one
 * prefix go to different pools, a header sends a request to a canary, a
 * prefix matches on a segment boundary, and a request that matched
 * everything but its method is answered 405 with `Allow` without reaching
 * a backend.
 */
import assert from "node:assert/strict";
import { startBackend, type TestBackend } from "../support/backend.ts";
import { curlLocal } from "../support/curl.ts";
import { H3TestClient } from "../support/h3_client.ts";
import { startProxy, testCerts } from "../support/proxy_process.ts";
import { needs } from "../support/tools.ts";

/** A backend answering its own name; `methods` records what it was asked. */
function named(name: string): TestBackend & { methods: string[] } {
  const methods: string[] = [];
  const backend = startBackend(name, (req) => {
    methods.push(req.method);
    return new Response(name);
  });
  return Object.assign(backend, { methods });
}

Deno.test({
  ...needs(
    "#30.4: routing: methods, headers, segment-boundary prefixes and 405 over HTTP/3 and the TCP fallback",
    "curl",
  ),
  fn: async () => {
    const reads = named("reads");
    const writes = named("writes");
    const canary = named("canary");
    const assets = named("assets");
    const certs = await testCerts();
    const proxy = await startProxy(`version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tcp_fallback: true, tls: {cert: "${certs.certPath}", key: "${certs.keyPath}"}}
upstream:
  reads:
    route: {path_prefix: /api, methods: [GET, HEAD]}
    backends: [{id: r, address: "${reads.address}"}]
  writes:
    route: {path_prefix: /api, methods: [POST, PUT]}
    backends: [{id: w, address: "${writes.address}"}]
  canary:
    route: {path_prefix: /api, methods: [GET], headers: {x-canary: "1"}}
    backends: [{id: c, address: "${canary.address}"}]
  assets:
    route: {path_prefix: /static}
    backends: [{id: s, address: "${assets.address}"}]
`);
    const client = await H3TestClient.connect(proxy.port, await Deno.readTextFile(certs.caPath));
    const h3 = async (method: string, path: string, fields: Array<[string, string]> = []) => {
      const res = await client.request({
        head: [
          [":method", method],
          [":scheme", "https"],
          [":authority", `localhost:${proxy.port}`],
          [":path", path],
          ...fields,
        ],
        ...(method === "POST" || method === "PUT" ? { body: new Uint8Array([1]) } : {}),
      });
      const allow = res.headers.find(([n]) => n === "allow")?.[1];
      return `${res.status} ${new TextDecoder().decode(res.body)}${allow ? ` allow=${allow}` : ""}`;
    };
    try {
      assert.equal(await h3("GET", "/api/users"), "200 reads");
      assert.equal(await h3("POST", "/api/users"), "200 writes");
      assert.equal(await h3("GET", "/api/users", [["x-canary", "1"]]), "200 canary");
      assert.equal(await h3("POST", "/api/users", [["x-canary", "1"]]), "200 writes");
      assert.equal(await h3("GET", "/static/app.js?v=2"), "200 assets");
      assert.equal(await h3("GET", "/static"), "200 assets");
      assert.match(await h3("GET", "/staticx"), /^404 /);
      assert.match(await h3("GET", "/apiary"), /^404 /);
      const refused = await h3("DELETE", "/api/users/7");
      assert.match(refused, /^405 \{"error":"method_not_allowed"/);
      assert.match(refused, / allow=GET, HEAD, POST, PUT$/);
      for (const b of [reads, writes, canary]) {
        assert.ok(!b.methods.includes("DELETE"), "a 405 reaches no backend");
      }

      // The TCP fallback routes the same way (curl: HTTP/2, then HTTP/1.1).
      const curl = async (args: string[]) => {
        const r = await curlLocal(proxy.port, [
          "-s",
          "--cacert",
          certs.caPath,
          "-w",
          " %{http_code}",
          ...args,
        ]);
        return r.stdout;
      };
      const base = `https://localhost:${proxy.port}`;
      assert.equal(await curl(["--http2", "-H", "x-canary: 1", `${base}/api/x`]), "canary 200");
      assert.equal(
        await curl(["--http1.1", "-X", "PUT", "-d", "x", `${base}/api/x`]),
        "writes 200",
      );
      const h1 = await curlLocal(proxy.port, [
        "-s",
        "-i",
        "--http1.1",
        "--cacert",
        certs.caPath,
        "-X",
        "PATCH",
        `${base}/api/x`,
      ]);
      assert.match(h1.stdout, /^HTTP\/1\.1 405/);
      assert.match(h1.stdout, /^allow: GET, HEAD, POST, PUT\r$/im);
    } finally {
      await client.close();
      await proxy.stop();
      await Promise.all([reads, writes, canary, assets].map((b) => b.close()));
    }
  },
});
