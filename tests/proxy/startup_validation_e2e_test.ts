/**
 * Startup and reload validation of the files a configuration names, with the
 * real proxy process (issues 15.2 and 13.7): a key that is not the
 * certificate's, a directory, an expired certificate (a warning), a key the
 * process may not read, and special files (`/dev/zero`, a FIFO) as cert or
 * key, which must neither eat memory nor hang startup or the event loop on
 * reload.
 */
import "reflect-metadata";
import * as x509 from "@peculiar/x509";
import assert from "node:assert/strict";
import { join } from "node:path";
import { generateDevCerts } from "../../shared/certs/generate.ts";
import { startBackend } from "../support/backend.ts";
import { H3TestClient } from "../support/h3_client.ts";
import { type CliResult, runCli, startProxy, testCerts } from "../support/proxy_process.ts";
import { skipWithout } from "../support/tools.ts";
import { sleep } from "../support/wait.ts";

const MAIN = new URL("../../proxy/main.ts", import.meta.url).pathname;
const TOKEN = "reload-token";

/** A configuration with block-style TLS paths: `cert` on line 7, `key` on line 8. */
function config(cert: string, key: string, extra = ""): string {
  return `version: 1
listen:
  protocol: http3
  address: 127.0.0.1
  port: 0
  tls:
    cert: "${cert}"
    key: "${key}"
upstream:
  web:
    route: {path_prefix: /}
    backends: [{id: w1, address: "127.0.0.1:1"}]
${extra}`;
}

async function tempDir(): Promise<string> {
  return await Deno.makeTempDir({ prefix: "spooky-startup-" });
}

async function mkfifo(path: string): Promise<void> {
  const out = await new Deno.Command("mkfifo", { args: [path] }).output();
  assert.equal(out.code, 0, "mkfifo failed");
}

/** Runs the proxy on `yaml` (written to `dir`) and waits for it to exit. */
async function runWith(dir: string, yaml: string): Promise<CliResult & { ms: number }> {
  const path = join(dir, "proxy.yaml");
  await Deno.writeTextFile(path, yaml);
  const t0 = performance.now();
  const r = await runCli(["-c", path]);
  return { ...r, ms: performance.now() - t0 };
}

/** Exit 1 with `line` on stderr, and neither success line printed. */
function assertRejected(r: CliResult, line: string | RegExp): void {
  assert.equal(r.code, 1, `exit code; stderr:\n${r.stderr}`);
  if (typeof line === "string") assert.ok(r.stderr.split("\n").includes(line), r.stderr);
  else assert.match(r.stderr, line);
  assert.match(r.stderr, /^Configuration validation failed\. Exiting\.\.\.$/m);
  assert.doesNotMatch(r.stdout, /Configuration validation successful|is starting/);
  assert.doesNotMatch(r.stderr, /fatal|KeyMismatch.*\n.*KeyMismatch/);
}

