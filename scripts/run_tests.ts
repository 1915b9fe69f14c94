/**
 * `deno task test`: the tool check (`scripts/check_tools.ts`), then
 * `deno test -A --parallel`, then one closing line: how many tests ran, how
 * many were skipped and why.
 *
 * Usage: `deno task test [--quick] [--no-install] [deno test arguments]`
 * - default: every test; a missing program is installed first (when this
 *   process may) or stops the run before any test with one message;
 * - `--quick`: no tool check; the unit tests alone (the `*_test.ts` files
 *   beside the code, not `tests/`) unless paths are given; a test whose
 *   program is missing is skipped, and named with the reason;
 * - `--no-install` (or `SPOOKY_TEST_NO_INSTALL=1`): the check installs nothing;
 * - anything else goes to `deno test` (paths, `--filter`, ...).
 *
 * Tests declare their programs with `tests/support/tools.ts`, which skips
 * only in a `--quick` run ({@link QUICK_ENV}) and writes why to the file
 * named by {@link SKIP_LOG_ENV}, read back here for the closing line.
 *
 * @module
 */
// deno-lint-ignore-file no-console

import { ensureTools, installForbiddenByEnv } from "./check_tools.ts";
import { writeAll } from "../shared/bytes.ts";

const ROOT = new URL("../", import.meta.url).pathname;

/** Set to `1` in the tests' environment by a `--quick` run. */
export const QUICK_ENV = "SPOOKY_TEST_QUICK";
/** The file (JSON lines `{test, reason}`) where tests write why they skipped. */
export const SKIP_LOG_ENV = "SPOOKY_TEST_SKIP_LOG";

/** Top-level entries that hold no unit tests (`tests/` is the end-to-end suite). */
const NOT_UNIT = new Set(["tests", "dist", "data", "node_modules", "docs"]);

/** The runner's own options, and what goes on to `deno test`. */
export interface RunOptions {
  quick: boolean;
  noInstall: boolean;
  help: boolean;
  denoTestArgs: string[];
}

/** Splits the task's arguments into the runner's options and `deno test`'s. */
export function parseArgs(args: readonly string[]): RunOptions {
  const own = new Set(["--quick", "--no-install", "--help", "-h"]);
  return {
    quick: args.includes("--quick"),
    noInstall: args.includes("--no-install"),
    help: args.includes("--help") || args.includes("-h"),
    denoTestArgs: args.filter((a) => !own.has(a)),
  };
}

/** `deno test`'s closing counts. */
export interface TestSummary {
  ok: boolean;
  passed: number;
  failed: number;
  ignored: number;
  ignoredSteps: number;
}

