/**
 * Import-direction check for DESIGN.md §3:
 * - `proxy/h3/` imports nothing outside itself and touches no `Deno.*` API;
 * - `payments/domain/` imports only `shared/` and itself;
 * - only `main.ts` files, `proxy/quic/` and tests touch the unstable QUIC and
 *   KV APIs (`Deno.createHttpClient` is stable in Deno 2).
 *
 * Usage: `deno task lint:layers` (exit 1 and one line per violation).
 *
 * @module
 */

import { dirname, join, relative, resolve } from "node:path";

const root = resolve(dirname(new URL(import.meta.url).pathname), "../..");

/** One broken layering rule, found in one file. */
export interface Violation {
  file: string;
  line: number;
  rule: string;
}

const UNSTABLE =
  /\bnew\s+Deno\.QuicEndpoint\b|\bDeno\.(connectQuic|openKv|upgradeWebTransport)\s*[(<]/;
const IMPORT =
  /(?:^|\s)(?:import|export)\b[^"'`]*?from\s*["']([^"']+)["']|import\s*\(\s*["']([^"']+)["']\s*\)|^\s*import\s+["']([^"']+)["']/;

function isTestOrBench(file: string): boolean {
  return /_(test|bench)\.ts$/.test(file) || file.startsWith("tests/");
}

/** Checks one file's text against the rules that apply to its path. */
export function checkFile(file: string, text: string): Violation[] {
  const out: Violation[] = [];
  const lines = text.split("\n");
  const dir = dirname(file);
  lines.forEach((src, i) => {
    const line = i + 1;
    const m = IMPORT.exec(src);
    const spec = m?.[1] ?? m?.[2] ?? m?.[3];
    if (file.startsWith("proxy/h3/") && !isTestOrBench(file)) {
      if (/\bDeno\./.test(src) && !/^\s*(\*|\/\/)/.test(src)) {
        out.push({ file, line, rule: "proxy/h3 is sans-IO: no Deno.* API" });
      }
      if (spec && !(spec.startsWith(".") && join(dir, spec).startsWith("proxy/h3"))) {
        out.push({ file, line, rule: `proxy/h3 imports only itself (found "${spec}")` });
      }
    }
    if (file.startsWith("payments/domain/") && !isTestOrBench(file) && spec) {
      const target = spec.startsWith(".") ? join(dir, spec) : spec;
      if (
        spec.startsWith(".") && !target.startsWith("payments/domain") &&
        !target.startsWith("shared/")
      ) {
        out.push({ file, line, rule: `payments/domain imports only shared/ (found "${spec}")` });
      }
    }
    const mayUseUnstable = file.endsWith("main.ts") || file.startsWith("proxy/quic/") ||
      isTestOrBench(file) || file.startsWith("examples/");
    if (!mayUseUnstable && UNSTABLE.test(src) && !/^\s*(\*|\/\/)/.test(src)) {
      out.push({ file, line, rule: "unstable Deno API outside main.ts / proxy/quic/" });
    }
  });
  return out;
}

async function* walk(dir: string): AsyncGenerator<string> {
  for await (const entry of Deno.readDir(dir)) {
    if (entry.name.startsWith(".") || entry.name === "node_modules") continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory) yield* walk(path);
    else if (entry.name.endsWith(".ts")) yield path;
  }
}

if (import.meta.main) {
  const violations: Violation[] = [];
  for (const top of ["proxy", "payments", "shared"]) {
    for await (const path of walk(join(root, top))) {
      const file = relative(root, path);
      violations.push(...checkFile(file, await Deno.readTextFile(path)));
    }
  }
  for (const v of violations) {
    // deno-lint-ignore no-console
    console.error(`${v.file}:${v.line}: ${v.rule}`);
  }
  if (violations.length > 0) Deno.exit(1);
  // deno-lint-ignore no-console
  console.log("lint:layers: ok");
}
