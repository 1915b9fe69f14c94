/**
 * The tool check: every program of `scripts/tools.ts` must be on `PATH`
 * before a test runs. What is missing is installed with `apt-get` when this
 * process may (as root, or with passwordless `sudo`), saying what it
 * installs; otherwise the check stops at once with one message naming the
 * missing programs, their Debian packages and the command that installs
 * them. `deno task test` runs it first; `.ci/run` runs it alone.
 *
 * Usage: `deno run -A scripts/check_tools.ts [--no-install]`: exit 0 when
 * every program is there (after installing), 1 otherwise. `--no-install`, or
 * `SPOOKY_TEST_NO_INSTALL=1` in the environment, forbids installing.
 *
 * @module
 */
// deno-lint-ignore-file no-console

import { type Tool, TOOLS } from "./tools.ts";

/** The environment variable that forbids installing (any value but empty or `0`). */
export const NO_INSTALL_ENV = "SPOOKY_TEST_NO_INSTALL";

/** How long `sudo -n true` may take to say whether sudo needs a password. */
const SUDO_PROBE_MS = 5_000;

/**
 * The path of `program` on `path` (a `PATH` value), or `undefined` when no
 * directory has it. Deno's own stand-ins do not count: where `node` is
 * missing, Deno puts a `node` that is Deno itself on its children's `PATH`,
 * which is not the independent implementation the tests want.
 */
export function findOnPath(
  program: string,
  path: string = Deno.env.get("PATH") ?? "",
): string | undefined {
  for (const dir of path.split(":")) {
    if (dir === "") continue;
    const candidate = `${dir}/${program}`;
    try {
      const info = Deno.statSync(candidate);
      if (!info.isFile || ((info.mode ?? 0o111) & 0o111) === 0) continue;
      if (program !== "deno" && isDeno(Deno.realPathSync(candidate))) continue;
      return candidate;
    } catch {
      // not in this directory
    }
  }
  return undefined;
}

function isDeno(path: string): boolean {
  return /\/deno(\.exe)?$/.test(path);
}

/**
 * Whether `tool` is installed: its program is found by `find`, or, for a
 * tool with a `probe`, that command exits 0.
 */
export function installed(
  tool: Tool,
  find: (program: string) => string | undefined = findOnPath,
): boolean {
  if (tool.probe === undefined) return find(tool.program) !== undefined;
  try {
    const [cmd, ...args] = tool.probe;
    return new Deno.Command(cmd, { args, stdin: "null", stdout: "null", stderr: "null" })
      .outputSync().success;
  } catch {
    return false; // the probe's program is missing
  }
}

/** The tools that are not installed (see {@link installed}). */
export function missingTools(
  tools: readonly Tool[] = TOOLS,
  find: (program: string) => string | undefined = findOnPath,
): Tool[] {
  return tools.filter((t) => !installed(t, find));
}

/** The Debian packages of `tools`, each once, in the order of the list. */
export function packagesOf(tools: readonly Tool[]): string[] {
  return [...new Set(tools.map((t) => t.debianPackage))];
}

/** The one command line that installs `packages` (with `sudo` unless run as root). */
export function installCommand(packages: readonly string[], asRoot: boolean): string {
  const sudo = asRoot ? "" : "sudo ";
  return `${sudo}apt-get update && ${sudo}apt-get install -y --no-install-recommends ` +
    packages.join(" ");
}

/** The message for programs that are missing and were not (or could not be) installed. */
export function missingMessage(missing: readonly Tool[], asRoot: boolean, why: string): string {
  const width = Math.max(...missing.map((t) => t.program.length));
  return [
    `The tests need ${missing.length} program(s) that are not installed:`,
    ...missing.map((t) =>
      `  ${t.program.padEnd(width)}  Debian package ${t.debianPackage}  (${t.usedFor})`
    ),
    `Not installed here: ${why}. Install them with:`,
    `  ${installCommand(packagesOf(missing), asRoot)}`,
    "then run the tests again; `deno task test --quick` runs the unit tests alone without them.",
  ].join("\n");
}