Deno.test("startup: a key that is not the certificate's is listen.tls.key (line N), exit 1, before the success line", async () => {
  const dir = await tempDir();
  try {
    const a = await testCerts();
    const other = await generateDevCerts();
    await Deno.writeTextFile(join(dir, "other-key.pem"), other.keyPem);
    const r = await runWith(dir, config(a.certPath, join(dir, "other-key.pem")));
    assertRejected(r, "listen.tls.key (line 8): does not match listen.tls.cert");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("startup: a certificate path that is a directory is listen.tls.cert (line N), exit 1", async () => {
  const dir = await tempDir();
  try {
    const { keyPath } = await testCerts();
    const r = await runWith(dir, config(dir, keyPath));
    assertRejected(r, `listen.tls.cert (line 7): ${dir} is a directory, not a file`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("startup: an expired certificate is a warning naming listen.tls.cert; the proxy starts", async () => {
  const dir = await tempDir();
  x509.cryptoProvider.set(crypto);
  const keys = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, [
    "sign",
    "verify",
  ]);
  const day = 86_400_000;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: "01",
    name: "CN=localhost",
    notBefore: new Date(Date.now() - 30 * day),
    notAfter: new Date(Date.now() - day),
    keys,
    signingAlgorithm: { name: "ECDSA", hash: "SHA-256" },
  });
  const pkcs8 = await crypto.subtle.exportKey("pkcs8", keys.privateKey);
  await Deno.writeTextFile(join(dir, "cert.pem"), cert.toString("pem") + "\n");
  await Deno.writeTextFile(
    join(dir, "key.pem"),
    x509.PemConverter.encode(pkcs8, "PRIVATE KEY") + "\n",
  );
  const proxy = await startProxy(config(join(dir, "cert.pem"), join(dir, "key.pem")));
  try {
    await sigtermHandled(proxy.pid);
    assert.ok(proxy.stdout.includes("Configuration validation successful"));
    const warning = proxy.stderr.find((l) => l.startsWith("Warning: "));
    assert.match(
      warning ?? "",
      /^Warning: listen\.tls\.cert \(line 7\): the certificate expired on \d{4}-\d\d-\d\dT/,
    );
  } finally {
    const code = await proxy.stop();
    assert.equal(code, 0, `${proxy.stdout.join("\n")}\n${proxy.stderr.join("\n")}`);
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * Waits until process `pid` catches SIGTERM (its `SigCgt` mask in /proc):
 * the proxy prints `Listening on` just before it installs its handlers, and a
 * SIGTERM in between would kill it with the default action (exit 143).
 */
async function sigtermHandled(pid: number): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const status = await Deno.readTextFile(`/proc/${pid}/status`).catch(() => "");
    const mask = /^SigCgt:\s*([0-9a-f]+)$/m.exec(status)?.[1];
    if (mask === undefined || (BigInt(`0x${mask}`) >> 14n) & 1n) return;
    await sleep(20);
  }
}

const UNREADABLE_KEY = "startup: a key without read permission is listen.tls.key (line N): " +
  "permission denied";

Deno.test({
  name: UNREADABLE_KEY,
  // Root reads any file: as root, setpriv takes away CAP_DAC_OVERRIDE for the case to happen.
  ignore: Deno.uid() === 0 && skipWithout(UNREADABLE_KEY, "setpriv"),
  async fn() {
    const dir = await tempDir();
    try {
      const { certPath, keyPath } = await testCerts();
      const key = join(dir, "key.pem");
      await Deno.copyFile(keyPath, key);
      await Deno.chmod(key, 0o000);
      const path = join(dir, "proxy.yaml");
      await Deno.writeTextFile(path, config(certPath, key));
      // As root, run without CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH so mode bits apply.
      const prefix = Deno.uid() === 0
        ? ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
        : [];
      const out = await new Deno.Command(prefix[0] ?? Deno.execPath(), {
        args: [
          ...prefix.slice(1),
          ...(prefix.length ? [Deno.execPath()] : []),
          "run",
          "-A",
          MAIN,
          "-c",
          path,
        ],
        stdout: "piped",
        stderr: "piped",
        stdin: "null",
        env: { NO_COLOR: "1" },
        signal: AbortSignal.timeout(30_000),
      }).output();
      assertRejected(
        {
          code: out.code,
          stdout: new TextDecoder().decode(out.stdout),
          stderr: new TextDecoder().decode(out.stderr),
        },
        `listen.tls.key (line 8): cannot read ${key}: permission denied`,
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

for (const kind of ["cert", "key"] as const) {
  Deno.test(`startup: listen.tls.${kind}: /dev/zero is refused at once, without reading it`, async () => {
    const dir = await tempDir();
    try {
      const { certPath, keyPath } = await testCerts();
      const r = await runWith(
        dir,
        config(kind === "cert" ? "/dev/zero" : certPath, kind === "key" ? "/dev/zero" : keyPath),
      );
      assertRejected(
        r,
        `listen.tls.${kind} (line ${
          kind === "cert" ? 7 : 8
        }): /dev/zero is a character device, not a regular file`,
      );
      assert.ok(r.ms < 20_000, `took ${Math.round(r.ms)} ms`);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });

  Deno.test(`startup: listen.tls.${kind}: a FIFO is refused at once, never waited on`, async () => {
    const dir = await tempDir();
    try {
      const { certPath, keyPath } = await testCerts();
      const fifo = join(dir, "pipe.pem");
      await mkfifo(fifo);
      const r = await runWith(
        dir,
        config(kind === "cert" ? fifo : certPath, kind === "key" ? fifo : keyPath),
      );
      assertRejected(
        r,
        `listen.tls.${kind} (line ${
          kind === "cert" ? 7 : 8
        }): ${fifo} is a FIFO (named pipe), not a regular file`,
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}

Deno.test("reload: a FIFO, /dev/zero or a foreign key is refused; the event loop never stops", async (t) => {
  const backend = startBackend("b0");
  const certs = await testCerts();
  const dir = await tempDir();
  const fifo = join(dir, "pipe.pem");
  await mkfifo(fifo);
  const other = await generateDevCerts();
  await Deno.writeTextFile(join(dir, "other-key.pem"), other.keyPem);
  const admin = `admin: {address: 127.0.0.1, port: 0, token: ${TOKEN}}\n`;
  const good = config(certs.certPath, certs.keyPath, admin).replace("127.0.0.1:1", backend.address);
  const proxy = await startProxy(good);
  const base = `http://127.0.0.1:${proxy.adminPort}`;
  const client = await H3TestClient.connect(proxy.port, await Deno.readTextFile(certs.caPath));
  const h3 = async () =>
    (await client.request({
      head: [[":method", "GET"], [":scheme", "https"], [":authority", "localhost"], [
        ":path",
        "/x",
      ]],
    })).status;
  const reload = async () => {
    const res = await fetch(`${base}/admin/reload`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}` },
      signal: AbortSignal.timeout(10_000),
    });
    return { status: res.status, body: await res.json() };
  };
  /** /health answers within 2 s: the event loop is running. */
  const alive = async () => {
    const res = await fetch(`${base}/health`, { signal: AbortSignal.timeout(2_000) });
    await res.body?.cancel();
    return res.status;
  };
  try {
    const cases: Array<[string, string, string, RegExp]> = [
      ["a FIFO as the certificate", fifo, certs.keyPath, /listen\.tls\.cert .*FIFO/],
      ["a FIFO as the key", certs.certPath, fifo, /listen\.tls\.key .*FIFO/],
      ["/dev/zero as the certificate", "/dev/zero", certs.keyPath, /character device/],
      ["/dev/zero as the key", certs.certPath, "/dev/zero", /character device/],
      [
        "a key that is not the certificate's",
        certs.certPath,
        join(dir, "other-key.pem"),
        /listen\.tls\.key \(line 8\): does not match listen\.tls\.cert/,
      ],
    ];
    for (const [name, cert, key, pattern] of cases) {
      await t.step(`POST /admin/reload with ${name}: 400, still serving`, async () => {
        await Deno.writeTextFile(
          proxy.configPath,
          config(cert, key, admin).replace("127.0.0.1:1", backend.address),
        );
        const r = await reload();
        assert.equal(r.status, 400, JSON.stringify(r.body));
        assert.match(JSON.stringify(r.body.errors), pattern);
        assert.equal(await alive(), 200);
        assert.equal(await h3(), 200);
      });
    }
    await t.step("SIGHUP with a FIFO: the proxy keeps answering at once", async () => {
      await Deno.writeTextFile(
        proxy.configPath,
        config(fifo, certs.keyPath, admin).replace("127.0.0.1:1", backend.address),
      );
      Deno.kill(proxy.pid, "SIGHUP");
      for (let i = 0; i < 5; i++) {
        await sleep(100);
        assert.equal(await alive(), 200);
      }
      assert.equal(await h3(), 200);
    });
    await t.step("the good file reloads again afterwards", async () => {
      await Deno.writeTextFile(proxy.configPath, good);
      const r = await reload();
      assert.equal(r.status, 200, JSON.stringify(r.body));
    });
  } finally {
    await client.close();
    assert.equal(await proxy.stop(), 0);
    await backend.close();
    await Deno.remove(dir, { recursive: true });
  }
});
