/**
 * Summarises a V8 `.cpuprofile` (from `deno run --cpu-prof`): self time and
 * total (inclusive) time per function, and self time per source file, as
 * shares of the sampled time. `(idle)` is the JS thread waiting for events;
 * `(program)` is native work outside JS on the main thread (the runtime's Rust
 * ops); `(garbage collector)` is V8's GC.
 *
 *     deno run -A bench/analyze_profile.ts <file.cpuprofile> [--top 30] [--json]
 *
 * @module
 */
// deno-lint-ignore-file no-console

import { parseArgs } from "node:util";

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

/** The parts of a V8 CPU profile this tool reads. */
export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** One row of a summary: a name and its time in microseconds. */
export interface Row {
  name: string;
  us: number;
}

/** The summary of a profile. */
export interface ProfileSummary {
  /** Sampled wall time (µs). */
  totalUs: number;
  /** Time spent idle (µs). */
  idleUs: number;
  selfByFunction: Row[];
  totalByFunction: Row[];
  selfByFile: Row[];
}

function shortUrl(url: string): string {
  if (!url) return "(native)";
  const m = url.match(/\/(proxy|shared|examples|bench)\/.*$/);
  if (m) return m[0].slice(1);
  const npm = url.match(/npm\/[^/]+\/([^/]+(?:\/[^/]+)?)\/.*?([^/]+)$/);
  if (npm) return `npm:${npm[1]}/${npm[2]}`;
  const ext = url.match(/ext:(.*)$/);
  if (ext) return `ext:${ext[1]}`;
  return url.replace(/^.*\//, "");
}

function label(f: CallFrame): string {
  return `${f.functionName || "(anonymous)"} ${shortUrl(f.url)}:${f.lineNumber + 1}`;
}

/** Computes self/total times from the samples. */
export function summarize(profile: CpuProfile): ProfileSummary {
  const byId = new Map<number, ProfileNode>();
  for (const n of profile.nodes) byId.set(n.id, n);
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const selfUs = new Map<number, number>();
  let totalUs = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    // timeDeltas[i] is the time before sample i; attribute the next delta to it
    const dt = profile.timeDeltas[i + 1] ?? 0;
    selfUs.set(profile.samples[i], (selfUs.get(profile.samples[i]) ?? 0) + dt);
    totalUs += dt;
  }
  const selfFn = new Map<string, number>();
  const selfFile = new Map<string, number>();
  const totalFn = new Map<string, number>();
  let idleUs = 0;
  for (const [id, us] of selfUs) {
    const node = byId.get(id)!;
    const name = label(node.callFrame);
    if (node.callFrame.functionName === "(idle)") idleUs += us;
    selfFn.set(name, (selfFn.get(name) ?? 0) + us);
    const file = node.callFrame.url ? shortUrl(node.callFrame.url) : node.callFrame.functionName;
    selfFile.set(file, (selfFile.get(file) ?? 0) + us);
    // inclusive: every distinct function on the stack once
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const l = label(byId.get(cur)!.callFrame);
      if (seen.has(l)) continue;
      seen.add(l);
      totalFn.set(l, (totalFn.get(l) ?? 0) + us);
    }
  }
  const rows = (m: Map<string, number>) =>
    [...m].map(([name, us]) => ({ name, us })).sort((a, b) => b.us - a.us);
  return {
    totalUs,
    idleUs,
    selfByFunction: rows(selfFn),
    totalByFunction: rows(totalFn),
    selfByFile: rows(selfFile),
  };
}

/**
 * Summarises the one `.cpuprofile` in `dir` (written by `--cpu-prof-dir`):
 * self time by file and inclusive time by function, the top rows of each.
 */
export async function printProfileDir(dir: string): Promise<void> {
  const file = [...Deno.readDirSync(dir)].find((e) => e.name.endsWith(".cpuprofile"));
  if (!file) throw new Error(`no .cpuprofile written in ${dir}`);
  const path = `${dir}/${file.name}`;
  const s = summarize(JSON.parse(await Deno.readTextFile(path)));
  const pct = (us: number) => `${(100 * us / s.totalUs).toFixed(1)}%`;
  console.log(
    `\nprofile ${path}: ${(s.totalUs / 1e6).toFixed(1)} s sampled, idle ${pct(s.idleUs)}`,
  );
  console.log("self time by file:");
  for (const row of s.selfByFile.slice(0, 20)) {
    console.log(`  ${pct(row.us).padStart(6)}  ${row.name}`);
  }
  console.log("inclusive time by function:");
  for (const row of s.totalByFunction.slice(0, 30)) {
    console.log(`  ${pct(row.us).padStart(6)}  ${row.name}`);
  }
  console.log(`\nfull listing: deno run -A bench/analyze_profile.ts ${path}`);
}

function print(title: string, rows: Row[], total: number, top: number): void {
  console.log(`\n${title}`);
  for (const r of rows.slice(0, top)) {
    console.log(
      `${(r.us / 1000).toFixed(0).padStart(8)} ms ${
        (100 * r.us / total).toFixed(1).padStart(5)
      }%  ${r.name}`,
    );
  }
}

if (import.meta.main) {
  const { values, positionals } = parseArgs({
    args: Deno.args,
    options: { top: { type: "string", default: "30" }, json: { type: "boolean", default: false } },
    allowPositionals: true,
  });
  if (positionals.length !== 1) {
    console.error("usage: analyze_profile.ts <file.cpuprofile> [--top N] [--json]");
    Deno.exit(2);
  }
  const profile = JSON.parse(await Deno.readTextFile(positionals[0])) as CpuProfile;
  const s = summarize(profile);
  if (values.json) {
    console.log(JSON.stringify(s));
  } else {
    const top = Number(values.top);
    console.log(
      `sampled ${(s.totalUs / 1e6).toFixed(2)} s, idle ${(100 * s.idleUs / s.totalUs).toFixed(1)}%`,
    );
    print("self time by file", s.selfByFile, s.totalUs, top);
    print("self time by function", s.selfByFunction, s.totalUs, top);
    print("total (inclusive) time by function", s.totalByFunction, s.totalUs, top);
  }
}
