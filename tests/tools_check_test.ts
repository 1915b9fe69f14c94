/**
 * The tool check (scripts/check_tools.ts) and the test command around it
 * (scripts/run_tests.ts), run as child processes with `PATH` holding only
 * the deno binary and stand-ins for `apt-get` and `sudo` that record their
 * calls: so nothing is installed, and the check finds every program of
 * scripts/tools.ts missing. Bounds are far from what they separate: the
 * check answers in well under a second; the bound is 20 s.
 */
import assert from "node:assert/strict";
import { installCommand, NO_INSTALL_ENV, packagesOf } from "../scripts/check_tools.ts";
import { TOOLS } from "../scripts/tools.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const WITHIN_MS = 20_000;

interface Sandbox {
  /** The only directory on `PATH`: deno, and the recording `apt-get` and `sudo`. */
  bin: string;
  /** One line per call of the stand-ins: `apt-get update -qq`, `sudo -n true`, ... */
  calls(): Promise<string[]>;
  remove(): Promise<void>;
}

async function sandbox(): Promise<Sandbox> {
  const dir = await Deno.makeTempDir({ prefix: "spooky-tools-" });
  const bin = `${dir}/bin`;
  const log = `${dir}/calls.log`;
  await Deno.mkdir(bin);
  await Deno.writeTextFile(log, "");
  await Deno.symlink(Deno.execPath(), `${bin}/deno`);
  // apt-get "succeeds" without installing anything; sudo runs its command (passwordless).
  await Deno.writeTextFile(`${bin}/apt-get`, `#!/bin/sh\necho "apt-get $*" >> '${log}'\n`, {
    mode: 0o755,
  });
  await Deno.writeTextFile(
    `${bin}/sudo`,
    `#!/bin/sh\necho "sudo $*" >> '${log}'\n[ "$1" = -n ] && shift\n"$@"\n`,
    { mode: 0o755 },
  );
  return {
    bin,
    calls: async () => (await Deno.readTextFile(log)).split("\n").filter((l) => l !== ""),
    remove: () => Deno.remove(dir, { recursive: true }),
  };
}

/** Runs `args` (a deno subcommand) with `PATH` = the sandbox's bin and nothing else inherited. */
async function runStripped(box: Sandbox, args: string[], env: Record<string, string> = {}) {
  const home = Deno.env.get("HOME") ?? "/root";
  const denoDir = Deno.env.get("DENO_DIR");
  const started = performance.now();
  const out = await new Deno.Command(`${box.bin}/deno`, {
    args,
    cwd: ROOT,
    clearEnv: true,
    env: {
      PATH: box.bin,
      HOME: home,
      NO_COLOR: "1",
      ...(denoDir ? { DENO_DIR: denoDir } : {}),
      ...env,
    },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(120_000),
  }).output();
  const dec = new TextDecoder();
  const stdout = dec.decode(out.stdout);
  return {
    code: out.code,
    ms: performance.now() - started,
    stdout,
    text: stdout + dec.decode(out.stderr),
  };
}

/** Every program with its package, one line each, and the one command installing them all. */
function assertNamesEverything(text: string): void {
  for (const t of TOOLS) {
    assert.match(
      text,
      new RegExp(`^\\s+${t.program}\\s+Debian package ${t.debianPackage}\\b`, "m"),
      `${t.program} (${t.debianPackage}) not named in:\n${text}`,
    );
  }
  const asRoot = Deno.uid() === 0;
  assert.ok(text.includes(installCommand(packagesOf(TOOLS), asRoot)), text);
}

Deno.test("#34.1: the tool check alone, PATH stripped and installing forbidden: every missing program, its package and the install command; exit 1 within seconds; nothing installed", async () => {
  const box = await sandbox();
  try {
    const r = await runStripped(box, ["run", "-A", "scripts/check_tools.ts"], {
      [NO_INSTALL_ENV]: "1",
    });
    assert.equal(r.code, 1, r.text);
    assert.ok(r.ms < WITHIN_MS, `${r.ms} ms`);
    assertNamesEverything(r.text);
    assert.match(
      r.text,
      new RegExp(`installing is turned off \\(--no-install or ${NO_INSTALL_ENV}\\)`),
    );
    assert.deepEqual(await box.calls(), [], "apt-get or sudo was called");
    // --no-install says the same.
    const flag = await runStripped(box, ["run", "-A", "scripts/check_tools.ts", "--no-install"]);
    assert.equal(flag.code, 1, flag.text);
    assertNamesEverything(flag.text);
    assert.deepEqual(await box.calls(), [], "apt-get or sudo was called");
  } finally {
    await box.remove();
  }
});

