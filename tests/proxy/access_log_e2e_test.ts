/**
 * The access log (issue #15.3) with a real proxy process and gtlsclient: on
 * by default at info, one line per finished request; `log.access: false`
 * turns it off; JSON lines go to their own file when asked.
 */
import assert from "node:assert/strict";
import { startBackend } from "../support/backend.ts";
import { gtls } from "../support/gtls.ts";
import { startProxy } from "../support/proxy_process.ts";
import { faultConfig } from "../support/faults.ts";
import { sleep } from "../support/wait.ts";

Deno.test("access log: on by default, one line per request with status, backend and stream id", async () => {
  const be = startBackend("b");
  const proxy = await startProxy(faultConfig([be.address]));
  try {
    const r = await gtls(proxy.port, `https://localhost:${proxy.port}/hello?token=abc`, {
      streams: 2,
    });
    assert.deepEqual(r.statuses, [200, 200], r.output);
    await sleep(300);
    const lines = proxy.stderr.filter((l) => l.includes("[proxy::access]"));
    assert.equal(lines.length, 2, proxy.stderr.join("\n"));
    for (const l of lines) {
      assert.match(
        l,
        /\[INFO\] \[proxy::access\] 127\.0\.0\.1:\d+ "GET localhost:\d+ \/hello\?token=\[REDACTED\]" 200 \d+ [\d.]+ms upstream=[\d.]+ms backend=b0 stream=\d+$/,
      );
    }
  } finally {
    assert.equal(await proxy.stop(), 0);
    await be.close();
  }
});

Deno.test("access log: log.access false turns it off; {format: json, file} writes JSON lines to a 0600 file", async () => {
  const be = startBackend("b");
  const off = await startProxy(faultConfig([be.address], { extra: "log: {access: false}" }));
  try {
    await gtls(off.port, `https://localhost:${off.port}/a`);
    await sleep(300);
    assert.deepEqual(off.stderr.filter((l) => l.includes("proxy::access")), []);
  } finally {
    assert.equal(await off.stop(), 0);
  }
  const dir = await Deno.makeTempDir();
  const file = `${dir}/access.log`;
  const json = await startProxy(
    faultConfig([be.address], { extra: `log: {access: {format: json, file: "${file}"}}` }),
  );
  try {
    await gtls(json.port, `https://localhost:${json.port}/b`);
    assert.equal(await json.stop(), 0);
    const lines = (await Deno.readTextFile(file)).trim().split("\n").map((l) => JSON.parse(l));
    assert.equal(lines.length, 1);
    assert.equal(lines[0].path, "/b");
    assert.equal(lines[0].status, 200);
    assert.equal(lines[0].backend, "b0");
    assert.equal((await Deno.stat(file)).mode! & 0o777, 0o600);
  } finally {
    await be.close();
    await Deno.remove(dir, { recursive: true });
  }
});
