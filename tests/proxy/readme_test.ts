/**
 * README renders as written in CommonMark: no inline code span is broken by a
 * blank line (one at `Error loading config:` turned `<details>` into a raw
 * HTML block that folded the rest of the page), and every fenced block closes.
 */
import assert from "node:assert/strict";

const README = await Deno.readTextFile(new URL("../../README.md", import.meta.url));

/** The paragraphs (blocks between blank lines) outside fenced code, with their first line. */
function paragraphs(text: string): Array<{ line: number; text: string }> {
  const out: Array<{ line: number; text: string }> = [];
  let fence: string | null = null;
  let current: string[] = [];
  let start = 0;
  const flush = () => {
    if (current.length > 0) out.push({ line: start, text: current.join("\n") });
    current = [];
  };
  text.split("\n").forEach((line, i) => {
    const f = /^\s*(`{3,}|~{3,})/.exec(line);
    if (fence !== null) {
      if (f && f[1][0] === fence[0] && f[1].length >= fence.length) fence = null;
      return;
    }
    if (f) {
      flush();
      fence = f[1];
      return;
    }
    if (line.trim() === "") return flush();
    if (current.length === 0) start = i + 1;
    current.push(line);
  });
  assert.equal(fence, null, "a fenced code block is not closed");
  flush();
  return out;
}

Deno.test("README: every inline code span opens and closes in the same paragraph", () => {
  for (const p of paragraphs(README)) {
    // Runs of backticks: a span opens and closes with runs of the same length.
    const runs = [...p.text.replaceAll("\\`", "").matchAll(/`+/g)].map((m) => m[0].length);
    const open: number[] = [];
    for (const n of runs) {
      if (open.length > 0 && open[0] === n) open.pop();
      else if (open.length === 0) open.push(n);
    }
    assert.deepEqual(open, [], `unclosed code span in the paragraph at README line ${p.line}`);
  }
});

Deno.test("README: no raw HTML block starts a line (it would swallow what follows)", () => {
  for (const p of paragraphs(README)) {
    assert.doesNotMatch(p.text, /^<[a-z]+>/m, `raw HTML at README line ${p.line}`);
  }
});
