/**
 * Reports the proxy's startup time (issue #21.6) once per test run: launch to
 * `Listening on` and to the first request served over HTTP/3. Only that it
 * starts and serves is asserted; the figures are printed, never bounded (a
 * busy CI machine would make any bound flaky). `bench/startup.ts` measures
 * several runs.
 */
// deno-lint-ignore-file no-console
import assert from "node:assert/strict";
import { ensureDevCerts } from "../shared/certs/generate.ts";
import { measureStartup } from "./startup.ts";

Deno.test("startup: launch to the first request served over HTTP/3 (reported)", async () => {
  const backend = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => new Response("ok"),
  );
  const dir = await Deno.makeTempDir({ prefix: "spooky-startup-" });
  try {
    const certs = await ensureDevCerts(dir);
    const configPath = `${dir}/config.yaml`;
    await Deno.writeTextFile(
      configPath,
      `version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tls: {cert: "${certs.certPath}", key: "${certs.keyPath}"}}
upstream:
  root: {route: {path_prefix: /}, backends: [{id: b0, address: "127.0.0.1:${backend.addr.port}"}]}
`,
    );
    const s = await measureStartup(configPath, await Deno.readTextFile(certs.caPath), 60_000);
    assert.ok(s.firstRequestMs >= s.listeningMs);
    console.log(
      `startup: listening after ${s.listeningMs.toFixed(0)} ms, first request served after ${
        s.firstRequestMs.toFixed(0)
      } ms`,
    );
  } finally {
    await backend.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});
