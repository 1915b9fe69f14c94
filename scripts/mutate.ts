/**
 * `deno task mutate`: checks that the tests defend the bounds they are meant
 * to. Each entry of `scripts/mutations.json` names a small plausible bug (an
 * exact string of a source file and what replaces it) and the test files that
 * must catch it. The script copies the working tree once into a temporary
 * directory, runs the named test files there unmutated (they must pass), then
 * applies each mutation in turn, runs its test files (they must fail) and
 * restores the file. It reports every mutant that survives, and every entry
 * whose `find` string no longer occurs exactly once (a stale entry), and
 * exits 1 if there is any.
 *
 * Usage: `deno task mutate [--filter TEXT] [--mutations FILE] [--timeout-ms N]
 * [--keep]` (`--filter`: only entries whose file or reason contains TEXT;
 * `--mutations`: another list, e.g. to try a new entry; `--keep`: leave the
 * temporary copy for inspection).
 *
 * @module
 */
// deno-lint-ignore-file no-console

/** One mutation: replace `find` (exactly one occurrence) in `file` by `replace`. */
export interface Mutation {
  /** Source file, relative to the repository root. */
  file: string;
  /** The exact text to replace; it must occur exactly once in the file. */
  find: string;
  /** What the mutant has instead. */
  replace: string;
  /** Test files (relative to the root) of which at least one test must fail. */
  tests: string[];
  /** The guard the mutation removes, and what a peer could do without it. */
  why: string;
  /** Time bound of the mutant's test run, in ms (default {@link DEFAULT_TIMEOUT_MS}). */
  timeoutMs?: number;
}

/** What became of one mutant. */
export type Verdict =
  | { kind: "killed"; failed: string[]; timedOut: boolean }
  | { kind: "survived" }
  | { kind: "stale"; occurrences: number }
  | { kind: "error"; detail: string };

/** A mutant and its verdict. */
export interface MutantResult {
  /** The entry. */
  mutation: Mutation;
  /** What happened. */
  verdict: Verdict;
  /** Time the test run took, in ms (0 when no test ran). */
  ms: number;
}

/** Default time bound of one mutant's test run. */
export const DEFAULT_TIMEOUT_MS = 60_000;

/** The mutation list of this repository. */
export const MUTATIONS_FILE: URL = new URL("./mutations.json", import.meta.url);

const KEYS = ["file", "find", "replace", "tests", "why", "timeoutMs"];

/**
 * Checks the shape of a parsed mutation list and returns it typed.
 *
 * @throws {TypeError} naming the entry (by index) and the field that is wrong.
 */
export function parseMutations(data: unknown): Mutation[] {
  if (!Array.isArray(data)) throw new TypeError("the mutation list must be a JSON array");
  return data.map((entry, i) => {
    const where = `mutation #${i}`;
    if (typeof entry !== "object" || entry === null || Array.isArray(entry)) {
      throw new TypeError(`${where}: must be an object`);
    }
    const e = entry as Record<string, unknown>;
    for (const k of Object.keys(e)) {
      if (!KEYS.includes(k)) throw new TypeError(`${where}: unknown key ${JSON.stringify(k)}`);
    }
    for (const k of ["file", "find", "why"]) {
      if (typeof e[k] !== "string" || e[k] === "") {
        throw new TypeError(`${where}: ${k} must be a non-empty string`);
      }
    }
    if (typeof e.replace !== "string") throw new TypeError(`${where}: replace must be a string`);
    if (e.replace === e.find) throw new TypeError(`${where}: replace is the same as find`);
    const tests = e.tests;
    if (
      !Array.isArray(tests) || tests.length === 0 ||
      !tests.every((t) => typeof t === "string" && t.endsWith("_test.ts"))
    ) {
      throw new TypeError(`${where}: tests must be a non-empty list of *_test.ts files`);
    }
    if (
      e.timeoutMs !== undefined &&
      !(typeof e.timeoutMs === "number" && Number.isInteger(e.timeoutMs) && e.timeoutMs > 0)
    ) {
      throw new TypeError(`${where}: timeoutMs must be a positive integer`);
    }
    return entry as Mutation;
  });
}

/** Reads and checks the mutation list at `url`. */
export async function loadMutations(url: URL = MUTATIONS_FILE): Promise<Mutation[]> {
  return parseMutations(JSON.parse(await Deno.readTextFile(url)));
}

