/**
 * The README and the pages of docs/ render as written in CommonMark: no
 * inline code span is broken by a blank line (one at `Error loading config:`
 * turned `<details>` into a raw HTML block that folded the rest of the page),
 * and every fenced block closes. Issue #28.5: the README stays a front door
 * (at most 200 lines, its two commands and its install line), and every
 * relative link of the README and docs/ reaches a file and, with `#anchor`,
 * a heading of it: moving text between pages cannot leave a dead link.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url).pathname;

/** The Markdown pages a reader is sent to: the README, docs/, the payments README, the changelog. */
async function pages(): Promise<Map<string, string>> {
  const names = ["README.md", "CHANGELOG.md", "payments/README.md"];
  for await (const entry of Deno.readDir(`${ROOT}docs`)) {
    if (entry.isFile && entry.name.endsWith(".md")) names.push(`docs/${entry.name}`);
  }
  const out = new Map<string, string>();
  for (const name of names.sort()) out.set(name, await Deno.readTextFile(`${ROOT}${name}`));
  return out;
}

const PAGES = await pages();
const README = PAGES.get("README.md")!;

/** The lines outside fenced code, each with its number (fences themselves excluded). */
function proseLines(text: string): Array<{ line: number; text: string }> {
  const out: Array<{ line: number; text: string }> = [];
  let fence: string | null = null;
  text.split("\n").forEach((line, i) => {
    const f = /^\s*(`{3,}|~{3,})/.exec(line);
    if (fence !== null) {
      if (f && f[1][0] === fence[0] && f[1].length >= fence.length) fence = null;
      return;
    }
    if (f) {
      fence = f[1];
      out.push({ line: i + 1, text: "" });
      return;
    }
    out.push({ line: i + 1, text: line });
  });
  assert.equal(fence, null, "a fenced code block is not closed");
  return out;
}

/** The paragraphs (blocks between blank lines) outside fenced code, with their first line. */
function paragraphs(text: string): Array<{ line: number; text: string }> {
  const out: Array<{ line: number; text: string }> = [];
  let current: string[] = [];
  let start = 0;
  const flush = () => {
    if (current.length > 0) out.push({ line: start, text: current.join("\n") });
    current = [];
  };
  for (const { line, text: l } of proseLines(text)) {
    if (l.trim() === "") {
      flush();
      continue;
    }
    if (current.length === 0) start = line;
    current.push(l);
  }
  flush();
  return out;
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
function headingAnchor(title: string): string {
  return title.trim().toLowerCase().replace(/[^\p{L}\p{N}_\- ]/gu, "").replaceAll(" ", "-");
}

function anchorsOf(text: string): Set<string> {
  const out = new Set<string>();
  for (const { text: l } of proseLines(text)) {
    const m = /^#{1,6} (.*)$/.exec(l);
    if (m) out.add(headingAnchor(m[1]));
  }
  return out;
}

for (const [name, text] of PAGES) {
  Deno.test(`${name}: every inline code span opens and closes in the same paragraph`, () => {
    for (const p of paragraphs(text)) {
      // Runs of backticks: a span opens and closes with runs of the same length.
      const runs = [...p.text.replaceAll("\\`", "").matchAll(/`+/g)].map((m) => m[0].length);
      const open: number[] = [];
      for (const n of runs) {
        if (open.length > 0 && open[0] === n) open.pop();
        else if (open.length === 0) open.push(n);
      }
      assert.deepEqual(open, [], `unclosed code span in the paragraph at ${name} line ${p.line}`);
    }
  });

  Deno.test(`${name}: no raw HTML block starts a line (it would swallow what follows)`, () => {
    for (const p of paragraphs(text)) {
      assert.doesNotMatch(p.text, /^<[a-z]+>/m, `raw HTML at ${name} line ${p.line}`);
    }
  });
}

Deno.test("#28.5: every relative link of the README and docs/ reaches a file and its heading", async () => {
  const problems: string[] = [];
  for (const [name, text] of PAGES) {
    const dir = name.includes("/") ? name.slice(0, name.lastIndexOf("/") + 1) : "";
    for (const { line, text: l } of proseLines(text)) {
      for (const m of l.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1];
        if (/^[a-z]+:/.test(target)) continue;
        const [path, anchor] = target.split("#");
        const file = path === "" ? name : new URL(path, `file:///${dir}`).pathname.slice(1);
        const info = await Deno.stat(`${ROOT}${file}`).catch(() => null);
        if (info === null) {
          problems.push(`${name}:${line}: ${target}: no such file`);
          continue;
        }
        if (anchor === undefined || !file.endsWith(".md")) continue;
        const targetText = PAGES.get(file) ?? await Deno.readTextFile(`${ROOT}${file}`);
        if (!anchorsOf(targetText).has(anchor)) {
          problems.push(`${name}:${line}: ${target}: no heading #${anchor} in ${file}`);
        }
      }
    }
  }
  assert.deepEqual(problems, []);
});

Deno.test("#28.5: the README is a front door: at most 200 lines, the two commands, Deno's install", () => {
  const lines = README.trimEnd().split("\n").length;
  assert.ok(lines <= 200, `README.md has ${lines} lines`);
  assert.match(README, /^npx -y deno@2\.9\.6 task start\b/m);
  assert.match(README, /^npx -y deno@2\.9\.6 task test\b/m);
  assert.match(README, /`npm install -g deno@2\.9\.6`/);
  for (
    const heading of ["Why you would pick spooky", "Prerequisites", "The two commands", "License"]
  ) {
    assert.match(README, new RegExp(`^## ${heading}`, "m"), heading);
  }
});

Deno.test("headingAnchor follows GitHub: punctuation dropped, spaces to hyphens", () => {
  assert.equal(
    headingAnchor("8. The life of a request, rule by rule"),
    "8-the-life-of-a-request-rule-by-rule",
  );
  assert.equal(
    headingAnchor("`deno task mutate`: the list of pinned guards"),
    "deno-task-mutate-the-list-of-pinned-guards",
  );
  assert.equal(headingAnchor("0-RTT"), "0-rtt");
});
