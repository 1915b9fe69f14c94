/**
 * For tests that run an external program (one of `scripts/tools.ts`) and for
 * tests that skip for another reason: a skip is never silent.
 *
 * - {@link needs}: in a `deno task test --quick` run, a test whose
 *   program is not installed is skipped, and why is written for the
 *   runner's closing line; in every other run the test runs (the full run
 *   has checked for every program before the first test), so a missing
 *   program fails it loudly instead of thinning the suite.
 * - {@link recordSkip}: a test that skips for its own reason says why.
 *
 * @module
 */

import { installed } from "../../scripts/check_tools.ts";
import { QUICK_ENV, SKIP_LOG_ENV } from "../../scripts/run_tests.ts";
import { toolOf } from "../../scripts/tools.ts";

/** Whether this is a `--quick` run, where a missing program skips its tests. */
export function quickRun(): boolean {
  return Deno.env.get(QUICK_ENV) === "1";
}

/**
 * The `name` and `ignore` of a test (or step) that runs `programs`, to spread
 * into its definition: `Deno.test({ ...needs("name", "chromium"), fn })`.
 * Ignored only in a `--quick` run where one of them is not on `PATH` (and
 * then the reason is recorded). Throws for a program `scripts/tools.ts` does
 * not list, so the tool check and the tests cannot drift apart.
 */
export function needs(name: string, ...programs: string[]): { name: string; ignore: boolean } {
  return { name, ignore: skipWithout(name, ...programs) };
}

/** The `ignore` flag alone: see {@link needs}. */
export function skipWithout(testName: string, ...programs: string[]): boolean {
  const tools = programs.map((p) => {
    const tool = toolOf(p);
    if (!tool) throw new Error(`${p} is not in scripts/tools.ts: add it with its Debian package`);
    return tool;
  });
  if (!quickRun()) return false;
  const missing = tools.filter((t) => !installed(t));
  if (missing.length === 0) return false;
  const names = missing.map((t) => `${t.program} (Debian ${t.debianPackage})`).join(", ");
  recordSkip(testName, `not installed (--quick): ${names}`);
  return true;
}

/** Writes why `testName` (a test, or `test ... step`) is skipped, for the runner's closing line. */
export function recordSkip(testName: string, reason: string): void {
  const log = Deno.env.get(SKIP_LOG_ENV);
  if (!log) return;
  Deno.writeTextFileSync(log, JSON.stringify({ test: testName, reason }) + "\n", { append: true });
}
