/**
 * Import-direction check for docs/architecture.md §6, on the module graph Deno itself
 * resolves (`deno info --json`), so an import wrapped over several lines, a
 * dynamic `import("…")` or an `import type` counts like any other.
 *
 * Rules on imports (tests are the `*_test.ts` and `*_bench.ts` files and
 * everything under `tests/`):
 * - the sans-IO codecs `proxy/h3/` and `proxy/h2/` import nothing outside
 *   themselves but `proxy/http/` (HTTP semantics) and `proxy/hpack_common/`
 *   (what HPACK and QPACK share), each of which imports nothing outside
 *   itself (tests excepted); `proxy/h1/` imports only itself and `proxy/http/`;
 * - `payments/domain/` imports only `shared/` and itself among the project's
 *   files (tests excepted);
 * - `shared/` imports neither `proxy/` nor `payments/`;
 * - `proxy/` and `payments/` do not import each other;
 * - `payments/store/` imports neither `payments/service.ts` nor `payments/routes/`;
 * - nothing imports a `main.ts`, except a test beside it.
 *
 * Rules on text (a call is no import), for `proxy/`, `payments/` and `shared/`:
 * - `proxy/h3/`, `proxy/h2/`, `proxy/h1/`, `proxy/http/` and
 *   `proxy/hpack_common/` touch no `Deno.*` API (tests excepted);
 * - only `main.ts` files, `proxy/quic/`, tests and examples touch the unstable
 *   QUIC and KV APIs (`Deno.createHttpClient` is stable in Deno 2).
 *
 * Usage: `deno task lint:layers` (exit 1 and one line per violation).
 *
 * @module
 */

