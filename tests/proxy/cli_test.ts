/**
 * The CLI contract of `proxy/main.ts` (spec: Command line, Errors): output
 * lines and exit codes, run as a real process.
 */
import assert from "node:assert/strict";
import { runCli, testCerts, writeConfig } from "../support/proxy_process.ts";
import { VERSION } from "../../shared/version.ts";

const VALID = `version: 1
listen:
  protocol: http3
  address: 127.0.0.1
  port: 0
  tls:
    cert: {{cert}}
    key: {{key}}
upstream:
  web:
    route:
      path_prefix: /
    backends:
      - id: w1
        address: 127.0.0.1:1
`;

Deno.test("cli: -V and --version print 'spooky <version>' and exit 0", async () => {
  for (const flag of ["-V", "--version"]) {
    const r = await runCli([flag]);
    assert.equal(r.code, 0);
    assert.equal(r.stdout.trim(), `spooky ${VERSION}`);
  }
});

Deno.test("cli: -h prints usage and exits 0", async () => {
  const r = await runCli(["-h"]);
  assert.equal(r.code, 0);
  assert.match(r.stdout, /--config/);
});

Deno.test("cli: a missing -c or an unknown option exits 1 with the usage", async () => {
  const none = await runCli([]);
  assert.equal(none.code, 1);
  assert.match(none.stderr, /-c\/--config <path> is required/);
  const unknown = await runCli(["--bogus"]);
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /Unknown option/i);
});

Deno.test("cli: an unreadable file is 'Error loading config' and exit 1", async () => {
  const r = await runCli(["-c", "/nonexistent/spooky.yaml"]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /^Error loading config: .*not found/m);
});

Deno.test("cli: YAML syntax errors carry line:column", async () => {
  const path = await writeConfig("version: 1\nlisten: [unclosed\n");
  const r = await runCli(["-c", path]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /^Error loading config: .*line \d+:\d+/m);
});

Deno.test("cli: every problem is listed, then 'Configuration validation failed. Exiting...'", async () => {
  const path = await writeConfig(
    VALID.replace("protocol: http3", "protocol: http2").replace("127.0.0.1:1", "nope") +
      "extra_key: 1\n",
  );
  const r = await runCli(["-c", path]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /listen\.protocol \(line 3\)/);
  assert.match(r.stderr, /upstream\.web\.backends\[0\]\.address \(line 15\)/);
  assert.match(r.stderr, /extra_key \(line 16\): unknown key/);
  assert.match(r.stderr, /Configuration validation failed\. Exiting\.\.\.\s*$/);
  assert.doesNotMatch(r.stdout, /Spooky is starting/);
});

Deno.test("cli: listen.tls.ca is rejected (client certificates cannot be verified)", async () => {
  const certs = await testCerts();
  const path = await writeConfig(
    VALID.replace("    key: {{key}}", `    key: {{key}}\n    ca: ${certs.caPath}`),
  );
  const r = await runCli(["-c", path]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /listen\.tls\.ca .*client certificate/i);
});

Deno.test("cli: an unknown log level is a configuration error", async () => {
  const path = await writeConfig(VALID + "log:\n  level: loud\n");
  const r = await runCli(["-c", path]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /log\.level/);
});

Deno.test("cli: an invalid RUST_LOG is a startup error, exit 1", async () => {
  const path = await writeConfig(VALID);
  const r = await runCli(["-c", path], { RUST_LOG: "proxy=shout" });
  assert.equal(r.code, 1);
  assert.match(r.stdout, /Configuration validation successful/);
  assert.match(r.stderr, /^Error loading config: .*shout/m);
});

Deno.test("cli: an unwritable log file is a clear startup error", async () => {
  const file = await Deno.makeTempFile();
  const path = await writeConfig(
    VALID + `log:\n  file:\n    enabled: true\n    path: ${file}/sub/spooky.log\n`,
  );
  const r = await runCli(["-c", path]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /cannot write log file/);
});
