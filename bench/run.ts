/**
 * The benchmark of issue #8: spooky (this proxy) against Caddy as HTTP/3 →
 * HTTP/2 reverse proxies in front of the same neutral h2c backend.
 *
 *     deno task bench              # full run (~6-10 minutes), writes docs/benchmarks.{md,svg}
 *     deno task bench --quick      # smoke run: 1 round, few requests, small transfers
 *     deno task bench --profile    # CPU profile of the proxy under h3load, summarised
 *
 * Every server runs in its own process: the backend (`bench/backend.ts`), the
 * proxy (`proxy/main.ts`), Caddy, and the clients (gtlsclient via
 * `../shared/tools/h3load`, `bench/latency_client.ts`, `bench/idle_conns.ts`).
 * Measurements:
 *
 * 1. Small responses (100 bytes): h3load at 1, 4 and 16 connections, rounds
 *    alternating between the two servers; median req/s and server CPU µs per
 *    request (from /proc, steadier than req/s on a shared machine).
 * 2. Latency: sequential requests on one connection, with no other load and
 *    under a fixed open-loop background load on 4 more connections.
 * 3. Streaming: a 1 GiB download and a 1 GiB upload with gtlsclient;
 *    throughput and the server's peak RSS growth (VmRSS polled every 50 ms).
 * 4. 1,000 idle QUIC connections: server RSS growth per connection.
 *
 * Needs `gtlsclient` (Debian `ngtcp2-client`); Caddy (Debian `caddy`) is
 * optional: without it only the proxy is measured.
 *
 * @module
 */
// deno-lint-ignore-file no-console

import { parseArgs } from "node:util";
import { ensureDevCerts } from "../shared/certs/generate.ts";
import { summarize } from "./analyze_profile.ts";
import { renderChart, renderMarkdown } from "./report.ts";
import { median } from "./stats.ts";
import type { BenchResults, LatencyResult, LoadRow, ServerName, StreamResult } from "./report.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const H3LOAD = Deno.env.get("H3LOAD") ??
  new URL("../../shared/tools/h3load", import.meta.url).pathname;

interface Settings {
  quick: boolean;
  rounds: number;
  /** total requests of one h3load run */
  requests: number;
  connLevels: number[];
  latencyRequests: number;
  bgRate: number;
  streamBytes: number;
  idleConns: number;
  caddy: boolean;
  outDir: string;
}

// ---------------------------------------------------------------- processes

interface Proc {
  name: string;
  child: Deno.ChildProcess;
  pid: number;
  /** the first capture group of the ready pattern */
  ready: string;
  /** last lines of output, for error messages */
  tail: string[];
}

async function drainLines(
  stream: ReadableStream<Uint8Array>,
  onLine: (line: string) => void,
): Promise<void> {
  const decoder = new TextDecoder();
  let buf = "";
  try {
    for await (const chunk of stream) {
      buf += decoder.decode(chunk, { stream: true });
      let i;
      while ((i = buf.indexOf("\n")) >= 0) {
        onLine(buf.slice(0, i));
        buf = buf.slice(i + 1);
      }
    }
  } catch {
    // process gone
  }
  if (buf) onLine(buf);
}

/** Starts a process and waits until a line of its output matches `ready`. */
async function start(
  name: string,
  cmd: string,
  args: string[],
  ready: RegExp,
  env: Record<string, string> = {},
  stdin: "piped" | "null" = "null",
): Promise<Proc> {
  const child = new Deno.Command(cmd, {
    args,
    env,
    stdin,
    stdout: "piped",
    stderr: "piped",
    cwd: ROOT,
  }).spawn();
  const tail: string[] = [];
  const { promise, resolve } = Promise.withResolvers<string | null>();
  const onLine = (line: string) => {
    tail.push(line);
    if (tail.length > 20) tail.shift();
    const m = line.match(ready);
    if (m) resolve(m[1] ?? "");
  };
  drainLines(child.stdout, onLine);
  drainLines(child.stderr, onLine);
  child.status.then(() => resolve(null));
  const timer = setTimeout(() => resolve(null), 60_000);
  const got = await promise;
  clearTimeout(timer);
  if (got === null) {
    try {
      child.kill("SIGKILL");
    } catch { /* gone */ }
    throw new Error(`${name} did not start:\n${tail.join("\n")}`);
  }
  return { name, child, pid: child.pid, ready: got, tail };
}