import { basename, dirname, join, relative, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/** One broken layering rule, found in one file. */
export interface Violation {
  /** The importing file, relative to the checked root (`proxy/h3/frames.ts`). */
  file: string;
  /** 1-based line of the import's specifier, or of the offending text. */
  line: number;
  /** The rule, naming what was found. */
  rule: string;
}

/** One import in the module graph. */
export interface ImportEdge {
  /** The importing file, relative to the root. */
  from: string;
  /**
   * The imported module: a path relative to the root for the root's own files
   * (`shared/bytes.ts`), else the resolved specifier (`npm:zod@^4`, `node:path`).
   */
  to: string;
  /** 1-based line of the specifier in `from`. */
  line: number;
}

/**
 * Imports that break a rule today and are known, each with the change that
 * removes it. Keep this list short: an entry is a debt, not a rule.
 */
const KNOWN: readonly { from: string; to: string; why: string }[] = [
  {
    from: "payments/bench.ts",
    to: "payments/main.ts",
    why: "openKvAt should move out of payments/main.ts (payments owns the fix)",
  },
];

/** The sans-IO protocol codecs. */
const CODECS = ["proxy/h3/", "proxy/h2/", "proxy/h1/"] as const;
/** What the codecs share (Huffman code, prefixed integers, byte strings). */
const SHARED_CODEC = "proxy/hpack_common/";
/** HTTP semantics whatever the version (heads, field rules, response validation). */
const HTTP = "proxy/http/";
/** Folders that import nothing outside themselves (tests excepted). */
const SELF_CONTAINED = [SHARED_CODEC, HTTP] as const;
/** What each codec may import besides itself: HTTP/1.1 has no header compression to share. */
const CODEC_IMPORTS: Readonly<Record<(typeof CODECS)[number], readonly string[]>> = {
  "proxy/h3/": SELF_CONTAINED,
  "proxy/h2/": SELF_CONTAINED,
  "proxy/h1/": [HTTP],
};

const UNSTABLE =
  /\bnew\s+Deno\.QuicEndpoint\b|\bDeno\.(connectQuic|openKv|upgradeWebTransport)\s*[(<]/;
const COMMENT = /^\s*(\*|\/\/)/;
const SKIPPED_DIRS = new Set(["node_modules", "dist", "data"]);
/** Files per `deno info` run (each path costs ~80 bytes of command line). */
const FILES_PER_RUN = 800;

function isTestOrBench(file: string): boolean {
  return /_(test|bench)\.ts$/.test(file) || file.startsWith("tests/");
}

function isUnder(file: string, dir: string): boolean {
  return file.startsWith(dir);
}

/** True when `to` is one of the root's own files (not `npm:`, `node:`, a URL…). */
function isLocal(to: string): boolean {
  return !/^[a-z][a-z0-9+.-]*:/i.test(to);
}

/** Checks one import against the rules on imports. */
export function checkImport(edge: ImportEdge): Violation[] {
  const { from, to, line } = edge;
  const out: Violation[] = [];
  const add = (rule: string) => out.push({ file: from, line, rule: `${rule} (found "${to}")` });
  const local = isLocal(to);
  const test = isTestOrBench(from);
  for (const codec of CODECS) {
    const allowed = local && [codec, ...CODEC_IMPORTS[codec]].some((dir) => isUnder(to, dir));
    if (isUnder(from, codec) && !test && !allowed) {
      add(`${codec.slice(0, -1)} imports only itself`); // and the shared pieces
    }
  }
  for (const dir of SELF_CONTAINED) {
    if (isUnder(from, dir) && !test && !(local && isUnder(to, dir))) {
      add(`${dir.slice(0, -1)} imports only itself`);
    }
  }
  if (
    isUnder(from, "payments/domain/") && !test && local &&
    !isUnder(to, "payments/domain/") && !isUnder(to, "shared/")
  ) {
    add("payments/domain imports only shared/");
  }
  if (!local) return out;
  if (isUnder(from, "shared/") && (isUnder(to, "proxy/") || isUnder(to, "payments/"))) {
    add("shared/ imports neither proxy/ nor payments/");
  }
  if (
    (isUnder(from, "proxy/") && isUnder(to, "payments/")) ||
    (isUnder(from, "payments/") && isUnder(to, "proxy/"))
  ) {
    add("proxy/ and payments/ do not import each other");
  }
  if (
    isUnder(from, "payments/store/") &&
    (to === "payments/service.ts" || isUnder(to, "payments/routes/"))
  ) {
    add("payments/store imports neither the service nor the routes");
  }
  if (basename(to) === "main.ts" && !(test && dirname(from) === dirname(to))) {
    if (!KNOWN.some((k) => k.from === from && k.to === to)) {
      add("nothing imports a main.ts (but a test beside it)");
    }
  }
  return out;
}

/** Checks one file's text against the rules on text that apply to its path. */
export function checkText(file: string, text: string): Violation[] {
  const out: Violation[] = [];
  const sansIo = [...CODECS, ...SELF_CONTAINED].some((d) => isUnder(file, d)) &&
    !isTestOrBench(file);
  const mayUseUnstable = basename(file) === "main.ts" || isUnder(file, "proxy/quic/") ||
    isTestOrBench(file) || isUnder(file, "examples/");
  text.split("\n").forEach((src, i) => {
    if (COMMENT.test(src)) return;
    if (sansIo && /\bDeno\./.test(src)) {
      out.push({
        file,
        line: i + 1,
        rule: `${file.split("/").slice(0, 2).join("/")} is sans-IO: no Deno.* API`,
      });
    }
    if (!mayUseUnstable && UNSTABLE.test(src)) {
      out.push({ file, line: i + 1, rule: "unstable Deno API outside main.ts / proxy/quic/" });
    }
  });
  return out;
}

/** Every `.ts` file below `root`, relative to it; dot folders and build output skipped. */
export async function sourceFiles(root: string): Promise<string[]> {
  const out: string[] = [];
  async function walk(dir: string): Promise<void> {
    for await (const entry of Deno.readDir(dir)) {
      if (entry.name.startsWith(".") || SKIPPED_DIRS.has(entry.name)) continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory) await walk(path);
      else if (entry.isFile && entry.name.endsWith(".ts")) out.push(relative(root, path));
    }
  }
  await walk(root);
  return out.sort();
}

/** The part of `deno info --json` output read here. */
interface DenoInfo {
  modules: {
    specifier: string;
    error?: string;
    dependencies?: {
      specifier: string;
      code?: { specifier?: string; span?: { start: { line: number } } };
      type?: { specifier?: string; span?: { start: { line: number } } };
    }[];
  }[];
}

/**
 * Resolves the imports of `files` (relative to `root`) with one
 * `deno info --json` run over a generated module that imports them all, so
 * the graph holds every file, reachable from an entry point or not. Uses
 * `root/deno.json` (import map) when there is one; npm and remote modules are
 * named, not fetched. Files Deno cannot parse or find come back as violations.
 */
export async function moduleGraph(
  root: string,
  files: readonly string[],
): Promise<{ edges: ImportEdge[]; problems: Violation[] }> {
  let config = ["--no-config"];
  try {
    await Deno.stat(join(root, "deno.json"));
    config = ["--config", join(root, "deno.json")];
  } catch { /* no configuration: plain relative imports only */ }
  const modules: DenoInfo["modules"] = [];
  // The generated module travels as a data: URL on the command line; chunks
  // keep it far below Linux's 128 KiB limit on one argument.
  for (let i = 0; i < files.length; i += FILES_PER_RUN) {
    const imports = files.slice(i, i + FILES_PER_RUN)
      .map((f) => `import ${JSON.stringify(pathToFileURL(join(root, f)).href)};`);
    const entry = `data:application/typescript,${encodeURIComponent(imports.join("\n"))}`;
    const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
      args: ["info", "--json", "--no-npm", "--no-remote", "--no-lock", ...config, entry],
      cwd: root,
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (code !== 0) {
      throw new Error(`deno info failed: ${new TextDecoder().decode(stderr).trim()}`);
    }
    modules.push(...(JSON.parse(new TextDecoder().decode(stdout)) as DenoInfo).modules);
  }
  const rootDir = resolve(root);
  const own = (specifier: string): string | null => {
    if (!specifier.startsWith("file:")) return null;
    const rel = relative(rootDir, fileURLToPath(specifier));
    return rel.startsWith("..") ? null : rel;
  };
  const edges: ImportEdge[] = [];
  const problems: Violation[] = [];
  const listed = new Set(files);
  const broken = new Map<string, string>();
  for (const mod of modules) {
    const from = own(mod.specifier);
    if (from !== null && mod.error) broken.set(from, mod.error.split("\n")[0]);
  }
  const seen = new Set<string>();
  for (const mod of modules) {
    const from = own(mod.specifier);
    if (from === null || seen.has(from)) continue; // a module shared by two runs
    seen.add(from);
    const error = broken.get(from);
    if (error !== undefined && listed.has(from)) {
      problems.push({ file: from, line: 1, rule: `not checked: ${error}` });
    }
    for (const dep of mod.dependencies ?? []) {
      for (const target of [dep.code, dep.type]) {
        if (target?.specifier === undefined) continue;
        if (target === dep.type && dep.code?.specifier === target.specifier) continue;
        const to = own(target.specifier) ?? target.specifier;
        const line = (target.span?.start.line ?? 0) + 1;
        const missing = broken.get(to);
        if (missing !== undefined && !listed.has(to)) {
          problems.push({
            file: from,
            line,
            rule: `imports a module Deno cannot load: ${missing}`,
          });
        }
        edges.push({ from, to, line });
      }
    }
  }
  return { edges, problems };
}

/**
 * Runs every rule over the project at `root`: the import rules on its module
 * graph, the text rules on `proxy/`, `payments/` and `shared/`.
 */
export async function lintLayers(root: string): Promise<Violation[]> {
  const files = await sourceFiles(root);
  const { edges, problems } = await moduleGraph(root, files);
  const out = [...problems, ...edges.flatMap(checkImport)];
  for (const file of files) {
    if (!/^(proxy|payments|shared)\//.test(file)) continue;
    out.push(...checkText(file, await Deno.readTextFile(join(root, file))));
  }
  return out.sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line);
}

if (import.meta.main) {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
  const violations = await lintLayers(root);
  for (const v of violations) {
    // deno-lint-ignore no-console
    console.error(`${v.file}:${v.line}: ${v.rule}`);
  }
  if (violations.length > 0) Deno.exit(1);
  // deno-lint-ignore no-console
  console.log("lint:layers: ok");
}
