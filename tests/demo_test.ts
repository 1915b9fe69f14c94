/**
 * The README's demo command, run exactly as the README writes it, in a clean
 * copy of the repository (what a fresh clone holds: no `.dev/certs`, no
 * `data/`), brings up the demo: an HTTP/3 request on UDP 9889 reaches the
 * payments API through the proxy (401 without the token, 200 with it), the
 * printed curl and headless Chromium lines work as printed, and Ctrl-C
 * (SIGINT to the command's process group, as a terminal sends it) stops
 * everything cleanly.
 */
import assert from "node:assert/strict";
import { dirname } from "node:path";
import { deadline } from "../shared/deadline.ts";
import { H3TestClient } from "./support/h3_client.ts";
import { shell } from "./support/shell.ts";

const ROOT = new URL("../", import.meta.url).pathname;

/** Bounds far from what they separate: the demo is up in 2-10 s, stops in about 1 s. */
const UP_MS = 120_000;
const STOP_MS = 60_000;

Deno.test("#34.4: the README's demo command, in a clean clone, serves the payments API over HTTP/3 on 9889", async () => {
  const command = await readmeCommand("start");
  const clone = await cleanCopy();
  try {
    const lock = await demoPortsLock();
    try {
      await runDemo(command, clone);
    } finally {
      lock.close(); // releases the lock
    }
  } finally {
    await Deno.remove(clone, { recursive: true });
  }
});

/** The line of the README's "The two commands" block that runs `task`, without its comment. */
async function readmeCommand(task: string): Promise<string> {
  const readme = await Deno.readTextFile(`${ROOT}README.md`);
  const at = readme.indexOf("\n## The two commands\n");
  assert.ok(at >= 0, "the README lost its section `The two commands`");
  const block = /```sh\n([\s\S]*?)```/.exec(readme.slice(at))?.[1] ?? "";
  const line = block.split("\n").find((l) => new RegExp(`\\btask ${task}\\b`).test(l));
  assert.ok(line, `no "task ${task}" line in the README's two commands:\n${block}`);
  return line.replace(/\s+#.*$/, "").trim();
}

/**
 * A copy of what a clone of this work tree holds: the tracked files and the
 * new ones git does not ignore (so uncommitted changes are tested too), and
 * none of the ignored ones (`.dev/`, `data/`, `dist/`).
 */
async function cleanCopy(): Promise<string> {
  const listed = await new Deno.Command("git", {
    args: ["ls-files", "-z", "--cached", "--others", "--exclude-standard"],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(listed.success, new TextDecoder().decode(listed.stderr));
  const dir = await Deno.makeTempDir({ prefix: "spooky-clone-" });
  for (const file of new TextDecoder().decode(listed.stdout).split("\0")) {
    if (file === "") continue;
    const info = await Deno.lstat(`${ROOT}${file}`).catch(() => null);
    if (!info?.isFile) continue; // deleted in the work tree
    await Deno.mkdir(dirname(`${dir}/${file}`), { recursive: true });
    await Deno.copyFile(`${ROOT}${file}`, `${dir}/${file}`);
  }
  return dir;
}

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

async function runDemo(command: string, clone: string): Promise<void> {
  const token = `test-${crypto.randomUUID().slice(0, 8)}`;
  // Its own process group, so that SIGINT reaches every process as Ctrl-C does.
  const child = new Deno.Command("bash", {
    args: ["-c", command],
    cwd: clone,
    env: { DEMO_TOKEN: token, NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
    stdin: "null",
    detached: true,
  }).spawn();
  const signalGroup = (signal: Deno.Signal) => {
    try {
      Deno.kill(-child.pid, signal);
    } catch {
      // already gone
    }
  };
  let out = "";
  const ready = Promise.withResolvers<void>();
  const reading = (async () => {
    for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
      out += chunk;
      if (out.includes("Ctrl-C stops everything")) ready.resolve();
    }
  })();
  const errText = new Response(child.stderr).text();
  const timer = setTimeout(
    () => ready.reject(new Error(`demo not up in ${UP_MS} ms:\n${out}`)),
    UP_MS,
  );
  child.status.then(() => ready.reject(new Error(`demo exited early:\n${out}`)));
  try {
    await ready.promise;
    clearTimeout(timer);
    await checkServing(out, token, clone);
  } finally {
    clearTimeout(timer);
    signalGroup("SIGINT");
    const killer = setTimeout(() => signalGroup("SIGKILL"), STOP_MS);
    const status = await child.status;
    clearTimeout(killer);
    await reading;
    const stderr = await errText;
    // What a shell shows after Ctrl-C: 0, or npx's own death by SIGINT.
    assert.ok(
      status.code === 0 || status.signal === "SIGINT",
      `${JSON.stringify(status)}\n${stderr}`,
    );
    assert.match(out, /stopping/);
    // Every child drained and said so (issue #21.7).
    assert.match(stderr, /Shutdown complete/);
    for (const name of ["payments:8081", "payments:8082", "proxy"]) {
      assert.match(out, new RegExp(`\\[${name}\\] exited with code 0`), `${out}\n${stderr}`);
    }
  }
}

/** The printed lines work as printed, and the proxy answers over HTTP/3. */
async function checkServing(out: string, token: string, clone: string): Promise<void> {
  assert.match(out, new RegExp(`Bearer token:\\s+${token}`));
  assert.match(out, /gtlsclient .* 127\.0\.0\.1 9889/);
  assert.match(out, /--origin-to-force-quic-on=localhost:9889/);
  // Started through npx as the README says, the reader may have no `deno`:
  // the HTTP/3 client lines use the same npx launcher.
  assert.match(out, /^\s*npx -y deno@\S+ run -A examples\/h3_client\.ts /m);
  // The printed curl line works as printed (the TCP fallback is on).
  const curlLine = /^\s*(curl .*)$/m.exec(out)?.[1];
  assert.ok(curlLine, `no curl line in:\n${out}`);
  assert.ok(curlLine.includes(`Bearer ${token}`));
  const curl = await shell(curlLine, clone, 20_000);
  assert.equal(curl.code, 0, curl.stderr);
  assert.match(curl.stdout, /^HTTP\/2 200/);
  assert.match(curl.stdout, /^alt-svc: h3=":9889"/im);
  // The printed headless Chromium line works as printed, as root too.
  const start = out.indexOf("  chromium --headless");
  assert.ok(start >= 0, `no headless chromium line in:\n${out}`);
  let cmd = "";
  for (const line of out.slice(start).split("\n")) {
    cmd += line.replace(/\\$/, "");
    if (!line.endsWith("\\")) break;
  }
  const chromium = await shell(cmd.trim(), clone, 60_000);
  assert.equal(chromium.code, 0, chromium.stderr);
  assert.match(chromium.stdout, /<html/i);
  const ca = await Deno.readTextFile(`${clone}/.dev/certs/ca.pem`);
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
}
