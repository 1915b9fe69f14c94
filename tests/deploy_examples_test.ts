/**
 * Issue #21.8: the deployment examples in examples/deploy/ are checked as far
 * as this machine allows.
 *
 * - systemd units: `systemd-analyze verify` (Debian's systemd package) must
 *   print nothing. It checks that ExecStart's binary exists, so the first
 *   test verifies a copy whose bare `deno` is this machine's deno, wherever
 *   it is. Issue #28.5: the second installs as the README and the units say
 *   (Deno by `npm install -g deno@2.9.6`, the files copied by the commands of
 *   each unit's comment, into a temp root standing in for `/`) and verifies
 *   what that gives, unchanged: the units find that Deno, and the copied
 *   `examples/proxy.yaml` passes the unit's own `--check`.
 * - container files: no container engine runs here, so the file is parsed
 *   and its instructions are carried out against the repository in a temp
 *   directory (the image's `/` is that directory): WORKDIR, COPY (only what
 *   is copied exists, so the entry point's imports must all be there), every
 *   RUN command (with `chown` to the image's `deno` user a no-op when this
 *   machine has no such user), then CMD, which must start and serve. For
 *   CMD, loopback stands in for 0.0.0.0, port 0 for the fixed port, and a
 *   test configuration for the mounted `/etc/spooky/proxy.yaml`.
 */
import assert from "node:assert/strict";
import { testCerts } from "./support/proxy_process.ts";
import { needs } from "./support/tools.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const DEPLOY = `${ROOT}examples/deploy/`;