// deno-lint-ignore no-control-regex
const ANSI = /\x1b\[[0-9;]*m/g;

/** The counts of `deno test`'s closing line (`ok | 3 passed | 0 failed | 1 ignored (9ms)`). */
export function parseSummary(line: string): TestSummary | undefined {
  const m =
    /^(ok|FAILED) \| (\d+) passed(?: \(\d+ steps?\))? \| (\d+) failed(?: \(\d+ steps?\))?(?: \| (\d+) ignored(?: \((\d+) steps?\))?)?/
      .exec(line.replace(ANSI, "").trim());
  if (!m) return undefined;
  return {
    ok: m[1] === "ok",
    passed: Number(m[2]),
    failed: Number(m[3]),
    ignored: Number(m[4] ?? 0),
    ignoredSteps: Number(m[5] ?? 0),
  };
}

/** The test (or `test ... step`) an `... ignored` report line names, without its file. */
export function parseIgnored(line: string): string | undefined {
  const m = /^(?:\S+ => ?)?(.*?) \.\.\. ignored \(/.exec(line.replace(ANSI, "").trim());
  return m?.[1].trim();
}

/** One skip a test explained: its name and why. */
export interface SkipNote {
  test: string;
  reason: string;
}

/** Reads the skip log (JSON lines); a line that does not parse is left out. */
export function parseSkipLog(text: string): SkipNote[] {
  const notes: SkipNote[] = [];
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    try {
      const v = JSON.parse(line);
      if (typeof v.test === "string" && typeof v.reason === "string") notes.push(v);
    } catch {
      // a torn line: the skip is still counted, under "no reason given"
    }
  }
  return notes;
}

/** Why each ignored test was skipped: its note, or "no reason given". */
export function skipReasons(ignored: readonly string[], notes: readonly SkipNote[]): SkipNote[] {
  return ignored.map((test) => {
    const note = notes.find((n) =>
      test === n.test || test.startsWith(`${n.test} ... `) || test.endsWith(` ... ${n.test}`)
    );
    return { test, reason: note?.reason ?? "no reason given" };
  });
}

/**
 * The closing line: `1140 tests ran (1140 passed, 0 failed); 3 skipped: 2 not installed
 * (--quick): promtool (Debian prometheus), openssl (Debian openssl); 1 opt-in (...): ...`.
 * Reasons are grouped by what comes before their first `: `.
 */
export function closingLine(summary: TestSummary, skips: readonly SkipNote[]): string {
  const ran = summary.passed + summary.failed;
  const head = `${ran} tests ran (${summary.passed} passed, ${summary.failed} failed)`;
  const skipped = Math.max(summary.ignored + summary.ignoredSteps, skips.length);
  if (skipped === 0) return `${head}; none skipped`;
  const unnamed = skipped - skips.length;
  const reasons = [
    ...skips.map((s) => s.reason),
    ...Array<string>(unnamed).fill("no reason given"),
  ];
  const groups = new Map<string, { count: number; details: Set<string> }>();
  for (const reason of reasons) {
    const at = reason.indexOf(": ");
    const kind = at < 0 ? reason : reason.slice(0, at);
    const group = groups.get(kind) ?? { count: 0, details: new Set() };
    group.count++;
    if (at >= 0) group.details.add(reason.slice(at + 2));
    groups.set(kind, group);
  }
  const why = [...groups].map(([kind, g]) =>
    `${g.count} ${kind}${g.details.size > 0 ? `: ${[...g.details].join(", ")}` : ""}`
  );
  return `${head}; ${skipped} skipped: ${why.join("; ")}`;
}

/** The unit-test folders (absolute): every top-level folder but `tests/` and generated ones. */
export function unitTestDirs(root: string = ROOT): string[] {
  const dirs: string[] = [];
  for (const e of Deno.readDirSync(root)) {
    if (e.isDirectory && !e.name.startsWith(".") && !NOT_UNIT.has(e.name)) {
      dirs.push(`${root}${e.name}/`);
    }
  }
  return dirs.sort();
}

/** Whether an argument names a file or folder (a path for `deno test`). */
function isPath(arg: string): boolean {
  if (arg.startsWith("-")) return false;
  try {
    Deno.statSync(arg);
    return true;
  } catch {
    return false;
  }
}

/** How long output may still come after `deno test` exits (a leaked grandchild holds the pipe). */
const DRAIN_MS = 2_000;

/** Runs `deno test`, copying its output through and keeping what the closing line needs. */
async function denoTest(args: string[], env: Record<string, string>) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["test", "-A", "--parallel", ...args],
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  let summary: TestSummary | undefined;
  const ignored: string[] = [];
  const lines = new LineSplitter((line) => {
    summary = parseSummary(line) ?? summary;
    const name = parseIgnored(line);
    if (name !== undefined) ignored.push(name);
  });
  const reader = child.stdout.getReader();
  const copying = (async () => {
    for (let r = await reader.read(); !r.done; r = await reader.read()) {
      await writeAll(Deno.stdout, r.value);
      lines.push(r.value);
    }
  })();
  const { code } = await child.status;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const drained = new Promise<void>((resolve) => timer = setTimeout(resolve, DRAIN_MS));
  await Promise.race([copying, drained]);
  clearTimeout(timer);
  await reader.cancel().catch(() => {});
  await copying.catch(() => {});
  lines.end();
  return { code, summary, ignored };
}

/** Feeds the complete lines of a byte stream to `onLine`. */
class LineSplitter {
  #pending = "";
  readonly #decoder = new TextDecoder();
  constructor(private readonly onLine: (line: string) => void) {}

  push(bytes: Uint8Array): void {
    const lines = (this.#pending + this.#decoder.decode(bytes, { stream: true })).split("\n");
    this.#pending = lines.pop() ?? "";
    lines.forEach(this.onLine);
  }

  end(): void {
    this.onLine(this.#pending + this.#decoder.decode());
    this.#pending = "";
  }
}

const USAGE = `Usage: deno task test [--quick] [--no-install] [deno test arguments]
  (default)     check for every program the tests run (installing the missing ones with
                apt-get as root or with passwordless sudo), then run every test
  --quick       no tool check: the unit tests alone (not tests/), unless paths are given;
                a test whose program is missing is skipped and named
  --no-install  never install (also: SPOOKY_TEST_NO_INSTALL=1)
  Anything else goes to deno test (paths, --filter NAME, ...).`;

async function main(): Promise<number> {
  const opts = parseArgs(Deno.args);
  if (opts.help) {
    console.log(USAGE);
    return 0;
  }
  if (!opts.quick) {
    const ok = await ensureTools({ forbidInstall: opts.noInstall || installForbiddenByEnv() });
    if (!ok) return 1;
  }
  const paths = opts.quick && !opts.denoTestArgs.some(isPath) ? unitTestDirs() : [];
  const skipLog = await Deno.makeTempFile({ prefix: "spooky-test-skips-" });
  try {
    const env: Record<string, string> = { [SKIP_LOG_ENV]: skipLog };
    if (opts.quick) env[QUICK_ENV] = "1";
    const run = await denoTest([...opts.denoTestArgs, ...paths], env);
    if (!run.summary) {
      console.log(`deno test exited with code ${run.code} before its closing line`);
      return run.code === 0 ? 1 : run.code;
    }
    const skips = skipReasons(run.ignored, parseSkipLog(await Deno.readTextFile(skipLog)));
    for (const s of skips) console.log(`skipped: ${s.test}: ${s.reason}`);
    console.log(closingLine(run.summary, skips));
    return run.code;
  } finally {
    await Deno.remove(skipLog).catch(() => {});
  }
}

if (import.meta.main) Deno.exit(await main());