Deno.test("#34.2: allowed to install (root, or passwordless sudo), the check says what it installs, runs apt-get for exactly the missing packages, and fails when they did not appear", async () => {
  const box = await sandbox();
  try {
    const r = await runStripped(box, ["run", "-A", "scripts/check_tools.ts"]);
    assert.equal(r.code, 1, r.text);
    assert.ok(r.ms < WITHIN_MS, `${r.ms} ms`);
    const packages = packagesOf(TOOLS);
    assert.match(r.text, /^Installing the Debian packages of the programs the tests need: /m);
    for (const t of TOOLS) {
      assert.ok(r.text.includes(`${t.debianPackage} (${t.program})`), t.program);
    }
    const prefix = Deno.uid() === 0 ? "" : "sudo -n ";
    const calls = (await box.calls()).filter((c) => c !== "sudo -n true");
    const aptCalls = calls.map((c) => c.replace(/^sudo -n /, ""));
    assert.deepEqual(aptCalls, [
      "apt-get update -qq",
      `apt-get install -y -qq --no-install-recommends ${packages.join(" ")}`,
    ]);
    assert.ok(calls.every((c) => c.startsWith(prefix)), calls.join("\n"));
    // Still missing afterwards: the same one message, with why.
    assertNamesEverything(r.text);
    assert.match(r.text, /Not installed here: apt-get install did not provide them/);
  } finally {
    await box.remove();
  }
});

Deno.test("#34.3: deno task test with programs missing stops before any test runs, with the one message", async () => {
  const box = await sandbox();
  try {
    // One small file: were the check skipped, this would run it, not the whole suite.
    const r = await runStripped(box, ["task", "test", "scripts/check_tools_test.ts"], {
      [NO_INSTALL_ENV]: "1",
    });
    assert.equal(r.code, 1, r.text);
    assert.ok(r.ms < WITHIN_MS, `${r.ms} ms`);
    assertNamesEverything(r.text);
    assert.doesNotMatch(r.text, /running \d+ tests?|^(ok|FAILED) \|/m, "tests ran");
    assert.deepEqual(await box.calls(), []);
  } finally {
    await box.remove();
  }
});

Deno.test("#34.5: --quick skips a test whose program is missing, names it and why in the closing line", async () => {
  const box = await sandbox();
  const file = await Deno.makeTempFile({ prefix: "spooky-quick-", suffix: "_test.ts" });
  try {
    const tools = new URL("./support/tools.ts", import.meta.url).href;
    await Deno.writeTextFile(
      file,
      `import { needs } from "${tools}";
Deno.test({ ...needs("quick fixture: needs promtool", "promtool"), fn() {} });
Deno.test("quick fixture: needs nothing", () => {});
`,
    );
    const r = await runStripped(box, ["run", "-A", "scripts/run_tests.ts", "--quick", file]);
    assert.equal(r.code, 0, r.text);
    const reason = "not installed (--quick): promtool (Debian prometheus)";
    assert.match(
      r.text,
      new RegExp(`^skipped: quick fixture: needs promtool: ${escape(reason)}$`, "m"),
    );
    const closing = r.stdout.trimEnd().split("\n").at(-1);
    assert.equal(closing, `1 tests ran (1 passed, 0 failed); 1 skipped: 1 ${reason}`);
    assert.deepEqual(await box.calls(), [], "--quick checks no tools");
    // Without --quick (as deno test alone would), the same test is not skipped: it runs.
    const full = await runStripped(box, ["test", "-A", file]);
    assert.match(full.text, /^ok \| 2 passed \| 0 failed/m, full.text);
  } finally {
    await Deno.remove(file);
    await box.remove();
  }
});

Deno.test("#34.6: .ci/run keeps no list of its own: it runs the same tool check as the test task", async () => {
  const ci = await Deno.readTextFile(`${ROOT}.ci/run`);
  assert.match(ci, /^deno task tools\b/m);
  assert.doesNotMatch(ci, /apt-get install|declare -A/);
  for (const t of TOOLS) assert.ok(!ci.includes(`[${t.program}]=`), t.program);
  const tasks = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`)).tasks;
  assert.equal(tasks.tools, "deno run -A scripts/check_tools.ts");
  assert.match(tasks.test, /^deno run -A scripts\/run_tests\.ts$/);
});

/** Programs every Debian system has, and the opt-in Java SDK test's own. */
const NOT_LISTED = new Set(["bash", "sh", "cp", "mkfifo", "id", "java", "javac"]);

Deno.test("#34.7: every program a test spawns by name is in scripts/tools.ts", async () => {
  const listed = new Set(TOOLS.map((t) => t.program));
  const unknown: string[] = [];
  for await (const file of testFiles(ROOT)) {
    const text = await Deno.readTextFile(file);
    for (const m of text.matchAll(/(?:new Deno\.Command|\bspawn|\brun)\(\s*"([a-z][\w.-]*)"/g)) {
      if (!listed.has(m[1]) && !NOT_LISTED.has(m[1])) {
        unknown.push(`${file.slice(ROOT.length)}: ${m[1]}`);
      }
    }
  }
  assert.deepEqual(unknown, []);
});

async function* testFiles(dir: string): AsyncGenerator<string> {
  for await (const e of Deno.readDir(dir)) {
    if (e.name.startsWith(".") || ["node_modules", "dist", "data"].includes(e.name)) continue;
    const path = `${dir}${e.name}`;
    if (e.isDirectory) yield* testFiles(`${path}/`);
    else if (e.name.endsWith(".ts") && (path.includes("/tests/") || e.name.endsWith("_test.ts"))) {
      yield path;
    }
  }
}

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
