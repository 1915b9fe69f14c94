/**
 * `examples/h3_client.ts` as a command line: `-h` prints the usage, a proxy
 * that is down or silent gives one line and exit 1 within a few seconds (not
 * a 30 s hang and a stack trace), and a request with headers works.
 */
import assert from "node:assert/strict";
import { startBackend } from "../support/backend.ts";
import { oneBackendConfig, startProxy, testCerts } from "../support/proxy_process.ts";

const CLIENT = new URL("../../examples/h3_client.ts", import.meta.url).pathname;

async function run(
  args: string[],
): Promise<{ code: number; out: string; err: string; ms: number }> {
  const t0 = performance.now();
  const r = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", CLIENT, ...args],
    stdout: "piped",
    stderr: "piped",
    stdin: "null",
    env: { NO_COLOR: "1" },
    signal: AbortSignal.timeout(40_000),
  }).output();
  return {
    code: r.code,
    out: new TextDecoder().decode(r.stdout),
    err: new TextDecoder().decode(r.stderr),
    ms: performance.now() - t0,
  };
}

/** One line, `h3_client: ...`, and no stack trace. */
function assertOneLine(err: string, pattern: RegExp): void {
  const lines = err.trimEnd().split("\n");
  assert.equal(lines.length, 1, `expected one line, got:\n${err}`);
  assert.match(lines[0], pattern);
  assert.doesNotMatch(err, /^\s+at /m);
}

Deno.test("h3_client: -h and --help print the usage on stdout and exit 0", async () => {
  for (const flag of ["-h", "--help"]) {
    const r = await run([flag]);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /^Usage: deno run -A examples\/h3_client\.ts \[options\] URL$/m);
    assert.match(r.out, /--connect-timeout/);
    assert.equal(r.err, "");
  }
});

Deno.test("h3_client: usage errors are one line and exit 2", async () => {
  for (const args of [[], ["--bogus", "https://localhost/"], ["not a url"], ["http://x/"]]) {
    const r = await run(args);
    assert.equal(r.code, 2, `${args}: ${r.err}`);
    assertOneLine(r.err, /^h3_client: /);
  }
});

Deno.test("h3_client: a proxy that is down is one line and exit 1 within a few seconds", async () => {
  const { caPath } = await testCerts();
  // A UDP socket that reads nothing: a proxy that is hung or firewalled (no ICMP either).
  const silent = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
  const port = (silent.addr as Deno.NetAddr).port;
  try {
    const r = await run(["--ca", caPath, `https://localhost:${port}/x`]);
    assert.equal(r.code, 1, r.err);
    assertOneLine(r.err, new RegExp(`^h3_client: cannot connect to 127\\.0\\.0\\.1:${port} `));
    assert.ok(r.ms < 15_000, `took ${Math.round(r.ms)} ms`);
    const fast = await run([
      "--ca",
      caPath,
      "--connect-timeout",
      "1",
      `https://localhost:${port}/`,
    ]);
    assert.equal(fast.code, 1);
    assert.ok(fast.ms < r.ms, "--connect-timeout shortens the wait");
  } finally {
    silent.close();
  }
  const noCa = await run(["--ca", "/nonexistent/ca.pem", "https://localhost:9/"]);
  assert.equal(noCa.code, 1);
  assertOneLine(noCa.err, /^h3_client: cannot read the CA file \/nonexistent\/ca\.pem/);
});

Deno.test("h3_client: a request with headers goes through the proxy", async () => {
  const backend = startBackend("b0");
  const proxy = await startProxy(oneBackendConfig(backend.address));
  try {
    const { caPath } = await testCerts();
    const r = await run([
      "-i",
      "-H",
      "x-demo: yes",
      "--ca",
      caPath,
      `https://localhost:${proxy.port}/hello?a=1`,
    ]);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /^HTTP\/3 200$/m);
    assert.match(r.out, /"backend":"b0"/);
  } finally {
    await proxy.stop();
    await backend.close();
  }
});
