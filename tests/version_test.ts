/**
 * One version for the whole package: `version` in deno.json is what both
 * services print with `-V`, what the payments API's OpenAPI document (and so
 * its `/docs` page) shows, and the newest section of CHANGELOG.md; and the
 * package, as deno.json describes it, passes `deno publish --dry-run`.
 */
import assert from "node:assert/strict";
import { buildOpenApiDocument } from "../payments/mod.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const denoJson = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`));
const VERSION: string = denoJson.version;

async function run(args: string[]) {
  const out = await new Deno.Command(Deno.execPath(), {
    args,
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
    stdin: "null",
    env: { NO_COLOR: "1" },
    signal: AbortSignal.timeout(120_000),
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

Deno.test("#28.5: deno.json names the package, its version and its entry points", () => {
  assert.match(denoJson.name, /^@[a-z0-9-]+\/[a-z0-9-]+$/);
  assert.match(VERSION, /^\d+\.\d+\.\d+$/);
  assert.equal(denoJson.exports["."], "./mod.ts");
  assert.equal(denoJson.license, "Apache-2.0");
  assert.match(Deno.readTextFileSync(`${ROOT}LICENSE`), /Apache License\s+Version 2\.0/);
});

Deno.test("#28.5: both services print deno.json's version with -V and --version", async () => {
  for (const [entry, product] of [["proxy/main.ts", "spooky"], ["payments/main.ts", "payments"]]) {
    for (const flag of ["-V", "--version"]) {
      const r = await run(["run", "-A", entry, flag]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, `${product} ${VERSION}\n`, `${entry} ${flag}`);
    }
  }
});

Deno.test("#28.5: the payments API's OpenAPI document (and its /docs page) shows the version", () => {
  const doc = buildOpenApiDocument([]) as { info: { version: string } };
  assert.equal(doc.info.version, VERSION);
});

Deno.test("#28.5: CHANGELOG.md is by version, newest first, the newest being deno.json's", async () => {
  const changelog = await Deno.readTextFile(`${ROOT}CHANGELOG.md`);
  const headings = [...changelog.matchAll(/^## \[(\d+)\.(\d+)\.(\d+)\] - (\d{4}-\d{2}-\d{2})$/gm)];
  assert.ok(headings.length >= 2, "CHANGELOG.md has `## [x.y.z] - YYYY-MM-DD` sections");
  assert.equal(headings[0].slice(1, 4).join("."), VERSION, "the newest section is deno.json's");
  const key = (m: RegExpMatchArray) => m.slice(1, 4).map(Number);
  for (let i = 1; i < headings.length; i++) {
    const [a, b] = [key(headings[i - 1]), key(headings[i])];
    const newer = a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
    assert.ok(newer > 0, `${headings[i - 1][0]} is newer than ${headings[i][0]}`);
  }
  // Every second-level heading is a version (or Unreleased): nothing else at that level.
  for (const m of changelog.matchAll(/^## (.*)$/gm)) {
    assert.match(m[1], /^\[(\d+\.\d+\.\d+|Unreleased)\]/, `not a version: ${m[0]}`);
  }
});

Deno.test("#28.5: deno publish --dry-run passes (names, exports, explicit public types)", async () => {
  const r = await run(["publish", "--dry-run", "--allow-dirty"]);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.match(
    r.stdout + r.stderr,
    new RegExp(`${denoJson.name}@${VERSION.replaceAll(".", "\\.")}`),
  );
  assert.doesNotMatch(r.stdout + r.stderr, /^warning/m, "publish warns");
});