async function stop(p: Proc | undefined, signal: Deno.Signal = "SIGTERM"): Promise<void> {
  if (!p) return;
  try {
    p.child.kill(signal);
  } catch {
    return; // already exited
  }
  const timer = setTimeout(() => {
    try {
      p.child.kill("SIGKILL");
    } catch { /* gone */ }
  }, 15_000);
  await p.child.status;
  clearTimeout(timer);
}

async function run(cmd: string, args: string[], env: Record<string, string> = {}) {
  const out = await new Deno.Command(cmd, {
    args,
    env,
    stdout: "piped",
    stderr: "piped",
    cwd: ROOT,
  })
    .output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

async function has(cmd: string): Promise<boolean> {
  try {
    return (await run("sh", ["-c", `command -v ${cmd}`])).code === 0;
  } catch {
    return false;
  }
}

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

function rssKiB(pid: number): number {
  try {
    const m = Deno.readTextFileSync(`/proc/${pid}/status`).match(/VmRSS:\s+(\d+)/);
    return m ? Number(m[1]) : NaN;
  } catch {
    return NaN;
  }
}

/** CPU ticks of each thread of a process, keyed by `tid name`. */
function threadTicks(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const e of Deno.readDirSync(`/proc/${pid}/task`)) {
    try {
      const stat = Deno.readTextFileSync(`/proc/${pid}/task/${e.name}/stat`);
      const close = stat.lastIndexOf(")");
      const name = stat.slice(stat.indexOf("(") + 1, close);
      const f = stat.slice(close + 2).split(" ");
      out.set(`${e.name} ${name}`, Number(f[11]) + Number(f[12]));
    } catch {
      // thread gone
    }
  }
  return out;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ------------------------------------------------------------------ servers

interface Env {
  tmp: string;
  certs: { certPath: string; keyPath: string; caPath: string };
  backendPort: number;
}

async function startProxy(env: Env, extraArgs: string[] = []): Promise<Proc & { port: number }> {
  const config = `${env.tmp}/proxy.yaml`;
  await Deno.writeTextFile(
    config,
    `version: 1
listen:
  protocol: http3
  address: 127.0.0.1
  port: 0
  tls:
    cert: ${env.certs.certPath}
    key: ${env.certs.keyPath}
upstream:
  bench:
    route:
      path_prefix: /
    # the timeout runs until the response headers, so it also bounds an upload
    request_timeout_ms: 600000
    backends:
      - id: backend-1
        address: 127.0.0.1:${env.backendPort}
log:
  level: info
`,
  );
  const p = await start(
    "proxy",
    Deno.execPath(),
    ["run", "-A", ...extraArgs, `${ROOT}proxy/main.ts`, "-c", config],
    /^Listening on .*:(\d+)$/,
  );
  return { ...p, port: Number(p.ready) };
}

async function startCaddy(env: Env): Promise<Proc & { port: number }> {
  const port = freePort();
  const file = `${env.tmp}/Caddyfile`;
  await Deno.writeTextFile(
    file,
    `{
	admin off
	auto_https off
	skip_install_trust
	storage file_system ${env.tmp}/caddy-data
	servers {
		protocols h1 h2 h3
	}
}
https://localhost:${port} {
	bind 127.0.0.1
	tls ${env.certs.certPath} ${env.certs.keyPath}
	reverse_proxy h2c://127.0.0.1:${env.backendPort}
}
`,
  );
  const p = await start(
    "caddy",
    "caddy",
    ["run", "--config", file, "--adapter", "caddyfile"],
    /"msg":"serving initial configuration"()/,
    { HOME: env.tmp, XDG_DATA_HOME: `${env.tmp}/xdg`, XDG_CONFIG_HOME: `${env.tmp}/xdg` },
  );
  return { ...p, port };
}

type Server = Proc & { port: number; server: ServerName };

// --------------------------------------------------------------- measurers

async function h3load(
  s: Server,
  conns: number,
  perConn: number,
): Promise<{ rps: number; cpuUs: number; ok: boolean; line: string }> {
  const r = await run(H3LOAD, [`https://localhost:${s.port}/`, String(conns), String(perConn)], {
    H3LOAD_PID: String(s.pid),
  });
  const line = (r.stdout + r.stderr).trim().split("\n").at(-1) ?? "";
  const rps = Number(line.match(/= (\d+) req\/s/)?.[1] ?? NaN);
  const cpuUs = Number(line.match(/server cpu (\d+) us\/req/)?.[1] ?? NaN);
  return { rps, cpuUs, ok: r.code === 0, line };
}

async function loadTest(servers: Server[], st: Settings): Promise<LoadRow[]> {
  const rows: LoadRow[] = [];
  // warm-up (JIT, connection pools), not measured
  for (const s of servers) await h3load(s, 4, st.quick ? 50 : 250);
  for (const conns of st.connLevels) {
    const per = Math.max(1, Math.round(st.requests / conns));
    const samples = new Map<ServerName, { rps: number[]; cpu: number[]; failed: number }>();
    for (const s of servers) samples.set(s.server, { rps: [], cpu: [], failed: 0 });
    for (let round = 0; round < st.rounds; round++) {
      // alternate, and swap the order every round
      const order = round % 2 === 0 ? servers : [...servers].reverse();
      for (const s of order) {
        const r = await h3load(s, conns, per);
        const acc = samples.get(s.server)!;
        if (!r.ok) acc.failed++;
        if (Number.isFinite(r.rps)) acc.rps.push(r.rps);
        if (Number.isFinite(r.cpuUs)) acc.cpu.push(r.cpuUs);
        console.log(
          `  ${s.server.padEnd(6)} conns=${String(conns).padStart(2)} round ${
            round + 1
          }: ${r.line}`,
        );
      }
    }
    for (const [server, acc] of samples) {
      rows.push({
        server,
        conns,
        requests: per * conns,
        rounds: st.rounds,
        rps: median(acc.rps),
        cpuUsPerReq: median(acc.cpu),
        rpsAll: acc.rps,
        cpuAll: acc.cpu,
        failedRuns: acc.failed,
      });
    }
  }
  return rows;
}

/** Per-thread CPU of the proxy under one h3load run (4 connections). */
async function threadSplit(
  s: Server,
  st: Settings,
): Promise<Array<{ thread: string; usPerReq: number }>> {
  const before = threadTicks(s.pid);
  const per = Math.round(st.requests / 4);
  const r = await h3load(s, 4, per);
  const after = threadTicks(s.pid);
  const hz = 100; // CLK_TCK on Linux
  const ok = r.ok ? per * 4 : per * 4; // counted requests (h3load fails the run otherwise)
  const byName = new Map<string, number>();
  for (const [k, v] of after) {
    const d = v - (before.get(k) ?? 0);
    if (d <= 0) continue;
    const name = k.replace(/^\d+ /, "").replace(/[-_ ]?\d+$/, "");
    byName.set(name, (byName.get(name) ?? 0) + d);
  }
  return [...byName].map(([thread, ticks]) => ({
    thread,
    usPerReq: Math.round(ticks * 1e6 / hz / ok),
  }))
    .sort((a, b) => b.usPerReq - a.usPerReq);
}

async function latency(s: Server, env: Env, st: Settings, bgRate: number): Promise<LatencyResult> {
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
    const j = JSON.parse(line);
    return { server: s.server, bgRate, ...j };
  } catch {
    throw new Error(`latency client failed: ${r.stdout}\n${r.stderr}`);
  }
}

