/**
 * The load phase of `bench/run.ts`: small responses under h3load (req/s and
 * server CPU per request, split by thread) and latency at a fixed background
 * rate, in rounds that alternate between the servers.
 *
 * @module
 */
// deno-lint-ignore-file no-console

import type { LatencyResult, LoadRow } from "./results.ts";
import { type Env, ROOT, run, type Server } from "./servers.ts";
import { median } from "../shared/stats.ts";

const H3LOAD = Deno.env.get("H3LOAD") ??
  new URL("../../shared/tools/h3load", import.meta.url).pathname;

/** Warm-up requests per connection (4 connections) before the load phase measures anything. */
export const WARMUP_PER_CONN = 6000;

/** CLK_TCK on Linux: /proc reports CPU time in these ticks. */
const HZ = 100;

/** What the load phase needs of the run's settings. */
export interface LoadSettings {
  quick: boolean;
  rounds: number;
  /** total requests of one h3load run */
  requests: number;
  connLevels: number[];
  latencyRequests: number;
  bgRate: number;
}

/** CPU ticks of a process and of each of its threads. */
interface CpuSnapshot {
  total: number;
  /** tid → [group, ticks] */
  threads: Map<string, [string, number]>;
}

function ticksOf(stat: string): { name: string; ticks: number } {
  const close = stat.lastIndexOf(")");
  const name = stat.slice(stat.indexOf("(") + 1, close);
  const f = stat.slice(close + 2).split(" ");
  return { name, ticks: Number(f[11]) + Number(f[12]) }; // utime + stime
}

/** Reads utime + stime of a process and its threads from /proc. */
export function cpuSnapshot(pid: number): CpuSnapshot {
  const threads = new Map<string, [string, number]>();
  let total = NaN;
  try {
    total = ticksOf(Deno.readTextFileSync(`/proc/${pid}/stat`)).ticks;
    for (const e of Deno.readDirSync(`/proc/${pid}/task`)) {
      try {
        const t = ticksOf(Deno.readTextFileSync(`/proc/${pid}/task/${e.name}/stat`));
        const group = e.name === String(pid) ? "main" : t.name.replace(/[-_ ]?\d+$/, "");
        threads.set(e.name, [group, t.ticks]);
      } catch {
        // thread gone
      }
    }
  } catch {
    // process gone
  }
  return { total, threads };
}

/** CPU µs per request between two snapshots: the total and by thread group. */
export function cpuPerRequest(
  before: CpuSnapshot,
  after: CpuSnapshot,
  requests: number,
): { totalUs: number; threads: Record<string, number> } {
  const us = (ticks: number) => ticks * 1e6 / HZ / Math.max(1, requests);
  // the main thread is always listed, even when idle over the run
  const groups: Record<string, number> = after.threads.size > 0 ? { main: 0 } : {};
  let live = 0;
  for (const [tid, [group, ticks]] of after.threads) {
    const d = ticks - (before.threads.get(tid)?.[1] ?? 0);
    if (d <= 0) continue;
    live += d;
    groups[group] = (groups[group] ?? 0) + d;
  }
  const total = after.total - before.total;
  if (total > live) groups["(exited)"] = total - live;
  const threads: Record<string, number> = {};
  for (const [g, ticks] of Object.entries(groups)) threads[g] = Math.round(us(ticks));
  return { totalUs: Math.round(us(total)), threads };
}

/** One h3load run against a server, with the server's CPU over it. */
export async function h3load(
  s: Server,
  conns: number,
  perConn: number,
): Promise<
  {
    rps: number;
    okCount: number;
    cpuUs: number;
    threads: Record<string, number>;
    ok: boolean;
    line: string;
  }