/** How many times `find` occurs in `text` (occurrences may not overlap). */
export function occurrences(text: string, find: string): number {
  let n = 0;
  for (let i = text.indexOf(find); i !== -1; i = text.indexOf(find, i + find.length)) n++;
  return n;
}

/**
 * Classifies a finished `deno test` run: exit 0 is a surviving mutant; a run
 * with failed tests killed it (their names are returned); a failure without
 * any failed test (a module that did not load) is an error.
 */
export function classifyRun(code: number, output: string): Verdict {
  if (code === 0) return { kind: "survived" };
  const summary = /\|\s*\d+ passed[^|\n]*\|\s*(\d+) failed/.exec(output);
  if (summary === null || Number(summary[1]) === 0) {
    const tail = output.trim().split("\n").slice(-5).join("\n");
    return { kind: "error", detail: `the tests did not run:\n${tail}` };
  }
  const failures = output.slice(output.lastIndexOf("FAILURES"));
  const failed = failures.split("\n")
    .map((l) => /^(.+?) => \S+:\d+:\d+$/.exec(l.trim())?.[1])
    .filter((name): name is string => name !== undefined);
  return { kind: "killed", failed, timedOut: false };
}

/** The files of the working tree: tracked ones, and new ones git does not ignore. */
async function treeFiles(root: string): Promise<string[]> {
  const out = await new Deno.Command("git", {
    args: ["ls-files", "-z", "--cached", "--others", "--exclude-standard"],
    cwd: root,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (out.code !== 0) {
    throw new Error(`git ls-files failed in ${root}: ${new TextDecoder().decode(out.stderr)}`);
  }
  return [...new Set(new TextDecoder().decode(out.stdout).split("\0").filter((f) => f !== ""))];
}

/** Copies the working tree of `root` into a new temporary directory; returns its path. */
export async function copyTree(root: string): Promise<string> {
  const files = await treeFiles(root);
  const dir = await Deno.makeTempDir({ prefix: "spooky_mutate_" });
  const copyOne = async (f: string) => {
    const to = `${dir}/${f}`;
    await Deno.mkdir(to.slice(0, to.lastIndexOf("/")), { recursive: true });
    try {
      await Deno.copyFile(`${root}/${f}`, to);
    } catch (err) {
      // Deleted in the working tree but still in the index: not part of it.
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    }
  };
  for (let i = 0; i < files.length; i += 32) await Promise.all(files.slice(i, i + 32).map(copyOne));
  return dir;
}

/** Runs `deno test` on `tests` in `dir`, bounded by `timeoutMs`. */
async function runTests(dir: string, tests: string[], timeoutMs: number): Promise<Verdict> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["test", "-A", "--no-check", ...tests],
    cwd: dir,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill("SIGKILL");
  }, timeoutMs);
  try {
    const out = await child.output();
    if (timedOut) return { kind: "killed", failed: [], timedOut: true };
    const dec = new TextDecoder();
    return classifyRun(out.code, dec.decode(out.stdout) + dec.decode(out.stderr));
  } finally {
    clearTimeout(timer);
  }
}

/** Options of {@link runMutations}. */
export interface RunOptions {
  /** Repository root (a git work tree). */
  root: string;
  /** The mutations to try. */
  mutations: Mutation[];
  /** Default time bound of one test run, in ms. */
  timeoutMs?: number;
  /** Leave the temporary copy in place. */
  keep?: boolean;
  /** Progress lines. */
  log?: (line: string) => void;
}

/**
 * Runs every mutation in one temporary copy of `root`, one at a time. First
 * runs the union of their test files unmutated: if that fails, nothing is
 * mutated and the error is thrown (a mutant's failure would mean nothing).
 *
 * @throws {Error} when the copy cannot be made or the unmutated tests fail.
 */
