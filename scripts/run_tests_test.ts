import assert from "node:assert/strict";
import {
  closingLine,
  parseArgs,
  parseIgnored,
  parseSkipLog,
  parseSummary,
  skipReasons,
  unitTestDirs,
} from "./run_tests.ts";

Deno.test("run_tests: --quick and --no-install are the runner's, the rest goes to deno test", () => {
  assert.deepEqual(parseArgs(["--quick", "tests/a_test.ts", "--filter", "x", "--no-install"]), {
    quick: true,
    noInstall: true,
    help: false,
    denoTestArgs: ["tests/a_test.ts", "--filter", "x"],
  });
  assert.equal(parseArgs([]).quick, false);
});

Deno.test("run_tests: deno test's closing line, coloured or not, with steps and ignored", () => {
  assert.deepEqual(
    parseSummary(
      "\x1b[0m\x1b[32mok\x1b[0m | 1137 passed (48 steps) | 0 failed | 1 ignored (1 step) \x1b[0m(4m51s)",
    ),
    { ok: true, passed: 1137, failed: 0, ignored: 1, ignoredSteps: 1 },
  );
  assert.deepEqual(parseSummary("FAILED | 1099 passed | 38 failed | 3 ignored (20m)"), {
    ok: false,
    passed: 1099,
    failed: 38,
    ignored: 3,
    ignoredSteps: 0,
  });
  assert.deepEqual(
    parseSummary("ok | 12 passed | 0 failed | 0 ignored (1 step) (15s)")?.ignoredSteps,
    1,
  );
  assert.equal(parseSummary("tests: 3 passed, 0 failed"), undefined);
});

Deno.test("run_tests: an ignored test or step is named without its file", () => {
  assert.equal(
    parseIgnored(
      "\x1b[0m\x1b[38;5;245m./x_test.ts => \x1b[0mb ... \x1b[0m\x1b[33mignored\x1b[0m (0ms)",
    ),
    "b",
  );
  assert.equal(parseIgnored("./x_test.ts => c ... s ... ignored (0ms)"), "c ... s");
  assert.equal(parseIgnored("b ... ignored (0ms)"), "b");
  assert.equal(parseIgnored("./x_test.ts => b ... ok (0ms)"), undefined);
});

Deno.test("run_tests: skips are matched to their notes by test, step or test ... step", () => {
  const notes = parseSkipLog(
    '{"test":"a","reason":"no promtool"}\n{"test":"s","reason":"no denort"}\ntorn{\n' +
      '{"test":"c","reason":"opt-in"}\n',
  );
  assert.equal(notes.length, 3);
  assert.deepEqual(skipReasons(["a", "b ... s", "c ... t", "d"], notes), [
    { test: "a", reason: "no promtool" },
    { test: "b ... s", reason: "no denort" },
    { test: "c ... t", reason: "opt-in" },
    { test: "d", reason: "no reason given" },
  ]);
});

Deno.test("run_tests: the closing line counts ran and skipped, grouped by why", () => {
  const summary = { ok: true, passed: 10, failed: 1, ignored: 3, ignoredSteps: 1 };
  assert.equal(
    closingLine(summary, [
      { test: "a", reason: "not installed (--quick): promtool (Debian prometheus)" },
      { test: "b", reason: "not installed (--quick): chromium (Debian chromium)" },
      { test: "c", reason: "not installed (--quick): promtool (Debian prometheus)" },
    ]),
    "11 tests ran (10 passed, 1 failed); 4 skipped: 3 not installed (--quick): " +
      "promtool (Debian prometheus), chromium (Debian chromium); 1 no reason given",
  );
  assert.equal(
    closingLine({ ...summary, ignored: 0, ignoredSteps: 0 }, []),
    "11 tests ran (10 passed, 1 failed); none skipped",
  );
});

Deno.test("run_tests: --quick's folders are every top-level folder but tests/ and generated ones", async () => {
  const root = await Deno.makeTempDir();
  try {
    for (const d of ["proxy", "tests", "dist", ".dev", "shared", "docs"]) {
      await Deno.mkdir(`${root}/${d}`);
    }
    await Deno.writeTextFile(`${root}/mod.ts`, "");
    assert.deepEqual(unitTestDirs(`${root}/`), [`${root}/proxy/`, `${root}/shared/`]);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
