/**
 * The benchmark of issues #8, #14 and #29: spooky against the runtime's
 * floor (`bench/floor.ts`) and Caddy, as HTTP/3 → HTTP/2 reverse proxies in
 * front of the same neutral backend (h2c), and spooky against Caddy as
 * HTTP/3 → HTTP/1.1 reverse proxies in front of it (`spooky-h1`,
 * `caddy-h1`), in one run.
 *
 *     deno task bench              # full run, writes docs/benchmarks.{md,svg,json}
 *     deno task bench --quick      # smoke run: 1 round, few requests, small transfers
 *     deno task bench --profile    # CPU profile of the proxy under h3load, summarised
 *                                  # (--profile-conns N: at N connections, default 4)
 *
 * Options: `--servers floor,floor-worker,floor-h2,floor-h1,spooky,caddy,spooky-h1,caddy-h1` (the
 * default; order of the rounds), `--no-memory` (skip streaming and idle connections),
 * `--only streams` (the large download and upload alone, printed; no report written),
 * `--no-caddy`, `--no-websocket` (skip the WebSocket echo row), `--rounds N`,
 * `--out-dir DIR`, `--keep-tmp`.
 *
 * Phases, each in its own file:
 *
 * 1. servers (`servers.ts`): every party is its own process: the backend,
 *    the floor, spooky (`proxy/main.ts -c <generated yaml>`), Caddy, and the
 *    clients (gtlsclient via `../shared/tools/h3load`,
 *    `bench/latency_client.ts`, `bench/idle_conns.ts`).
 * 2. load (`load.ts`): small responses at 1, 4 and 16 connections, rounds
 *    alternating between the servers; median req/s and server CPU µs/req,
 *    split by thread; latency with no load and at a fixed 200 req/s.
 * 3. memory (`memory.ts`, spooky and Caddy): a large download and upload
 *    (throughput, peak RSS growth) and idle connections (RSS per connection;
 *    not for the HTTP/1.1 variants: an idle QUIC connection never reaches
 *    the backend).
 * 4. WebSockets (`websocket.ts`): 1,000 echo round trips on one WebSocket,
 *    spooky over HTTP/3 (RFC 9220) and over its TCP fallback, Caddy over
 *    TLS; p50 and p99.
 * 5. report (`report.ts`, `chart.ts`): Markdown, SVG, JSON, and the ratios
 *    spooky/floor and spooky/Caddy printed at the end.
 *
 * Needs `gtlsclient` (Debian `ngtcp2-client`); Caddy (Debian `caddy`) is
 * optional: without it Caddy is left out.
 *
 * @module
 */
// deno-lint-ignore-file no-console

import { parseArgs } from "node:util";
import { ensureDevCerts } from "../shared/certs/generate.ts";
import { printProfileDir } from "./analyze_profile.ts";
import { renderChart } from "./chart.ts";
import { formatThreads, h3load, latencyTest, type LoadSettings, loadTest } from "./load.ts";
import { idleTest, streamTest } from "./memory.ts";
import { renderMarkdown, summaryLines } from "./report.ts";
import type { BenchResults, IdleResult, StreamResult, WebSocketResult } from "./results.ts";
import { websocketTest } from "./websocket.ts";
import {
  type Env,
  has,
  type Proc,
  ROOT,
  run,
  type Server,
  type ServerSpec,
  serverSpecs,
  startBackend,
  startServer,
  startSpooky,
  stop,
} from "./servers.ts";

interface Settings extends LoadSettings {
  streamBytes: number;
  idleConns: number;
  outDir: string;
}

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

async function profileMode(
  env: Env,
  st: Settings,
  spec: ServerSpec | undefined,
  conns: number,
): Promise<void> {
  // outside env.tmp, which is removed at the end: the profile is kept
  const dir = await Deno.makeTempDir({ prefix: "spooky-profile-" });
  const proxy = await startSpooky(env, spec, ["--cpu-prof", `--cpu-prof-dir=${dir}`]);
  await h3load(proxy, conns, 250);
  const per = st.quick ? 250 : Math.round(8000 / conns);
  const r = await h3load(proxy, conns, per);
  console.log(`profiled load: ${r.line}`);
  console.log(`server cpu ${r.cpuUs} us/req by thread: ${formatThreads(r.threads)}`);
  await stop(proxy, "SIGINT");
  await printProfileDir(dir);
}