/** Polls a process's RSS until `done` settles; returns the peak. */
async function peakRss<T>(pid: number, done: Promise<T>): Promise<{ result: T; peakKiB: number }> {
  let peak = rssKiB(pid);
  let finished = false;
  const result = done.finally(() => (finished = true));
  while (!finished) {
    peak = Math.max(peak, rssKiB(pid) || 0);
    await sleep(50);
  }
  return { result: await result, peakKiB: peak };
}

async function streamTest(
  s: Server,
  env: Env,
  st: Settings,
  direction: "download" | "upload",
  uploadFile: string,
): Promise<StreamResult> {
  const dir = await Deno.makeTempDir({ dir: env.tmp, prefix: "dl-" });
  const path = direction === "download" ? `/bytes/${st.streamBytes}` : "/sink";
  const args = [
    "300",
    "gtlsclient",
    "-q",
    "--no-quic-dump",
    "--no-http-dump",
    "--exit-on-all-streams-close",
    `--download=${dir}`,
    "--max-data=64M",
    "--max-stream-data-bidi-local=32M",
    ...(direction === "upload" ? ["-m", "POST", "-d", uploadFile] : []),
    "127.0.0.1",
    String(s.port),
    `https://localhost:${s.port}${path}`,
  ];
  await sleep(500);
  const before = rssKiB(s.pid);
  const t0 = performance.now();
  const { result, peakKiB } = await peakRss(s.pid, run("timeout", args));
  const seconds = (performance.now() - t0) / 1000;
  let ok = result.code === 0;
  let detail = "";
  try {
    if (direction === "download") {
      const size = (await Deno.stat(`${dir}/${st.streamBytes}`)).size;
      ok &&= size === st.streamBytes;
      detail = `${size} bytes received`;
    } else {
      const text = (await Deno.readTextFile(`${dir}/sink`)).trim();
      const echoed = Number(text);
      ok &&= echoed === st.streamBytes;
      detail = `backend counted ${
        Number.isNaN(echoed) ? JSON.stringify(text.slice(0, 200)) : echoed
      } bytes`;
    }
  } catch (err) {
    ok = false;
    detail = `no response body: ${err}; ${result.stderr.slice(-300)}`;
  }
  await Deno.remove(dir, { recursive: true });
  return {
    server: s.server,
    direction,
    bytes: st.streamBytes,
    seconds,
    mbitPerS: (st.streamBytes * 8) / seconds / 1e6,
    rssBeforeKiB: before,
    rssPeakKiB: peakKiB,
    ok,
    detail,
  };
}

