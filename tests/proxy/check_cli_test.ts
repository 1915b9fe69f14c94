/**
 * Issue #21.5: `--check -c FILE` (alias `--validate`) validates what startup
 * validates, certificate pair and log files included, prints the result and
 * exits 0 or 1 without listening; an unknown key names the nearest known one.
 */
import assert from "node:assert/strict";
import { runCli, writeConfig } from "../support/proxy_process.ts";

const config = (extra = "", key = "{{key}}") =>
  `version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tls: {cert: "{{cert}}", key: "${key}"}}
upstream:
  root: {route: {path_prefix: /}, backends: [{id: b0, address: "127.0.0.1:1"}]}
${extra}
`;

Deno.test("--check: a valid file prints success and exits 0 without listening; --validate is the same", async () => {
  const path = await writeConfig(config());
  for (const flag of ["--check", "--validate", "-t"]) {
    const r = await runCli([flag, "-c", path]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Configuration validation successful/);
    assert.doesNotMatch(r.stdout, /Listening on/);
  }
});

Deno.test("--check: a key that is not the certificate's, an unknown key and an unwritable log file each fail with exit 1", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const otherKey = `${dir}/other.key`;
    const gen = await new Deno.Command("openssl", {
      args: [
        "genpkey",
        "-algorithm",
        "EC",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-out",
        otherKey,
      ],
      stderr: "null",
    }).output();
    assert.equal(gen.code, 0);
    const mismatch = await runCli(["--check", "-c", await writeConfig(config("", otherKey))]);
    assert.equal(mismatch.code, 1);
    assert.match(mismatch.stderr, /listen\.tls\.key .*does not match listen\.tls\.cert/);

    const typo = await runCli([
      "--check",
      "-c",
      await writeConfig(config("passive_helth: {enabled: true}")),
    ]);
    assert.equal(typo.code, 1);
    assert.match(typo.stderr, /^Configuration validation failed\.$/m);
    assert.match(
      typo.stderr,
      /passive_helth \(line \d+\): unknown key \(did you mean `passive_health`\?\)/,
    );

    const logFile = await runCli([
      "--check",
      "-c",
      await writeConfig(config(`log: {access: {file: "${dir}/missing/dir/access.log"}}`)),
    ]);
    assert.equal(logFile.code, 1);
    assert.match(logFile.stderr, /log\.access\.file: cannot write/);

    const rustLog = await runCli(["--check", "-c", await writeConfig(config())], {
      RUST_LOG: "info,proxy=loud",
    });
    assert.equal(rustLog.code, 1);
    assert.match(rustLog.stderr, /RUST_LOG: .*unknown log level "loud"/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