export async function runMutations(opts: RunOptions): Promise<MutantResult[]> {
  const log = opts.log ?? (() => {});
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const dir = await copyTree(opts.root);
  try {
    const all = [...new Set(opts.mutations.flatMap((m) => m.tests))];
    log(`copied the tree to ${dir}; running the ${all.length} test files unmutated`);
    const base = await runTests(dir, all, timeoutMs * 2);
    if (base.kind !== "survived") {
      throw new Error(`the unmutated tests do not pass in the copy: ${describe(base)}`);
    }
    const results: MutantResult[] = [];
    for (const m of opts.mutations) {
      const result = await runOne(dir, m, m.timeoutMs ?? timeoutMs);
      log(formatResult(result));
      results.push(result);
    }
    return results;
  } finally {
    if (opts.keep) log(`kept the copy: ${dir}`);
    else await Deno.remove(dir, { recursive: true });
  }
}

async function runOne(dir: string, m: Mutation, timeoutMs: number): Promise<MutantResult> {
  const path = `${dir}/${m.file}`;
  let original: string;
  try {
    original = await Deno.readTextFile(path);
  } catch (err) {
    return { mutation: m, verdict: { kind: "error", detail: String(err) }, ms: 0 };
  }
  const n = occurrences(original, m.find);
  if (n !== 1) return { mutation: m, verdict: { kind: "stale", occurrences: n }, ms: 0 };
  await Deno.writeTextFile(path, original.replace(m.find, () => m.replace));
  const started = performance.now();
  try {
    const verdict = await runTests(dir, m.tests, timeoutMs);
    return { mutation: m, verdict, ms: performance.now() - started };
  } finally {
    await Deno.writeTextFile(path, original);
  }
}

function describe(v: Verdict): string {
  switch (v.kind) {
    case "killed":
      return v.timedOut ? "timed out" : `failed: ${v.failed.join("; ") || "(names not found)"}`;
    case "survived":
      return "every test passed";
    case "stale":
      return `the find string occurs ${v.occurrences} times (not exactly once): update the entry`;
    case "error":
      return v.detail;
  }
}

/** One line (or a few) of report for a mutant. */
export function formatResult(r: MutantResult): string {
  const label = r.verdict.kind === "killed" ? "killed  " : r.verdict.kind.toUpperCase().padEnd(8);
  const time = r.ms > 0 ? ` [${(r.ms / 1000).toFixed(1)} s]` : "";
  return `${label} ${r.mutation.file}: ${r.mutation.why}${time}\n         ${describe(r.verdict)}`;
}

interface Args {
  filter?: string;
  list: URL;
  timeoutMs?: number;
  keep: boolean;
}

function parseArgs(args: string[]): Args {
  const out: Args = { keep: false, list: MUTATIONS_FILE };
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === "--keep") out.keep = true;
    else if (a === "--filter" && i + 1 < args.length) out.filter = args[++i];
    else if (a === "--mutations" && i + 1 < args.length) {
      out.list = new URL(args[++i], `file://${Deno.cwd()}/`);
    } else if (a === "--timeout-ms" && /^[1-9]\d*$/.test(args[i + 1] ?? "")) {
      out.timeoutMs = Number(args[++i]);
    } else throw new Error(`unknown argument ${JSON.stringify(a)}`);
  }
  return out;
}

async function main(): Promise<number> {
  let args;
  try {
    args = parseArgs(Deno.args);
  } catch (err) {
    console.error(
      `${(err as Error).message}\nusage: deno task mutate [--filter TEXT] ` +
        "[--mutations FILE] [--timeout-ms N] [--keep]",
    );
    return 2;
  }
  const filter = args.filter;
  const mutations = (await loadMutations(args.list)).filter((m) =>
    filter === undefined || m.file.includes(filter) || m.why.includes(filter)
  );
  const started = performance.now();
  let results: MutantResult[];
  try {
    results = await runMutations({
      root: new URL("../", import.meta.url).pathname.replace(/\/$/, ""),
      mutations,
      timeoutMs: args.timeoutMs,
      keep: args.keep,
      log: (line) => console.log(line),
    });
  } catch (err) {
    console.error((err as Error).message);
    return 2;
  }
  const bad = results.filter((r) => r.verdict.kind !== "killed");
  const secs = ((performance.now() - started) / 1000).toFixed(1);
  console.log(
    `${results.length} mutants in ${secs} s: ${results.length - bad.length} killed, ` +
      `${bad.length} survived, stale or in error`,
  );
  for (const r of bad) console.error(formatResult(r));
  return bad.length === 0 ? 0 : 1;
}

if (import.meta.main) Deno.exit(await main());
