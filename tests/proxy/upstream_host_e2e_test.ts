/**
 * #29.3: a pool's `headers` rewriting against a real Caddy that serves its
 * site only for the name `site.internal` (any other host gets Caddy's empty
 * `200`). Without `headers.request.set.host` the proxy gets the empty 200
 * (the trap: the health probes pass too); reloaded with it, the site, and
 * the probes ask for `site.internal` as well (Caddy's access log shows the
 * host of every request). Response rules apply too.
 */
import assert from "node:assert/strict";
import { getHead } from "../support/faults.ts";
import { H3TestClient } from "../support/h3_client.ts";
import { startProxy, testCerts } from "../support/proxy_process.ts";
import { pollUntil } from "../support/wait.ts";
import { runCaddy } from "../interop/_servers.ts";

/** Caddy over h2c with one site, `http://site.internal:<port>`, logging its requests (JSON, stderr). */
async function startNamedSiteCaddy(): Promise<
  { address: string; log: string[]; close: () => Promise<void> }
> {
  const caddy = await runCaddy(
    "protocols h1 h2c",
    (port) =>
      `http://site.internal:${port} {
  bind 127.0.0.1
  log {
    format json
  }
  respond "hello from site"
}
`,
  );
  const log: string[] = [];
  const reading = (async () => {
    const text = caddy.child.stderr.pipeThrough(new TextDecoderStream()).pipeThrough(lines());
    for await (const line of text) log.push(line);
  })();
  return {
    address: caddy.address,
    log,
    close: async () => {
      await caddy.close();
      await reading;
    },
  };
}

/** Splits text into lines. */
function lines(): TransformStream<string, string> {
  let rest = "";
  return new TransformStream({
    transform(chunk, out) {
      const parts = (rest + chunk).split("\n");
      rest = parts.pop()!;
      for (const p of parts) out.enqueue(p);
    },
    flush(out) {
      if (rest) out.enqueue(rest);
    },
  });
}

/** The `[host, uri]` of each request Caddy logged for the site (its access log). */
function siteRequests(log: readonly string[]): Array<[string, string]> {
  return log.filter((l) => l.includes('"http.log.access')).map((l) => JSON.parse(l))
    .map((e) => [e.request.host, e.request.uri]);
}

Deno.test("#29.3: set.host reaches a Caddy site served only for its name; probes send it too; applied on reload", async () => {
  const caddy = await startNamedSiteCaddy();
  const certs = await testCerts();
  const config = (headers: string) =>
    `version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tls: {cert: "${certs.certPath}", key: "${certs.keyPath}"}}
upstream:
  site:
    route: {path_prefix: /}
    backends:
      - id: caddy
        address: "${caddy.address}"
        health_check: {path: /health, interval: 200, timeout_ms: 2000}
${headers}
admin: {port: 0}
`;
  const proxy = await startProxy(config(""));
  const client = await H3TestClient.connect(proxy.port, await Deno.readTextFile(certs.caPath));
  const get = (path: string) => client.request({ head: getHead(path, proxy.port) });
  try {
    // The trap: without set.host, an empty 200 (and the probes pass).
    const empty = await get("/");
    assert.equal(empty.status, 200);
    assert.equal(new TextDecoder().decode(empty.body), "");
    await pollUntil(() => siteRequests(caddy.log).some(([, uri]) => uri === "/health"));
    const before = siteRequests(caddy.log);
    assert.ok(before.some(([h, u]) => h === `localhost:${proxy.port}` && u === "/"), `${before}`);
    assert.ok(before.some(([h, u]) => h === caddy.address && u === "/health"), `${before}`);

    await Deno.writeTextFile(
      proxy.configPath,
      config(`    headers:
      request: {set: {host: site.internal}}
      response: {set: {X-Served-By: spooky-test}, remove: [server]}`),
    );
    const res = await fetch(`http://127.0.0.1:${proxy.adminPort}/admin/reload`, {
      method: "POST",
    });
    assert.deepEqual(await res.json(), { reloaded: true, restart_required: [] });

    const site = await get("/page");
    assert.equal(site.status, 200);
    assert.equal(new TextDecoder().decode(site.body), "hello from site");
    const fields = new Map(site.headers);
    assert.equal(fields.get("x-served-by"), "spooky-test");
    assert.equal(fields.has("server"), false, "Caddy's server field removed");

    // The request and the probes of the new generation ask for the site.
    const named = ([h, u]: [string, string]) => h === "site.internal" && u === "/health";
    await pollUntil(() => siteRequests(caddy.log).some(named));
    const after = siteRequests(caddy.log);
    assert.ok(after.some(([h, u]) => h === "site.internal" && u === "/page"), `${after}`);
    assert.ok(after.some(named), `${after}`);
  } finally {
    await client.close();
    assert.equal(await proxy.stop(), 0);
    await caddy.close();
  }
});
