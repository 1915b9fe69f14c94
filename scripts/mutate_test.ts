import assert from "node:assert/strict";
import { needs } from "../tests/support/tools.ts";
import {
  classifyRun,
  loadMutations,
  type Mutation,
  occurrences,
  parseMutations,
  runMutations,
} from "./mutate.ts";

const ROOT = new URL("../", import.meta.url).pathname;

Deno.test("mutate: scripts/mutations.json is well formed, and every find string occurs exactly once", async () => {
  const list = await loadMutations();
  assert.ok(list.length > 0);
  const stale: string[] = [];
  for (const [i, m] of list.entries()) {
    const text = await Deno.readTextFile(`${ROOT}${m.file}`);
    const n = occurrences(text, m.find);
    if (n !== 1) stale.push(`#${i} ${m.file}: find occurs ${n} times (${m.why})`);
    for (const t of m.tests) {
      assert.ok((await Deno.stat(`${ROOT}${t}`)).isFile, `#${i}: no test file ${t}`);
    }
  }
  assert.deepEqual(stale, [], "stale entries: update scripts/mutations.json");
  const whys = list.map((m) => m.why);
  assert.equal(new Set(whys).size, whys.length, "each entry names its own guard");
});

Deno.test("mutate: a malformed entry is named by index and field", () => {
  const ok: Mutation = { file: "a.ts", find: "x", replace: "y", tests: ["a_test.ts"], why: "w" };
  assert.deepEqual(parseMutations([ok]), [ok]);
  const bad: [unknown, RegExp][] = [
    [{}, /must be a JSON array/],
    [[1], /mutation #0: must be an object/],
    [[ok, { ...ok, find: "" }], /mutation #1: find must be a non-empty string/],
    [[{ ...ok, replace: "x" }], /replace is the same as find/],
    [[{ ...ok, tests: [] }], /tests must be a non-empty list/],
    [[{ ...ok, tests: ["a.ts"] }], /tests must be a non-empty list of \*_test.ts files/],
    [[{ ...ok, timeoutMs: 0 }], /timeoutMs must be a positive integer/],
    [[{ ...ok, test: ["a_test.ts"] }], /unknown key "test"/],
  ];
  for (const [data, message] of bad) assert.throws(() => parseMutations(data), message);
});

Deno.test("mutate: a run with failed tests kills the mutant; one that did not load is an error", () => {
  assert.deepEqual(classifyRun(0, "ok | 3 passed | 0 failed (5ms)"), { kind: "survived" });
  const failed = [
    "a ... ok (1ms)",
    "b ... FAILED (2ms)",
    " ERRORS ",
    "b => ./x_test.ts:3:6",
    "error: AssertionError",
    " FAILURES ",
    "b => ./x_test.ts:3:6",
    "c (step) => ./y_test.ts:10:8",
    "FAILED | 1 passed (2 steps) | 2 failed (9ms)",
  ].join("\n");
  assert.deepEqual(classifyRun(1, failed), {
    kind: "killed",
    failed: ["b", "c (step)"],
    timedOut: false,
  });
  const noLoad = "error: The module's source code could not be parsed: Expected ';'";
  assert.equal(classifyRun(1, noLoad).kind, "error");
});

Deno.test({
  ...needs(
    "mutate: in a small repository, a caught mutant is killed, an uncaught one survives, a stale entry is reported",
    "git",
  ),
  fn: async () => {
    const repo = await Deno.makeTempDir({ prefix: "mutate_test_" });
    try {
      const git = await new Deno.Command("git", { args: ["init", "-q"], cwd: repo }).output();
      assert.equal(git.code, 0);
      await Deno.writeTextFile(
        `${repo}/clamp.ts`,
        "export function clamp(n: number): number {\n" +
          "  if (n > 10) return 10;\n  if (n < 0) return 0;\n  return n;\n}\n",
      );
      await Deno.writeTextFile(
        `${repo}/clamp_test.ts`,
        'import { clamp } from "./clamp.ts";\n' +
          'Deno.test("upper bound", () => { if (clamp(20) !== 10) throw new Error("no bound"); });\n',
      );
      const base = { file: "clamp.ts", tests: ["clamp_test.ts"] };
      const results = await runMutations({
        root: repo,
        mutations: [
          { ...base, find: "if (n > 10) return 10;", replace: "", why: "upper" },
          { ...base, find: "if (n < 0) return 0;", replace: "", why: "lower" },
          { ...base, find: "return", replace: "", why: "ambiguous" },
        ],
        timeoutMs: 30_000,
      });
      assert.deepEqual(results.map((r) => [r.mutation.why, r.verdict]), [
        ["upper", { kind: "killed", failed: ["upper bound"], timedOut: false }],
        ["lower", { kind: "survived" }],
        ["ambiguous", { kind: "stale", occurrences: 3 }],
      ]);
      // The repository itself was never touched.
      assert.match(await Deno.readTextFile(`${repo}/clamp.ts`), /if \(n > 10\) return 10;/);
    } finally {
      await Deno.remove(repo, { recursive: true });
    }
  },
});