/**
 * spooky's `limits` for the idle-connection row only: its `count` connections
 * all come from 127.0.0.1, so the per-address and per-network caps are lifted
 * (the row measures memory per connection, not admission).
 */
function idleRowLimits(count: number): string[] {
  return [
    `max_connections_per_address: ${2 * count}`,
    `max_handshakes_per_address: ${2 * count}`,
    `max_handshakes_per_network: ${2 * count}`,
  ];
}

/** Starts the given kinds of server (spooky with more `limits` lines); `upstream` filters by backend protocol. */
type StartAll = (spookyLimits?: string[], upstream?: "h2") => Promise<Server[]>;

/** The memory phase on fresh processes (no heap left over from the load). */
async function memoryPhase(
  env: Env,
  st: Settings,
  startAll: StartAll,
  stopAll: (list: Server[]) => Promise<void>,
): Promise<{ idle: IdleResult[]; streams: StreamResult[] }> {
  const servers = await startAll(idleRowLimits(st.idleConns), "h2");
  for (const s of servers) await h3load(s, 1, 10); // warm the upstream pool
  console.log("idle connections:");
  const idle: IdleResult[] = [];
  for (const s of servers) {
    const r = await idleTest(s, env, st.idleConns);
    console.log(`  ${r.server.padEnd(12)} ${r.opened} conns: ${r.kibPerConn.toFixed(1)} KiB/conn`);
    idle.push(r);
  }
  await stopAll(servers);
  return { idle, streams: await streamPhase(env, st, startAll, stopAll) };
}

/** The large download and upload through each server, on fresh processes. */
async function streamPhase(
  env: Env,
  st: Settings,
  startAll: StartAll,
  stopAll: (list: Server[]) => Promise<void>,
): Promise<StreamResult[]> {
  const servers = await startAll();
  const uploadFile = `${env.tmp}/upload.bin`;
  await run("truncate", ["-s", String(st.streamBytes), uploadFile]);
  console.log("streaming:");
  const streams: StreamResult[] = [];
  for (const direction of ["download", "upload"] as const) {
    for (const s of servers) {
      const r = await streamTest(s, env, st.streamBytes, direction, uploadFile);
      console.log(
        `  ${r.server.padEnd(12)} ${direction}: ${r.mbitPerS.toFixed(0)} Mbit/s, ` +
          `RSS +${((r.rssPeakKiB - r.rssBeforeKiB) / 1024).toFixed(1)} MiB ${
            r.ok ? "" : `FAILED ${r.detail}`
          }`,
      );
      streams.push(r);
    }
  }
  await Deno.remove(uploadFile);
  await stopAll(servers);
  return streams;
}

