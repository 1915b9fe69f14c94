/**
 * Issue #15.4: a failure in the log names its cause. A dead backend's line
 * says the connection was refused; a reload through the admin API with a bad
 * file logs each problem with its key and line, as SIGHUP does.
 */
import assert from "node:assert/strict";
import { gtls } from "../support/gtls.ts";
import { startProxy } from "../support/proxy_process.ts";
import { faultConfig } from "../support/faults.ts";
import { sleep } from "../support/wait.ts";

Deno.test("causes: a dead backend's failure line names the refused connection", async () => {
  // A port nothing listens on.
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const dead = `127.0.0.1:${(l.addr as Deno.NetAddr).port}`;
  l.close();
  const proxy = await startProxy(faultConfig([dead]));
  try {
    const r = await gtls(proxy.port, `https://localhost:${proxy.port}/x`);
    assert.deepEqual(r.statuses, [502], r.output);
    await sleep(200);
    const line = proxy.stderr.find((s) => /backend b0 failed/.test(s));
    assert.ok(line, proxy.stderr.join("\n"));
    assert.match(line, /ECONNREFUSED|connection refused/i);
  } finally {
    assert.equal(await proxy.stop(), 0);
  }
});

Deno.test("causes: POST /admin/reload with a bad file logs every problem with its key and line", async () => {
  const proxy = await startProxy(
    faultConfig(["127.0.0.1:1"], { extra: "admin: {address: 127.0.0.1, port: 0}" }),
  );
  try {
    const good = await Deno.readTextFile(proxy.configPath);
    await Deno.writeTextFile(
      proxy.configPath,
      good.replace("load_balancing: {type: round-robin}", "load_balancing: {type: fastest}"),
    );
    const res = await fetch(`http://127.0.0.1:${proxy.adminPort}/admin/reload`, {
      method: "POST",
    });
    assert.equal(res.status, 400);
    await res.body?.cancel();
    await sleep(200);
    const rejected = proxy.stderr.filter((s) =>
      /reload rejected: load_balancing\.type \(line 3\)/.test(s)
    );
    assert.equal(rejected.length, 1, proxy.stderr.join("\n"));
  } finally {
    assert.equal(await proxy.stop(), 0);
  }
});