async function idleTest(s: Server, env: Env, st: Settings) {
  await sleep(1000);
  const before = rssKiB(s.pid);
  const client = await start(
    "idle client",
    Deno.execPath(),
    [
      "run",
      "-A",
      `${ROOT}bench/idle_conns.ts`,
      "--port",
      String(s.port),
      "--ca",
      env.certs.caPath,
      "--count",
      String(st.idleConns),
    ],
    /^ready (\d+)$/,
    {},
    "piped",
  );
  const opened = Number(client.ready);
  await sleep(2000); // let the server settle
  const after = rssKiB(s.pid);
  const writer = client.child.stdin.getWriter();
  await writer.write(new TextEncoder().encode("close\n")).catch(() => {});
  await writer.close().catch(() => {});
  await client.child.status;
  await sleep(1000);
  return {
    server: s.server,
    opened,
    rssBeforeKiB: before,
    rssAfterKiB: after,
    kibPerConn: (after - before) / Math.max(1, opened),
    rssAfterCloseKiB: rssKiB(s.pid),
  };
}

// ------------------------------------------------------------------- driver

async function machine(caddyOn: boolean): Promise<BenchResults["machine"]> {
  const cpuinfo = await Deno.readTextFile("/proc/cpuinfo");
  const meminfo = await Deno.readTextFile("/proc/meminfo");
  return {
    date: new Date().toISOString(),
    nproc: navigator.hardwareConcurrency,
    cpu: cpuinfo.match(/model name\s*:\s*(.*)/)?.[1] ?? "unknown",
    memGiB: Math.round(Number(meminfo.match(/MemTotal:\s+(\d+)/)?.[1] ?? 0) / 1024 / 1024 * 10) /
      10,
    kernel: Deno.osRelease(),
    deno: Deno.version.deno,
    caddy: caddyOn
      ? (await run("caddy", ["version"])).stdout.trim().split(" ")[0]
      : "not installed",
    gtlsclient: (await run("sh", ["-c", "dpkg-query -W -f='${Version}' ngtcp2-client 2>/dev/null"]))
      .stdout.trim(),
    loadAvg: Deno.loadavg().map((x) => x.toFixed(2)).join(" "),
  };
}

