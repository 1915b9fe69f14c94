/**
 * `deno task start` brings up the demo: an HTTP/3 request on UDP 9889 reaches
 * the payments API through the proxy (401 without the token, 200 with it),
 * the printed curl line works over the TCP fallback, and Ctrl-C (SIGINT)
 * stops everything cleanly.
 */
import assert from "node:assert/strict";
import { deadline } from "../shared/deadline.ts";
import { H3TestClient } from "./support/h3_client.ts";

const ROOT = new URL("../", import.meta.url).pathname;

Deno.test("demo: deno task start serves the payments API over HTTP/3 on 9889", async () => {
  const lock = await demoPortsLock();
  try {
    await runDemo();
  } finally {
    lock.close(); // releases the lock
  }
});

/**
 * The demo's ports are fixed (the README prints them), so a second test run
 * on the same machine waits here for the first one's demo to stop, instead
 * of failing on ports in use. The lock goes with the process that holds it.
 */
async function demoPortsLock(): Promise<Deno.FsFile> {
  const dir = Deno.env.get("TMPDIR") ?? "/tmp";
  const file = await Deno.open(`${dir}/spooky-demo-ports.lock`, { create: true, write: true });
  try {
    await deadline(
      file.lock(true),
      300_000,
      () => new Error("the demo's ports stayed held by another run for 5 minutes"),
    );
  } catch (err) {
    file.close();
    throw err;
  }
  return file;
}

async function runDemo(): Promise<void> {
  const token = `test-${crypto.randomUUID().slice(0, 8)}`;
  const child = new Deno.Command(Deno.execPath(), {
    args: ["task", "start"],
    cwd: ROOT,
    env: { DEMO_TOKEN: token, NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
    stdin: "null",
  }).spawn();
  let out = "";
  const ready = Promise.withResolvers<void>();
  const reading = (async () => {
    for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
      out += chunk;
      if (out.includes("Ctrl-C stops everything")) ready.resolve();
    }
  })();
  const errText = new Response(child.stderr).text();
  const timer = setTimeout(() => ready.reject(new Error(`demo not up in 60 s:\n${out}`)), 60_000);
  child.status.then(() => ready.reject(new Error(`demo exited early:\n${out}`)));
  try {
    await ready.promise;
    clearTimeout(timer);
    assert.match(out, new RegExp(`Bearer token:\\s+${token}`));
    assert.match(out, /gtlsclient .* 127\.0\.0\.1 9889/);
    assert.match(out, /--origin-to-force-quic-on=localhost:9889/);
    // The printed curl line works as printed (the TCP fallback is on).
    const curlLine = /^\s*(curl .*)$/m.exec(out)?.[1];
    assert.ok(curlLine, `no curl line in:\n${out}`);
    assert.ok(curlLine.includes(`Bearer ${token}`));
    const curl = await new Deno.Command("bash", {
      args: ["-c", curlLine],
      cwd: ROOT,
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(20_000),
    }).output();
    const curlOut = new TextDecoder().decode(curl.stdout);
    assert.equal(curl.code, 0, new TextDecoder().decode(curl.stderr));
    assert.match(curlOut, /^HTTP\/2 200/);
    assert.match(curlOut, /^alt-svc: h3=":9889"/im);
    // The printed headless Chromium line works as printed, as root too.
    if (await hasCommand("chromium")) {
      const start = out.indexOf("  chromium --headless");
      assert.ok(start >= 0, `no headless chromium line in:\n${out}`);
      const lines = out.slice(start).split("\n");
      let cmd = "";
      for (const line of lines) {
        cmd += line.replace(/\\$/, "");
        if (!line.endsWith("\\")) break;
      }
      const chromium = await new Deno.Command("bash", {
        args: ["-c", cmd.trim()],
        cwd: ROOT,
        stdout: "piped",
        stderr: "piped",
        signal: AbortSignal.timeout(60_000),
      }).output();
      const dom = new TextDecoder().decode(chromium.stdout);
      assert.equal(chromium.code, 0, new TextDecoder().decode(chromium.stderr));
      assert.match(dom, /<html/i);
    }
    const ca = await Deno.readTextFile(`${ROOT}.dev/certs/ca.pem`);
    const client = await H3TestClient.connect(9889, ca);
    try {
      const path = "/vendor/v4/customers/demo-test/cards";
      const head = (auth?: string): Array<[string, string]> => {
        const h: Array<[string, string]> = [
          [":method", "GET"],
          [":scheme", "https"],
          [":authority", "localhost:9889"],
          [":path", path],
        ];
        if (auth) h.push(["authorization", auth]);
        return h;
      };
      const anon = await client.request({ head: head() });
      assert.equal(anon.status, 401);
      const authed = await client.request({ head: head(`Bearer ${token}`) });
      assert.equal(authed.status, 200, new TextDecoder().decode(authed.body));
      assert.ok(authed.headers.some(([n, v]) => n === "via" && v.includes("spooky")));
    } finally {
      await client.close();
    }
  } finally {
    clearTimeout(timer);
    try {
      child.kill("SIGINT");
    } catch {
      // already gone
    }
    const status = await child.status;
    await reading;
    const stderr = await errText;
    assert.equal(status.code, 0, stderr);
    assert.match(out, /stopping/);
    // Every child drained and said so (issue #21.7).
    assert.match(stderr, /Shutdown complete/);
    assert.match(out, /\[proxy\] exited with code 0/);
  }
}

async function hasCommand(name: string): Promise<boolean> {
  const r = await new Deno.Command("bash", { args: ["-c", `command -v ${name}`], stdout: "null" })
    .output();
  return r.code === 0;
}