async function run(cmd: string, args: string[], opts: Deno.CommandOptions = {}) {
  const out = await new Deno.Command(cmd, {
    args,
    stdout: "piped",
    stderr: "piped",
    stdin: "null",
    signal: AbortSignal.timeout(120_000),
    ...opts,
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

Deno.test({
  ...needs(
    "deploy: the systemd units pass systemd-analyze verify without a word",
    "systemd-analyze",
  ),
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "spooky-units-" });
    try {
      const units: string[] = [];
      for (const name of ["spooky.service", "payments.service"]) {
        const text = await Deno.readTextFile(`${DEPLOY}${name}`);
        // What the issue asks of a production unit.
        assert.match(text, /^Restart=on-failure$/m, name);
        assert.match(text, /^User=\w+$/m, name);
        assert.match(text, /^LimitNOFILE=\d+$/m, name);
        assert.match(text, /^ExecStart=deno run -A /m, name);
        await Deno.writeTextFile(
          `${dir}/${name}`,
          text.replace(/^(ExecStart(?:Pre)?=)deno /gm, `$1${Deno.execPath()} `),
        );
        units.push(`${dir}/${name}`);
      }
      const proxy = await Deno.readTextFile(`${DEPLOY}spooky.service`);
      assert.match(proxy, /^ExecReload=\/bin\/kill -HUP \$MAINPID$/m);
      assert.match(proxy, /^AmbientCapabilities=CAP_NET_BIND_SERVICE$/m);
      assert.match(proxy, /^ExecStartPre=.* --check -c /m);
      const r = await run("systemd-analyze", ["verify", ...units]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stderr + r.stdout, "", "systemd-analyze verify has a complaint");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

/**
 * Where systemd looks for an ExecStart command named without a path (a fixed
 * list compiled in, not $PATH: systemd.service(5), "Command lines").
 */
const SYSTEMD_SEARCH_PATH = [
  "/usr/local/sbin",
  "/usr/local/bin",
  "/usr/sbin",
  "/usr/bin",
  "/sbin",
  "/bin",
];

/** The commands of a unit's "Install (as root)" comment, in order. */
export function installCommands(unit: string): string[] {
  const lines = unit.split("\n");
  const at = lines.findIndex((l) => l.startsWith("# Install (as root)"));
  assert.ok(at >= 0, "the unit's comment says how to install it");
  let i = at + 1;
  while (i < lines.length && !lines[i].startsWith("#   ")) i++;
  const commands: string[] = [];
  for (; i < lines.length && lines[i].startsWith("#   "); i++) commands.push(lines[i].slice(4));
  assert.ok(commands.length > 0, "no install commands");
  return commands;
}

/**
 * Deno as the README installs it: `$(npm prefix -g)/bin/deno`. Installed the
 * README's way (as .ci/run does) when it is not there and this is root.
 */
async function npmInstalledDeno(wantDeno: string): Promise<string> {
  const prefix = await run("npm", ["prefix", "-g"]);
  assert.equal(prefix.code, 0, prefix.stderr);
  const deno = `${prefix.stdout.trim()}/bin/deno`;
  const installed = async () => (await run(deno, ["--version"]).catch(() => null))?.stdout ?? "";
  if (!(await installed()).startsWith(`deno ${wantDeno} `) && Deno.uid() === 0) {
    const r = await run("npm", ["install", "-g", "--allow-scripts=deno", `deno@${wantDeno}`]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
  }
  assert.match(
    await installed(),
    new RegExp(`^deno ${wantDeno.replaceAll(".", "\\.")} `),
    `${deno} is not Deno ${wantDeno}: install it as the README says, npm install -g deno@${wantDeno}`,
  );
  return deno;
}

/** The program systemd runs for a command named `name` without a path, as it finds it. */
async function systemdLookup(name: string): Promise<string | undefined> {
  for (const dir of SYSTEMD_SEARCH_PATH) {
    const info = await Deno.stat(`${dir}/${name}`).catch(() => null);
    if (info?.isFile && (info.mode ?? 0) & 0o111) return Deno.realPath(`${dir}/${name}`);
  }
  return undefined;
}

/** Programs of the install commands that only a real root may run, as no-ops (their calls logged). */
async function installShims(dir: string): Promise<void> {
  await Deno.mkdir(dir, { recursive: true });
  for (const name of ["useradd", "systemctl", "chown", "chgrp"]) {
    await Deno.writeTextFile(`${dir}/${name}`, `#!/bin/sh\necho "${name} $*" >> "${dir}/calls"\n`, {
      mode: 0o755,
    });
  }
  // install(1) without -o/-g: the owners are users this machine does not have.
  await Deno.writeTextFile(
    `${dir}/install`,
    `#!/bin/sh
for a in "$@"; do
  shift
  if [ -n "$skip" ]; then skip=; continue; fi
  case "$a" in -o|-g) skip=1 ;; *) set -- "$@" "$a" ;; esac
done
exec /usr/bin/install "$@"
`,
    { mode: 0o755 },
  );
}

Deno.test({
  ...needs(
    "#28.5: deploy: installed as the README and the units say, the units find Deno and the copied config passes --check",
    "npx",
    "systemd-analyze",
    "openssl",
  ),
  fn: async () => {
    const ciRun = await Deno.readTextFile(`${ROOT}.ci/run`);
    const wantDeno = /^want_deno="([^"]+)"/m.exec(ciRun)![1];
    const readme = await Deno.readTextFile(`${ROOT}README.md`);
    assert.ok(readme.includes(`npm install -g deno@${wantDeno}`), "the README installs Deno so");
    const deno = await npmInstalledDeno(wantDeno);
    // The units name `deno` bare: systemd must find npm's Deno in its fixed search path.
    assert.ok(
      SYSTEMD_SEARCH_PATH.includes(deno.slice(0, deno.lastIndexOf("/"))),
      `npm puts deno in ${deno}, outside systemd's search path ${SYSTEMD_SEARCH_PATH.join(":")}`,
    );
    assert.equal(
      await systemdLookup("deno"),
      await Deno.realPath(deno),
      "systemd finds npm's deno",
    );

    const root = await Deno.makeTempDir({ prefix: "spooky-install-" });
    try {
      const certs = await testCerts();
      const shims = `${root}/.shims`;
      await installShims(shims);
      await Deno.mkdir(`${root}/etc/systemd/system`, { recursive: true });
      const inRoot = (text: string) =>
        text.replaceAll("/etc/", `${root}/etc/`).replaceAll("/opt/spooky/", ROOT);
      for (const name of ["spooky.service", "payments.service"]) {
        const unit = await Deno.readTextFile(`${DEPLOY}${name}`);
        const script = ["set -eu", ...installCommands(unit).map(inRoot)].join("\n");
        // From the checkout (the commands name examples/... relative to it).
        const r = await run("sh", ["-c", script], {
          cwd: ROOT,
          env: {
            PATH: `${shims}:${deno.slice(0, deno.lastIndexOf("/"))}:${Deno.env.get("PATH")}`,
            CERT: certs.certPath,
            KEY: certs.keyPath,
            NO_COLOR: "1",
          },
        });
        assert.equal(
          r.code,
          0,
          `${name}'s install commands failed:\n${script}\n${r.stdout}${r.stderr}`,
        );
        assert.equal(await Deno.readTextFile(`${root}/etc/systemd/system/${name}`), unit);
      }
      const copied = `${root}/etc/spooky/proxy.yaml`;
      const example = await Deno.readTextFile(`${ROOT}examples/proxy.yaml`);
      assert.equal(await Deno.readTextFile(copied), example);
      // No placeholder secret that every copy would share.
      assert.doesNotMatch(example, /^\s*token:/m);
      assert.match(
        await Deno.readTextFile(`${root}/etc/payments/env`),
        /^PAYMENTS_TOKENS=[0-9a-f]{32}$/m,
      );

      // systemd-analyze verify, on the copies as they are: `deno` resolved by systemd.
      const units = ["spooky.service", "payments.service"].map((n) =>
        `${root}/etc/systemd/system/${n}`
      );
      const verify = await run("systemd-analyze", ["verify", ...units]);
      assert.equal(verify.code, 0, verify.stderr);
      assert.equal(verify.stderr + verify.stdout, "", "systemd-analyze verify has a complaint");

      // The unit's own ExecStartPre on the copied file, with the Deno systemd finds.
      const unit = await Deno.readTextFile(units[0]);
      const pre = /^ExecStartPre=deno (.*)$/m.exec(unit);
      assert.ok(pre, "ExecStartPre runs deno");
      const check = await run(deno, inRoot(pre[1]).split(" "), { cwd: ROOT });
      assert.equal(check.code, 0, check.stdout + check.stderr);
      assert.equal(check.stdout.trim(), `Configuration validation successful: ${copied}`);
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  },
});

/** One instruction of a container file. */
interface Instruction {
  op: string;
  arg: string;
}

/** Parses a container file: instructions with their arguments (continuations joined, comments dropped). */
export function parseContainerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  let pending = "";
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (pending === "" && (line === "" || line.startsWith("#"))) continue;
    if (line.endsWith("\\")) {
      pending += line.slice(0, -1) + " ";
      continue;
    }
    const full = pending + line;
    pending = "";
    const m = /^([A-Za-z]+)\s+(.*)$/.exec(full);
    assert.ok(m, `cannot parse: ${full}`);
    out.push({ op: m[1].toUpperCase(), arg: m[2].trim() });
  }
  return out;
}

/** Carries out a container file's build against the repository in `root` (the image's `/`). */
async function build(file: string, root: string) {
  const steps = parseContainerfile(await Deno.readTextFile(`${DEPLOY}${file}`));
  const ciRun = await Deno.readTextFile(`${ROOT}.ci/run`);
  const wantDeno = /^want_deno="([^"]+)"/m.exec(ciRun)![1];
  let workdir = "/";
  let cmd: string[] | undefined;
  let healthcheck: string[] | undefined;
  let user: string | undefined;
  const env: Record<string, string> = {};
  // The image's user does not exist here: chown to it is a no-op.
  const shims = `${root}/.shims`;
  await Deno.mkdir(shims);
  if ((await run("id", ["deno"])).code !== 0) {
    await Deno.writeTextFile(`${shims}/chown`, "#!/bin/sh\nexit 0\n", { mode: 0o755 });
  }
  const at = (p: string) => `${root}${p.startsWith("/") ? p : `${workdir}/${p}`}`;
  for (const { op, arg } of steps) {
    switch (op) {
      case "FROM":
        assert.equal(arg, `docker.io/denoland/deno:${wantDeno}`, "the Deno CI tests with");
        break;
      case "WORKDIR":
        workdir = arg.startsWith("/") ? arg : `${workdir}/${arg}`;
        await Deno.mkdir(at(workdir), { recursive: true });
        break;
      case "ENV": {
        const [k, ...v] = arg.split(/[= ]/);
        env[k] = v.join("=");
        break;
      }
      case "COPY": {
        const parts = arg.split(/\s+/);
        const dest = parts.pop()!;
        for (const src of parts) {
          const from = `${ROOT}${src.replace(/\/$/, "")}`;
          let r;
          if ((await Deno.stat(from)).isDirectory) {
            // A directory's contents go into the destination directory.
            await Deno.mkdir(at(dest), { recursive: true });
            r = await run("cp", ["-R", `${from}/.`, at(dest)]);
          } else {
            const target = dest.endsWith("/") ? `${at(dest)}${src.split("/").pop()}` : at(dest);
            await Deno.mkdir(target.slice(0, target.lastIndexOf("/")), { recursive: true });
            r = await run("cp", [from, target]);
          }
          assert.equal(r.code, 0, r.stderr);
        }
        break;
      }
      case "RUN": {
        const r = await run("sh", ["-c", arg], {
          cwd: at(workdir),
          env: { ...env, PATH: `${shims}:${Deno.env.get("PATH")}`, NO_COLOR: "1" },
        });
        assert.equal(r.code, 0, `RUN ${arg}\n${r.stdout}${r.stderr}`);
        break;
      }
      case "USER":
        user = arg;
        break;
      case "CMD":
        cmd = JSON.parse(arg);
        break;
      case "HEALTHCHECK": {
        // Options (--interval=10s ...), then CMD and its exec form.
        const m = /^(?:--[a-z-]+=\S+\s+)*CMD\s+(\[.*\])$/.exec(arg);
        assert.ok(m, `HEALTHCHECK not understood: ${arg}`);
        healthcheck = JSON.parse(m[1]);
        break;
      }
      case "EXPOSE":
      case "VOLUME":
        break;
      default:
        assert.fail(`instruction ${op} not understood by this test`);
    }
  }
  assert.ok(cmd, "no CMD");
  assert.equal(user, "deno", "runs as the image's unprivileged user");
  return { cmd, healthcheck, cwd: at(workdir), env };
}

