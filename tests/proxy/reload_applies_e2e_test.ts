/**
 * Issue #21.2: a reload applies what it says it applied, and names the rest
 * against what is running. A real proxy, its admin API and its stderr:
 * `log.level: debug` takes effect at once, `log.access: {format: json, file}`
 * moves the access log, and a port change is listed until it is reverted.
 */
import assert from "node:assert/strict";
import { startBackend } from "../support/backend.ts";
import { getHead } from "../support/faults.ts";
import { H3TestClient } from "../support/h3_client.ts";
import { adminReload, startProxy, testCerts } from "../support/proxy_process.ts";
import { pollUntil } from "../support/wait.ts";

Deno.test("#21.2: log level and access log apply on reload; restart_required is computed against what runs", async () => {
  const be = startBackend("b");
  const certs = await testCerts();
  const dir = await Deno.makeTempDir();
  const file = `${dir}/access.json`;
  const config = (extra: string, port = 0) =>
    `version: 1
listen: {protocol: http3, address: 127.0.0.1, port: ${port}, tls: {cert: "${certs.certPath}", key: "${certs.keyPath}"}}
upstream:
  root: {route: {path_prefix: /}, backends: [{id: b0, address: "${be.address}"}]}
admin: {port: 0}
${extra}
`;
  const proxy = await startProxy(config("log: {level: info}"));
  const client = await H3TestClient.connect(proxy.port, await Deno.readTextFile(certs.caPath));
  const get = async (path: string) =>
    (await client.request({ head: getHead(path, proxy.port) })).status;
  const accessOnStderr = () => proxy.stderr.filter((l) => l.includes("[proxy::access]")).length;
  const fileLines = async () =>
    (await Deno.readTextFile(file).catch(() => "")).split("\n").filter(Boolean);
  try {
    assert.equal(await get("/one"), 200);
    await pollUntil(() => accessOnStderr() === 1);
    assert.equal(proxy.stderr.some((l) => l.includes("[DEBUG]")), false, "info to begin with");

    // log.level: debug, applied.
    await Deno.writeTextFile(proxy.configPath, config("log: {level: debug}"));
    assert.deepEqual(await adminReload(proxy.adminPort!), { reloaded: true, restart_required: [] });
    assert.equal(await get("/two"), 200);
    await pollUntil(() => proxy.stderr.some((l) => l.includes("routing to backend")));
    assert.ok(
      proxy.stderr.some((l) => l.includes("[DEBUG]") && l.includes("routing to backend")),
      proxy.stderr.join("\n"),
    );

    // log.access: JSON lines in their own file, applied; stderr gets no more access lines.
    await Deno.writeTextFile(
      proxy.configPath,
      config(`log: {level: debug, access: {format: json, file: "${file}"}}`),
    );
    assert.deepEqual(await adminReload(proxy.adminPort!), { reloaded: true, restart_required: [] });
    const onStderr = accessOnStderr();
    assert.equal(await get("/three"), 200);
    await pollUntil(async () => (await fileLines()).length >= 1);
    const lines = (await fileLines()).map((l) => JSON.parse(l));
    assert.deepEqual(lines.map((l) => [l.path, l.status]), [["/three", 200]]);
    assert.equal(accessOnStderr(), onStderr);

    // An access-log file that cannot be opened rejects the reload, as it stops startup.
    await Deno.writeTextFile(
      proxy.configPath,
      config(`log: {level: debug, access: {format: json, file: "${dir}/missing/access.json"}}`),
    );
    const rejected = await fetch(`http://127.0.0.1:${proxy.adminPort}/admin/reload`, {
      method: "POST",
    });
    assert.equal(rejected.status, 400);
    assert.match(JSON.stringify(await rejected.json()), /log\.access\.file: cannot write/);
    assert.equal(await get("/four"), 200);
    await pollUntil(async () => (await fileLines()).length >= 2);
    assert.equal((await fileLines()).length, 2, "still logging");

    // A port change needs a restart and is listed; reverted, it no longer is.
    await Deno.writeTextFile(proxy.configPath, config("", 1));
    assert.deepEqual((await adminReload(proxy.adminPort!)).restart_required, ["listen.port"]);
    await Deno.writeTextFile(proxy.configPath, config(""));
    assert.deepEqual((await adminReload(proxy.adminPort!)).restart_required, []);
  } finally {
    await client.close();
    assert.equal(await proxy.stop(), 0);
    await be.close();
    await Deno.remove(dir, { recursive: true });
  }
});