/** How packages may be installed here: a command prefix, or why they may not. */
export type InstallAccess = { prefix: string[] } | { refused: string };

/** Whether this process may install packages: not forbidden, `apt-get` there, root or sudo -n. */
export async function installAccess(forbidden: boolean): Promise<InstallAccess> {
  if (forbidden) return { refused: `installing is turned off (--no-install or ${NO_INSTALL_ENV})` };
  if (!findOnPath("apt-get")) return { refused: "apt-get is not on PATH (not a Debian system?)" };
  if (Deno.uid() === 0) return { prefix: [] };
  if (!findOnPath("sudo")) return { refused: "not root, and sudo is not installed" };
  const probe = await run(["sudo", "-n", "true"], SUDO_PROBE_MS);
  return probe.ok
    ? { prefix: ["sudo", "-n"] }
    : { refused: "not root, and sudo asks for a password" };
}

/** Runs `apt-get update` then `apt-get install` of `packages`; the output when one failed. */
export async function installPackages(prefix: readonly string[], packages: readonly string[]) {
  for (
    const args of [
      ["apt-get", "update", "-qq"],
      ["apt-get", "install", "-y", "-qq", "--no-install-recommends", ...packages],
    ]
  ) {
    const out = await run([...prefix, ...args]);
    if (!out.ok) return { ok: false, output: `${args.slice(0, 2).join(" ")}: ${out.output}` };
  }
  return { ok: true, output: "" };
}

/** The check itself; true when every program is on `PATH` at the end. */
export async function ensureTools(options: { forbidInstall: boolean }): Promise<boolean> {
  const missing = missingTools();
  if (missing.length === 0) {
    console.log(`All ${TOOLS.length} programs the tests run are installed (scripts/tools.ts).`);
    return true;
  }
  const asRoot = Deno.uid() === 0;
  const access = await installAccess(options.forbidInstall);
  if ("refused" in access) {
    console.error(missingMessage(missing, asRoot, access.refused));
    return false;
  }
  const packages = packagesOf(missing);
  console.log(
    `Installing the Debian packages of the programs the tests need: ` +
      missing.map((t) => `${t.debianPackage} (${t.program})`).join(", ") +
      `\n  ${installCommand(packages, asRoot)}`,
  );
  const installed = await installPackages(access.prefix, packages);
  const still = missingTools(missing);
  if (!installed.ok || still.length > 0) {
    const why = installed.ok ? "apt-get install did not provide them" : installed.output.trim();
    console.error(missingMessage(still.length > 0 ? still : missing, asRoot, why));
    return false;
  }
  console.log(`Installed: ${packages.join(" ")}`);
  return true;
}

/** Whether the environment forbids installing. */
export function installForbiddenByEnv(): boolean {
  const v = Deno.env.get(NO_INSTALL_ENV) ?? "";
  return v !== "" && v !== "0";
}

async function run(cmd: string[], timeoutMs?: number): Promise<{ ok: boolean; output: string }> {
  try {
    const out = await new Deno.Command(cmd[0], {
      args: cmd.slice(1),
      env: { DEBIAN_FRONTEND: "noninteractive" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      signal: timeoutMs ? AbortSignal.timeout(timeoutMs) : undefined,
    }).output();
    const dec = new TextDecoder();
    const text = (dec.decode(out.stdout) + dec.decode(out.stderr)).trim();
    return { ok: out.success, output: text.split("\n").slice(-20).join("\n") };
  } catch (err) {
    return { ok: false, output: `${cmd[0]}: ${err instanceof Error ? err.message : err}` };
  }
}

if (import.meta.main) {
  const args = Deno.args;
  const unknown = args.filter((a) => a !== "--no-install");
  if (unknown.length > 0) {
    console.error(`usage: deno run -A scripts/check_tools.ts [--no-install] (unknown: ${unknown})`);
    Deno.exit(2);
  }
  const ok = await ensureTools({
    forbidInstall: args.includes("--no-install") || installForbiddenByEnv(),
  });
  Deno.exit(ok ? 0 : 1);
}