/** Runs CMD until it prints `Listening on …:<port>`, then stops it with SIGTERM; exit 0 expected. */
async function runUntilListening(
  cmd: string[],
  cwd: string,
  env: Record<string, string>,
  probe?: (port: number, output: string) => Promise<void>,
): Promise<{ port: number; code: number; output: string }> {
  const child = new Deno.Command(cmd[0] === "deno" ? Deno.execPath() : cmd[0], {
    args: cmd.slice(1),
    cwd,
    env: { ...env, NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
    stdin: "null",
  }).spawn();
  let output = "";
  let port = 0;
  const stderr = new Response(child.stderr).text();
  const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
  try {
    for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
      output += chunk;
      const m = /^Listening on .*:(\d+)$/m.exec(output);
      if (m) {
        port = Number(m[1]);
        break;
      }
    }
    if (port > 0) await probe?.(port, output);
    child.kill("SIGTERM");
    const code = (await child.status).code;
    return { port, code, output: output + (await stderr) };
  } finally {
    clearTimeout(timer);
  }
}

Deno.test("deploy: proxy.Containerfile builds from what it copies, and its CMD serves", async () => {
  const root = await Deno.makeTempDir({ prefix: "spooky-image-" });
  try {
    const { cmd, healthcheck, cwd, env } = await build("proxy.Containerfile", root);
    const certs = await testCerts();
    const config = `${root}/proxy.yaml`;
    await Deno.writeTextFile(
      config,
      `version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tcp_fallback: true, tls: {cert: "${certs.certPath}", key: "${certs.keyPath}"}}
upstream:
  root: {route: {path_prefix: /}, backends: [{id: b0, address: "127.0.0.1:1"}]}
admin: {port: 0}
`,
    );
    assert.ok(cmd.includes("/etc/spooky/proxy.yaml"));
    // #30.6: the HEALTHCHECK asks /ready on the admin port: 0 while ready, 1 with no admin there.
    assert.ok(healthcheck, "the image has a HEALTHCHECK");
    const check = (adminPort: number) =>
      run(
        healthcheck[0] === "deno" ? Deno.execPath() : healthcheck[0],
        healthcheck.slice(1).map((a) => a.replace("127.0.0.1:9901", `127.0.0.1:${adminPort}`)),
        { cwd, env: { ...env, NO_COLOR: "1" } },
      );
    assert.ok(healthcheck.some((a) => a.includes("127.0.0.1:9901/ready")), healthcheck.join(" "));
    const r = await runUntilListening(
      cmd.map((a) => a === "/etc/spooky/proxy.yaml" ? config : a),
      cwd,
      env,
      async (_port, output) => {
        const adminPort = Number(/^Admin listening on .*:(\d+)$/m.exec(output)?.[1]);
        assert.ok(adminPort > 0, output);
        const ready = await check(adminPort);
        assert.equal(ready.code, 0, ready.stdout + ready.stderr);
        const closed = await check(1);
        assert.equal(closed.code, 1, "no admin listener: unhealthy");
      },
    );
    assert.ok(r.port > 0, r.output);
    assert.equal(r.code, 0, r.output);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("deploy: payments.Containerfile builds from what it copies, and its CMD serves", async () => {
  const root = await Deno.makeTempDir({ prefix: "payments-image-" });
  try {
    const { cmd, cwd, env } = await build("payments.Containerfile", root);
    const args = [...cmd];
    args[args.indexOf("--hostname") + 1] = "127.0.0.1";
    args[args.indexOf("--port") + 1] = "0";
    // It serves: /health answers before the SIGTERM that stops it.
    const r = await runUntilListening(
      args,
      cwd,
      { ...env, PAYMENTS_TOKENS: "deploy-test" },
      async (port) => {
        const res = await fetch(`http://127.0.0.1:${port}/health`);
        await res.body?.cancel();
        assert.equal(res.status, 200);
      },
    );
    assert.ok(r.port > 0, r.output);
    assert.equal(r.code, 0, r.output);
    // The KV store is where the volume is.
    assert.ok((await Deno.stat(`${cwd}/data/payments.kv`)).isFile);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
