/**
 * Issue #28.5: what the README asks a newcomer to copy works as written.
 *
 * - "Your first proxy configuration": at most 15 lines; saved as the README
 *   says (`spooky.yaml` in the repository's folder, the certificates of
 *   `deno task certs` in `.dev/certs/`), it passes `--check` unchanged; the
 *   misspelling the README shows gives the line the README quotes; and it
 *   serves (over the TCP fallback with curl, over HTTP/3 with
 *   examples/h3_client.ts), with only its port and backend moved to free ones.
 * - "The payments sandbox in five curl lines": five `curl` lines that each
 *   get what the README says they get, against `payments/main.ts`.
 */
import assert from "node:assert/strict";
import { startBackend } from "./support/backend.ts";
import { runCli, startProxy, testCerts } from "./support/proxy_process.ts";
import { needs } from "./support/tools.ts";
import { shell } from "./support/shell.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const README = await Deno.readTextFile(`${ROOT}README.md`);

/** The fenced block of `lang` after the README's `<!-- marker` comment. */
function blockAfter(marker: string, lang: string): string {
  const at = README.indexOf(`<!-- ${marker}`);
  assert.ok(at >= 0, `the README lost its ${marker} block`);
  const m = new RegExp("```" + lang + "\\n([\\s\\S]*?)```").exec(README.slice(at));
  assert.ok(m, `no ${lang} block after ${marker}`);
  return m[1];
}

/** A folder laid out as the README says: the certificates in `.dev/certs/`, the file as `spooky.yaml`. */
async function readmeLayout(config: string): Promise<string> {
  const certs = await testCerts();
  const dir = await Deno.makeTempDir({ prefix: "spooky-readme-" });
  await Deno.mkdir(`${dir}/.dev/certs`, { recursive: true });
  for (const f of ["cert.pem", "key.pem", "ca.pem"]) {
    await Deno.copyFile(
      `${certs.certPath.slice(0, certs.certPath.lastIndexOf("/"))}/${f}`,
      `${dir}/.dev/certs/${f}`,
    );
  }
  await Deno.writeTextFile(`${dir}/spooky.yaml`, config);
  return dir;
}

Deno.test({
  ...needs(
    "#28.5: the README's first proxy configuration: ≤ 15 lines, --check as written, and it serves",
    "curl",
  ),
  fn: async () => {
    const config = blockAfter("minimal-config", "yaml");
    const lines = config.trimEnd().split("\n").length;
    assert.ok(lines <= 15, `the minimal configuration has ${lines} lines`);
    assert.match(README, /Save this as `spooky\.yaml` in the repository's folder/);
    const dir = await readmeLayout(config);
    const be = startBackend("readme");
    try {
      const check = await runCli(["--check", "-c", `${dir}/spooky.yaml`]);
      assert.equal(check.code, 0, check.stdout + check.stderr);

      // The mistake the README shows, and the line it quotes for it.
      const shown = /with `([a-z_]+): true`,\s+``([^`]+`[^`]+`[^`]*)``/.exec(README);
      assert.ok(shown, "the README shows a misspelt key and its message");
      const [, typo, message] = shown;
      const correct = /did you mean `([a-z_]+)`/.exec(message)![1];
      await Deno.writeTextFile(
        `${dir}/bad.yaml`,
        config.replace(`${correct}: true`, `${typo}: true`),
      );
      const bad = await runCli(["--check", "-c", `${dir}/bad.yaml`]);
      assert.equal(bad.code, 1);
      assert.ok((bad.stdout + bad.stderr).includes(message), bad.stdout + bad.stderr);

      // Served: a free port instead of 9889, the test backend instead of payments on 8081.
      const moved = config
        .replace(/port: 9889\b/, "port: 0")
        .replace('"127.0.0.1:8081"', `"${be.address}"`)
        .replaceAll(".dev/certs/", `${dir}/.dev/certs/`);
      assert.notEqual(moved, config);
      const proxy = await startProxy(moved);
      try {
        const url = `https://localhost:${proxy.port}/health`;
        const curl = await shell(
          `curl -s -o /dev/null -w '%{http_code}' --cacert .dev/certs/ca.pem --resolve localhost:${proxy.port}:127.0.0.1 ${url}`,
          dir,
        );
        assert.equal(curl.stdout, "200", curl.stderr);
        const h3 = await shell(
          `'${Deno.execPath()}' run -A '${ROOT}examples/h3_client.ts' -i --ca .dev/certs/ca.pem ${url}`,
          dir,
        );
        assert.equal(h3.code, 0, h3.stderr);
        assert.match(h3.stdout, /^HTTP\/3 200/m);
      } finally {
        assert.equal(await proxy.stop(), 0);
      }
    } finally {
      await be.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  ...needs("#28.5: the README's payments sandbox in five curl lines", "curl"),
  fn: async () => {
    assert.match(README, /^deno task payments --token dev\b/m, "the README starts payments so");
    const block = blockAfter("payments-curl", "sh");
    const curls = block.split("\n").filter((l) => l.startsWith("curl "));
    assert.equal(curls.length, 5, block);
    const server = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        `${ROOT}payments/main.ts`,
        "--token",
        "dev",
        "--kv",
        ":memory:",
        "--port",
        "0",
      ],
      stdout: "piped",
      stderr: "piped",
      stdin: "null",
      env: { NO_COLOR: "1" },
    }).spawn();
    const stderr = new Response(server.stderr).text();
    try {
      let out = "";
      let port = 0;
      for await (const chunk of server.stdout.pipeThrough(new TextDecoderStream())) {
        out += chunk;
        const m = /Listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
        if (m) {
          port = Number(m[1]);
          break;
        }
      }
      assert.ok(port > 0, out);
      const dir = await Deno.makeTempDir({ prefix: "spooky-readme-payments-" });
      try {
        // Each line on its own, so that each one's answer is checked.
        const [setup] = block.split("\n").filter((l) => !l.startsWith("curl ") && l.trim() !== "");
        const expected = [
          /"status":"AUTHORIZED"/,
          /^idempotent-replayed: true\r?$/im,
          /"type":"VOID"/,
          /"status":"DECLINED"/,
          /"value":"tok_[0-9A-Z]{26}"/,
        ];
        for (const [i, line] of curls.entries()) {
          const r = await shell(
            `${setup.replaceAll("127.0.0.1:8081", `127.0.0.1:${port}`)}\n${line}`,
            dir,
          );
          assert.equal(r.code, 0, `${line}\n${r.stderr}`);
          assert.match(r.stdout, expected[i], `${line}\n${r.stdout}`);
        }
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    } finally {
      server.kill("SIGTERM");
      assert.equal((await server.status).code, 0, await stderr);
    }
  },
});