async function profileMode(env: Env, st: Settings): Promise<void> {
  // outside env.tmp, which is removed at the end: the profile is kept
  const dir = await Deno.makeTempDir({ prefix: "spooky-profile-" });
  const proxy: Server = {
    ...(await startProxy(env, ["--cpu-prof", `--cpu-prof-dir=${dir}`])),
    server: "spooky",
  };
  await h3load(proxy, 4, 250);
  const per = st.quick ? 250 : 2000;
  const r = await h3load(proxy, 4, per);
  console.log(`profiled load: ${r.line}`);
  console.log("per-thread CPU:", await threadSplit(proxy, st));
  await stop(proxy, "SIGINT");
  const file = [...Deno.readDirSync(dir)].find((e) => e.name.endsWith(".cpuprofile"));
  if (!file) throw new Error("no .cpuprofile written");
  const s = summarize(JSON.parse(await Deno.readTextFile(`${dir}/${file.name}`)));
  const pct = (us: number) => `${(100 * us / s.totalUs).toFixed(1)}%`;
  console.log(
    `\nprofile ${dir}/${file.name}: ${(s.totalUs / 1e6).toFixed(1)} s sampled, idle ${
      pct(s.idleUs)
    }`,
  );
  console.log("self time by file:");
  for (const row of s.selfByFile.slice(0, 20)) {
    console.log(`  ${pct(row.us).padStart(6)}  ${row.name}`);
  }
  console.log("inclusive time by function:");
  for (const row of s.totalByFunction.slice(0, 30)) {
    console.log(`  ${pct(row.us).padStart(6)}  ${row.name}`);
  }
  console.log(`\nfull listing: deno run -A bench/analyze_profile.ts ${dir}/${file.name}`);
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      quick: { type: "boolean", default: false },
      profile: { type: "boolean", default: false },
      "no-caddy": { type: "boolean", default: false },
      "out-dir": { type: "string", default: `${ROOT}docs` },
      "keep-tmp": { type: "boolean", default: false },
    },
  });
  const quick = values.quick!;
  if (!(await has("gtlsclient"))) {
    console.error("gtlsclient is missing: apt-get install -y ngtcp2-client");
    return 2;
  }
  let caddy = !values["no-caddy"];
  if (caddy && !(await has("caddy"))) {
    console.error(
      "caddy is missing, so the Caddy comparison is skipped. Install it with:\n" +
        "  apt-get update && apt-get install -y caddy   # Debian 12: Caddy 2.6",
    );
    caddy = false;
  }
  const st: Settings = {
    quick,
    rounds: quick ? 1 : 3,
    requests: quick ? 400 : 4000,
    connLevels: [1, 4, 16],
    latencyRequests: quick ? 100 : 1000,
    bgRate: 200,
    streamBytes: quick ? 64 * 1024 * 1024 : 1024 * 1024 * 1024,
    idleConns: quick ? 200 : 1000,
    caddy,
    outDir: values["out-dir"]!,
  };

  const tmp = await Deno.makeTempDir({ prefix: "spooky-bench-" });
  const certs = await ensureDevCerts(`${tmp}/certs`);
  const procs: Array<Proc | undefined> = [];
  let backend: Proc | undefined;
  try {
    backend = await start(
      "backend",
      Deno.execPath(),
      ["run", "-A", `${ROOT}bench/backend.ts`],
      /^Listening on .*:(\d+)$/,
    );
    const env: Env = { tmp, certs, backendPort: Number(backend.ready) };
    if (values.profile) {
      await profileMode(env, st);
      return 0;
    }

    const startBoth = async (): Promise<Server[]> => {
      const list: Server[] = [{ ...(await startProxy(env)), server: "spooky" }];
      if (caddy) list.push({ ...(await startCaddy(env)), server: "caddy" });
      procs.push(...list);
      return list;
    };
    const stopAll = async (list: Server[]) => {
      for (const s of list) await stop(s);
    };
    const m = await machine(caddy);
    console.log(`machine: ${m.nproc} CPUs (${m.cpu}), ${m.memGiB} GiB, load ${m.loadAvg}`);

    // 1 + 2: throughput, CPU, latency (same server processes)
    let servers = await startBoth();
    console.log("small responses (h3load):");
    const load = await loadTest(servers, st);
    const threads = await threadSplit(servers[0], st);
    console.log("proxy CPU per thread (µs/req):", threads);
    console.log("latency:");
    const lat: LatencyResult[] = [];
    for (const bg of [0, st.bgRate]) {
      for (const s of servers) {
        const r = await latency(s, env, st, bg);
        console.log(`  ${s.server.padEnd(6)} bg=${bg} req/s: p50 ${r.p50} ms, p99 ${r.p99} ms`);
        lat.push(r);
      }
    }
    await stopAll(servers);

    // 3: idle connections (fresh processes: no heap left over from the load)
    servers = await startBoth();
    for (const s of servers) await h3load(s, 1, 10); // warm the upstream pool
    console.log("idle connections:");
    const idle = [];
    for (const s of servers) {
      const r = await idleTest(s, env, st);
      console.log(`  ${s.server.padEnd(6)} ${r.opened} conns: ${r.kibPerConn.toFixed(1)} KiB/conn`);
      idle.push(r);
    }
    await stopAll(servers);

    // 4: streaming (fresh processes)
    servers = await startBoth();
    const uploadFile = `${tmp}/upload.bin`;
    await run("truncate", ["-s", String(st.streamBytes), uploadFile]);
    console.log("streaming:");
    const streams: StreamResult[] = [];
    for (const direction of ["download", "upload"] as const) {
      for (const s of servers) {
        const r = await streamTest(s, env, st, direction, uploadFile);
        console.log(
          `  ${s.server.padEnd(6)} ${direction}: ${r.mbitPerS.toFixed(0)} Mbit/s, ` +
            `RSS +${((r.rssPeakKiB - r.rssBeforeKiB) / 1024).toFixed(1)} MiB ${
              r.ok ? "" : `FAILED ${r.detail}`
            }`,
        );
        streams.push(r);
      }
    }
    await Deno.remove(uploadFile);
    await stopAll(servers);

    const results: BenchResults = {
      quick,
      machine: m,
      settings: {
        rounds: st.rounds,
        requests: st.requests,
        latencyRequests: st.latencyRequests,
        bgRate: st.bgRate,
        streamBytes: st.streamBytes,
        idleConns: st.idleConns,
      },
      load,
      threads,
      latency: lat,
      streams,
      idle,
    };
    await Deno.mkdir(st.outDir, { recursive: true });
    await Deno.writeTextFile(`${st.outDir}/benchmarks.md`, renderMarkdown(results));
    await Deno.writeTextFile(`${st.outDir}/benchmarks.svg`, renderChart(results));
    await Deno.writeTextFile(
      `${st.outDir}/benchmarks.json`,
      JSON.stringify(results, null, 2) + "\n",
    );
    // keep `deno fmt --check` (CI) clean
    await run(Deno.execPath(), [
      "fmt",
      `${st.outDir}/benchmarks.md`,
      `${st.outDir}/benchmarks.svg`,
      `${st.outDir}/benchmarks.json`,
    ]);
    console.log(`\nwrote ${st.outDir}/benchmarks.md, benchmarks.svg, benchmarks.json`);
    return 0;
  } finally {
    for (const p of procs) await stop(p);
    await stop(backend);
    if (!values["keep-tmp"]) await Deno.remove(tmp, { recursive: true }).catch(() => {});
  }
}

if (import.meta.main) Deno.exit(await main());