> {
  const before = cpuSnapshot(s.pid);
  const r = await run(H3LOAD, [`https://localhost:${s.port}/`, String(conns), String(perConn)]);
  const after = cpuSnapshot(s.pid);
  const line = (r.stdout + r.stderr).trim().split("\n").at(-1) ?? "";
  const rps = Number(line.match(/= (\d+) req\/s/)?.[1] ?? NaN);
  const okCount = Number(line.match(/h3load: (\d+)\//)?.[1] ?? 0);
  const cpu = cpuPerRequest(before, after, okCount);
  return {
    rps,
    okCount,
    cpuUs: okCount > 0 ? cpu.totalUs : NaN,
    threads: cpu.threads,
    ok: r.code === 0,
    line,
  };
}

/** `servers` in round `round`: rotated by one each round, so no server always follows the same one. */
function rotate<T>(xs: T[], round: number): T[] {
  const k = round % xs.length;
  return [...xs.slice(k), ...xs.slice(0, k)];
}

function medianThreads(all: Record<string, number>[]): Record<string, number> {
  const names = new Set(all.flatMap((t) => Object.keys(t)));
  const out: Record<string, number> = {};
  for (const n of names) out[n] = median(all.map((t) => t[n] ?? 0));
  return out;
}

/** Formats a thread split: `main 120, tokio-runtime-w 30, ...` (µs/req, largest first). */
export function formatThreads(threads: Record<string, number>): string {
  return Object.entries(threads).sort((a, b) => b[1] - a[1]).map(([n, us]) => `${n} ${us}`)
    .join(", ");
}

/** Small responses at each connection level, alternating servers every run. */
export async function loadTest(servers: Server[], st: LoadSettings): Promise<LoadRow[]> {
  const rows: LoadRow[] = [];
  // Warm-up (connection pools, and V8's optimizing compiler: spooky's hot
  // path costs 30-40% more per request for its first ~20,000 requests than
  // once compiled, a floor's much less), not measured: a proxy runs warm.
  for (const s of servers) await h3load(s, 4, st.quick ? 50 : WARMUP_PER_CONN);
  for (const conns of st.connLevels) {
    const per = Math.max(1, Math.round(st.requests / conns));
    const acc = new Map(servers.map((s) => [s, {
      rps: [] as number[],
      cpu: [] as number[],
      threads: [] as Record<string, number>[],
      failed: 0,
    }]));
    for (let round = 0; round < st.rounds; round++) {
      for (const s of rotate(servers, round)) {
        const r = await h3load(s, conns, per);
        const a = acc.get(s)!;
        if (!r.ok) a.failed++;
        if (Number.isFinite(r.rps)) a.rps.push(r.rps);
        if (Number.isFinite(r.cpuUs)) {
          a.cpu.push(r.cpuUs);
          a.threads.push(r.threads);
        }
        console.log(
          `  ${s.spec.name.padEnd(12)} conns=${String(conns).padStart(2)} round ${round + 1}: ` +
            `${r.line}, server cpu ${r.cpuUs} us/req (${formatThreads(r.threads)})`,
        );
      }
    }
    for (const [s, a] of acc) {
      rows.push({
        server: s.spec.name,
        kind: s.spec.kind,
        conns,
        requests: per * conns,
        rounds: st.rounds,
        rps: median(a.rps),
        cpuUsPerReq: median(a.cpu),
        rpsAll: a.rps,
        cpuAll: a.cpu,
        threads: medianThreads(a.threads),
        failedRuns: a.failed,
      });
    }
  }
  return rows;
}

type LatencyRun = Omit<LatencyResult, "server" | "kind" | "rounds" | "p99All" | "bgP99All">;

async function latencyRun(s: Server, env: Env, st: LoadSettings, bgRate: number) {
  const r = await run(Deno.execPath(), [
    "run",
    "-A",
    `${ROOT}bench/latency_client.ts`,
    "--port",
    String(s.port),
    "--ca",
    env.certs.caPath,
    "--requests",
    String(st.latencyRequests),
    "--bg-rate",
    String(bgRate),
    "--bg-conns",
    "4",
  ]);
  const line = r.stdout.trim().split("\n").at(-1) ?? "";
  try {
    const j = JSON.parse(line, (_k, v) => v === null ? NaN : v);
    return { bgRate, ...j } as LatencyRun;
  } catch {
    throw new Error(`latency client failed: ${r.stdout}\n${r.stderr}`);
  }
}

/**
 * Latency without load and at a fixed open-loop rate of `st.bgRate` req/s,
 * in alternating rounds; medians of each percentile over the rounds.
 */
export async function latencyTest(
  servers: Server[],
  env: Env,
  st: LoadSettings,
): Promise<LatencyResult[]> {
  const out: LatencyResult[] = [];
  for (const bgRate of [0, st.bgRate]) {
    const runs = new Map(servers.map((s) => [s, [] as LatencyRun[]]));
    for (let round = 0; round < st.rounds; round++) {
      for (const s of rotate(servers, round)) {
        const r = await latencyRun(s, env, st, bgRate);
        runs.get(s)!.push(r);
        console.log(
          `  ${s.spec.name.padEnd(12)} bg=${bgRate} req/s round ${
            round + 1
          }: sequential p50 ${r.p50} ` +
            `p99 ${r.p99} ms` + (bgRate ? `; open-loop p50 ${r.bgP50} p99 ${r.bgP99} ms` : "") +
            (r.errors ? `; ${r.errors} errors` : ""),
        );
      }
    }
    for (const [s, rs] of runs) {
      const med = (k: keyof LatencyRun) => median(rs.map((r) => r[k] as number));
      const sum = (k: keyof LatencyRun) => rs.reduce((n, r) => n + (r[k] as number), 0);
      out.push({
        server: s.spec.name,
        kind: s.spec.kind,
        bgRate,
        rounds: rs.length,
        n: sum("n"),
        p50: med("p50"),
        p90: med("p90"),
        p99: med("p99"),
        max: Math.max(...rs.map((r) => r.max)),
        p99All: rs.map((r) => r.p99),
        bgP50: med("bgP50"),
        bgP99: med("bgP99"),
        bgP99All: rs.map((r) => r.bgP99),
        bgSent: sum("bgSent"),
        bgOk: sum("bgOk"),
        errors: sum("errors"),
      });
    }
  }
  return out;
}