async function writeReport(results: BenchResults, outDir: string): Promise<void> {
  await Deno.mkdir(outDir, { recursive: true });
  await Deno.writeTextFile(`${outDir}/benchmarks.md`, renderMarkdown(results));
  await Deno.writeTextFile(`${outDir}/benchmarks.svg`, renderChart(results));
  await Deno.writeTextFile(`${outDir}/benchmarks.json`, JSON.stringify(results, null, 2) + "\n");
  // keep `deno fmt --check` (CI) clean
  await run(Deno.execPath(), [
    "fmt",
    `${outDir}/benchmarks.md`,
    `${outDir}/benchmarks.svg`,
    `${outDir}/benchmarks.json`,
  ]);
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      quick: { type: "boolean", default: false },
      profile: { type: "boolean", default: false },
      "profile-conns": { type: "string", default: "4" },
      servers: {
        type: "string",
        default: "floor,floor-worker,floor-h2,floor-h1,spooky,caddy,spooky-h1,caddy-h1",
      },
      only: { type: "string" },
      rounds: { type: "string" },
      "no-caddy": { type: "boolean", default: false },
      "no-memory": { type: "boolean", default: false },
      "no-websocket": { type: "boolean", default: false },
      "out-dir": { type: "string", default: `${ROOT}docs` },
      "keep-tmp": { type: "boolean", default: false },
    },
  });
  const quick = values.quick!;
  if (values.only !== undefined && values.only !== "streams") {
    console.error(`--only takes "streams", got ${values.only}`);
    return 2;
  }
  if (!(await has("gtlsclient"))) {
    console.error("gtlsclient is missing: apt-get install -y ngtcp2-client");
    return 2;
  }
  let names = values.servers!.split(",").map((s) => s.trim()).filter(Boolean);
  const isCaddy = (n: string) => n === "caddy" || n === "caddy-h1";
  if (values["no-caddy"]) names = names.filter((n) => !isCaddy(n));
  if (names.some(isCaddy) && !(await has("caddy"))) {
    console.error(
      "caddy is missing, so the Caddy comparison is skipped. Install it with:\n" +
        "  apt-get update && apt-get install -y caddy   # Debian 12: Caddy 2.6",
    );
    names = names.filter((n) => !isCaddy(n));
  }
  const specs = serverSpecs(names);
  const rounds = Number(values.rounds ?? (quick ? 1 : 3));
  if (!Number.isInteger(rounds) || rounds < 1) {
    console.error(`--rounds must be a positive integer, got ${values.rounds}`);
    return 2;
  }
  const st: Settings = {
    quick,
    rounds,
    requests: quick ? 400 : 4000,
    connLevels: [1, 4, 16],
    latencyRequests: quick ? 100 : 1000,
    bgRate: 200,
    streamBytes: quick ? 64 * 1024 * 1024 : 1024 * 1024 * 1024,
    idleConns: quick ? 200 : 1000,
    outDir: values["out-dir"]!,
  };

  const tmp = await Deno.makeTempDir({ prefix: "spooky-bench-" });
  const certs = await ensureDevCerts(`${tmp}/certs`);
  const procs: Proc[] = [];
  let backend: Proc | undefined;
  try {
    const be = await startBackend();
    backend = be;
    const env: Env = { tmp, certs, backendPort: be.port };
    if (values.profile) {
      const conns = Number(values["profile-conns"]);
      await profileMode(env, st, specs.find((x) => x.kind === "spooky"), conns);
      return 0;
    }
    const startAll = async (
      kinds: string[],
      spookyLimits: string[] = [],
      upstream?: "h2",
    ): Promise<Server[]> => {
      const list: Server[] = [];
      const wanted = (s: ServerSpec) =>
        kinds.includes(s.kind) && (upstream === undefined || (s.upstream ?? "h2") === upstream);
      for (const spec of specs.filter(wanted)) {
        const limits = spec.kind === "spooky" ? [...(spec.limits ?? []), ...spookyLimits] : [];
        const s = await startServer(env, limits.length > 0 ? { ...spec, limits } : spec);
        list.push(s);
        procs.push(s);
      }
      return list;
    };
    const stopAll = async (list: Server[]) => {
      for (const s of list) await stop(s);
    };
    const startProxies: StartAll = (lifted, upstream) =>
      startAll(["spooky", "caddy"], lifted, upstream);
    if (values.only === "streams") {
      console.log(`servers: ${specs.map((s) => s.name).join(", ")}`);
      await streamPhase(env, st, startProxies, stopAll);
      return 0;
    }
    const m = await machine(names.some(isCaddy));
    console.log(`machine: ${m.nproc} CPUs (${m.cpu}), ${m.memGiB} GiB, load ${m.loadAvg}`);
    console.log(`servers: ${specs.map((s) => s.name).join(", ")}; ${rounds} round(s)`);

    // load: throughput, CPU, latency (same server processes)
    const servers = await startAll(["floor", "spooky", "caddy"]);
    console.log("small responses (h3load):");
    const load = await loadTest(servers, st);
    console.log("latency:");
    const latency = await latencyTest(servers, env, st);
    await stopAll(servers);

    const mem = values["no-memory"]
      ? { idle: [], streams: [] }
      : await memoryPhase(env, st, startProxies, stopAll);

    // WebSocket echo round trips: spooky over HTTP/3 and its TCP fallback, Caddy over TCP.
    let websocket: WebSocketResult[] = [];
    if (!values["no-websocket"] && names.includes("spooky")) {
      console.log("websocket echo:");
      websocket = await websocketTest(env, {
        rounds: st.rounds,
        roundTrips: quick ? 100 : 1000,
      }, names.some(isCaddy));
    }

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
      servers: specs.map((s) => s.name),
      load,
      latency,
      ...mem,
      websocket,
    };
    await writeReport(results, st.outDir);
    console.log("");
    for (const line of summaryLines(results)) console.log(line);
    console.log(`\nwrote ${st.outDir}/benchmarks.md, benchmarks.svg, benchmarks.json`);
    return 0;
  } finally {
    for (const p of procs) await stop(p);
    await stop(backend);
    if (!values["keep-tmp"]) await Deno.remove(tmp, { recursive: true }).catch(() => {});
  }
}

if (import.meta.main) Deno.exit(await main());
