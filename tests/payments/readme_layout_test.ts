/**
 * Issue #28.5: the code layout of payments/README.md is the tree as it is:
 * it names every source file of payments/ (tests aside) and no file that is
 * not there, so a file added, moved or removed without the map fails here.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url).pathname;

async function sourceFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const entry of Deno.readDir(`${ROOT}${dir}`)) {
    if (entry.isDirectory) out.push(...await sourceFiles(`${dir}/${entry.name}`));
    else if (entry.name.endsWith(".ts") && !entry.name.endsWith("_test.ts")) out.push(entry.name);
  }
  return out;
}

Deno.test("#28.5: payments/README.md's code layout names exactly the source files of payments/", async () => {
  const readme = await Deno.readTextFile(`${ROOT}payments/README.md`);
  const at = readme.indexOf("\n## Code layout\n");
  assert.ok(at >= 0, "payments/README.md has a code layout");
  const block = /```\n([\s\S]*?)```/.exec(readme.slice(at))?.[1] ?? "";
  // Bare file names only: `shared/serve_connections.ts` is another folder's.
  const named = new Set([...block.matchAll(/(?<![\w/.])([a-z_]+\.ts)\b/g)].map((m) => m[1]));
  const files = new Set(await sourceFiles("payments"));
  // Several folders have a mod.ts; the layout names the package's.
  assert.deepEqual(
    [...files].filter((f) => !named.has(f)).sort(),
    [],
    "files the layout leaves out",
  );
  assert.deepEqual(
    [...named].filter((f) => !files.has(f)).sort(),
    [],
    "names of files not in payments/",
  );
});
