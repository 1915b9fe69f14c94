/**
 * The Markdown report of `bench/run.ts` (`docs/benchmarks.md`) and the summary
 * it prints: spooky's ratios over the runtime's floor and over Caddy.
 *
 * @module
 */

import type { BenchResults, LatencyResult, LoadRow } from "./results.ts";
import { websocketSection, websocketSummary } from "./websocket.ts";

const fmt = (x: number, digits = 0) => Number.isFinite(x) ? x.toFixed(digits) : "n/a";
const mib = (kib: number) => fmt(kib / 1024, 1);

function ratio(a: number | undefined, b: number | undefined, digits = 2): string {
  if (a === undefined || b === undefined || !Number.isFinite(a) || !Number.isFinite(b) || b === 0) {
    return "n/a";
  }
  return `${(a / b).toFixed(digits)}x`;
}

/** One spooky variant against the floor and Caddy at one connection count. */
export interface RatioRow {
  server: string;
  conns: number;
  rpsVsFloor: string;
  cpuVsFloor: string;
  rpsVsCaddy: string;
  cpuVsCaddy: string;
}

/**
 * The server of `kind` (floor or Caddy) a spooky variant is compared with:
 * the one speaking the same protocol to the backend (`spooky-h1` →
 * `floor-h1`, `caddy-h1`) when the run has it, else the plain one.
 */
export function peerOf(
  kind: "floor" | "caddy",
  server: string,
  servers: readonly string[],
): string {
  const peer = server.replace(/^spooky/, kind);
  return peer !== server && servers.includes(peer) ? peer : kind;
}

/** spooky/floor and spooky/Caddy for req/s and CPU µs/req, per spooky variant and level. */
export function ratioRows(r: BenchResults): RatioRow[] {
  const at = (server: string, conns: number): LoadRow | undefined =>
    r.load.find((x) => x.server === server && x.conns === conns);
  const rows: RatioRow[] = [];
  for (const x of r.load.filter((x) => x.kind === "spooky")) {
    const floor = at(peerOf("floor", x.server, r.servers), x.conns);
    const caddy = at(peerOf("caddy", x.server, r.servers), x.conns);
    rows.push({
      server: x.server,
      conns: x.conns,
      rpsVsFloor: ratio(x.rps, floor?.rps),
      cpuVsFloor: ratio(x.cpuUsPerReq, floor?.cpuUsPerReq),
      rpsVsCaddy: ratio(x.rps, caddy?.rps),
      cpuVsCaddy: ratio(x.cpuUsPerReq, caddy?.cpuUsPerReq),
    });
  }
  return rows;
}

/** spooky's p99 over Caddy's at the fixed background rate (sequential and open-loop requests). */
export function latencyRatios(
  r: BenchResults,
): Array<{ server: string; p99VsCaddy: string; openLoopP99VsCaddy: string }> {
  const bg = r.settings.bgRate;
  const caddyOf = (server: string) =>
    r.latency.find((x) => x.server === peerOf("caddy", server, r.servers) && x.bgRate === bg);
  return r.latency.filter((x) => x.kind === "spooky" && x.bgRate === bg).map((x) => ({
    server: x.server,
    p99VsCaddy: ratio(x.p99, caddyOf(x.server)?.p99),
    openLoopP99VsCaddy: ratio(x.bgP99, caddyOf(x.server)?.bgP99),
  }));
}

/** The lines `deno task bench` prints at the end: medians, then the ratios. */
export function summaryLines(r: BenchResults): string[] {
  const L: string[] = ["medians (req/s; server CPU µs/req: main thread + others):"];
  for (const x of r.load) {
    const main = x.threads.main ?? NaN;
    L.push(
      `  ${x.server.padEnd(12)} conns=${String(x.conns).padStart(2)}: ${fmt(x.rps).padStart(6)} ` +
        `req/s; ${fmt(x.cpuUsPerReq).padStart(4)} µs/req (main ${fmt(main)}, others ${
          fmt(x.cpuUsPerReq - main)
        })` + (x.failedRuns ? ` [${x.failedRuns} run(s) with failures]` : ""),
    );
  }
  L.push("ratios (req/s spooky/floor, CPU spooky/floor | req/s spooky/Caddy, CPU spooky/Caddy):");
  for (const x of ratioRows(r)) {
    L.push(
      `  ${x.server.padEnd(12)} conns=${String(x.conns).padStart(2)}: ${x.rpsVsFloor}, ` +
        `${x.cpuVsFloor} | ${x.rpsVsCaddy}, ${x.cpuVsCaddy}`,
    );
  }
  for (const x of latencyRatios(r)) {
    L.push(
      `  ${x.server.padEnd(12)} p99 at ${r.settings.bgRate} req/s vs Caddy: sequential ` +
        `${x.p99VsCaddy}, open-loop ${x.openLoopP99VsCaddy}`,
    );
  }
  L.push(...websocketSummary(r.websocket));
  return L;
}

function threadTable(L: string[], load: LoadRow[]): void {
  L.push("| server | connections | total µs/req | main thread | other threads | by thread name |");
  L.push("|---|---:|---:|---:|---:|---|");
  for (const x of load) {
    const main = x.threads.main ?? NaN;
    const others = Object.entries(x.threads).filter(([n]) => n !== "main")
      .sort((a, b) => b[1] - a[1]).map(([n, us]) => `${n} ${us}`).join(", ");
    L.push(
      `| ${x.server} | ${x.conns} | ${fmt(x.cpuUsPerReq)} | ${fmt(main)} | ${
        fmt(x.cpuUsPerReq - main)
      } | ${others} |`,
    );
  }
}

function latencyTable(L: string[], lat: LatencyResult[]): void {
  L.push(
    "| server | background | p50 ms | p90 ms | p99 ms | max ms | open-loop p50 ms | open-loop p99 ms | errors |",
  );
  L.push("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
  for (const x of lat) {
    L.push(
      `| ${x.server} | ${x.bgRate ? `${x.bgRate} req/s` : "none"} | ${fmt(x.p50, 2)} | ` +
        `${fmt(x.p90, 2)} | ${fmt(x.p99, 2)} | ${fmt(x.max, 2)} | ${fmt(x.bgP50, 2)} | ` +
        `${fmt(x.bgP99, 2)} | ${x.errors} |`,
    );
  }
}

/** Renders the Markdown report. */
export function renderMarkdown(r: BenchResults): string {
  const m = r.machine;
  const L: string[] = [];
  L.push("# Benchmarks: spooky vs the runtime's floor and Caddy (HTTP/3 → HTTP/2 reverse proxy)");
  L.push("");
  L.push(
    `Generated by \`deno task bench${r.quick ? " --quick" : ""}\` (bench/run.ts) on ${m.date}.` +
      (r.quick ? " **Quick smoke run: numbers are indicative only.**" : ""),
  );
  L.push("");
  L.push("## Machine");
  L.push("");
  L.push("| | |");
  L.push("|---|---|");
  L.push(`| CPUs (nproc) | ${m.nproc} |`);
  L.push(`| CPU model | ${m.cpu} |`);
  L.push(`| memory | ${m.memGiB} GiB |`);
  L.push(`| kernel | ${m.kernel} |`);
  L.push(`| Deno | ${m.deno} |`);
  L.push(`| Caddy | ${m.caddy} |`);
  L.push(`| gtlsclient (ngtcp2-client) | ${m.gtlsclient || "?"} |`);
  L.push(`| load average at start | ${m.loadAvg} |`);
  L.push("");
  L.push("## Setup");
  L.push("");
  L.push(
    "Every party is its own process on the same machine, over loopback: a neutral h2c backend " +
      "(`bench/backend.ts`, `Deno.serve`, 100-byte body on `/`); **floor** (`bench/floor.ts`), " +
      "the least a forwarder on Deno's QUIC API can do: accept, open the control and QPACK " +
      "streams, drain the request stream unparsed, `fetch` the backend over one pooled h2c " +
      "client, answer a pre-encoded `:status 200` HEADERS and one DATA frame in one write " +
      "(**floor-worker**: the same with `fetch` on one Worker; **floor-h2**: the same with " +
      "Deno's `node:http2` client in place of `fetch`; **floor-h1**: `fetch` over HTTP/1.1, " +
      "the runtime's keep-alive pool); **spooky** (`proxy/main.ts`, " +
      "log level info); and **Caddy** " +
      "(`reverse_proxy h2c://`, the same certificate, HTTP/3). **spooky-h1** and **caddy-h1** " +
      "are the same two speaking HTTP/1.1 to the same backend (`protocol: http1`; " +
      "`reverse_proxy http://`), and are compared with each other and with floor-h1. The " +
      "machine is shared: every " +
      "measurement runs in rounds that alternate between the servers (the order rotates by " +
      "one each round) and medians are reported. Before the load phase each server serves " +
      "24,000 requests that are not measured: V8 compiles spooky's hot path over its first " +
      "~20,000 requests (30-40% dearer per request until then), and a proxy runs warm.",
  );
  L.push("");
  L.push("![chart](benchmarks.svg)");
  L.push("");
  L.push("## spooky against the floor and Caddy");
  L.push("");
  L.push(
    "What spooky spends above the floor is ours, not the runtime's. Ratios of medians " +
      "(issue #14's targets: CPU ≤ 1.15x the floor's at every level; req/s ≥ 1.0x Caddy's at 4 " +
      "and 16 connections; p99 at a fixed 200 req/s ≤ 1.5x Caddy's; issue #29's for spooky-h1 " +
      "against caddy-h1: req/s ≥ 1.0x, CPU ≤ 1.0x at every level). What each per-request " +
      "cut bought, and where the remaining CPU goes by thread and by profile: " +
      "[hot-path.md](hot-path.md).",
  );
  L.push("");
  L.push(
    "| server | connections | req/s spooky/floor | CPU µs/req spooky/floor | req/s spooky/Caddy | CPU µs/req spooky/Caddy |",
  );
  L.push("|---|---:|---:|---:|---:|---:|");
  for (const x of ratioRows(r)) {
    L.push(
      `| ${x.server} | ${x.conns} | ${x.rpsVsFloor} | ${x.cpuVsFloor} | ${x.rpsVsCaddy} | ` +
        `${x.cpuVsCaddy} |`,
    );
  }
  L.push("");
  for (const x of latencyRatios(r)) {
    L.push(
      `- ${x.server}: p99 at ${r.settings.bgRate} req/s over Caddy's: ${x.openLoopP99VsCaddy} ` +
        `(open-loop requests), ${x.p99VsCaddy} (sequential requests under that load).`,
    );
  }
  L.push("");
  L.push("## Small responses (h3load, gtlsclient)");
  L.push("");
  L.push(
    `\`h3load URL CONNS REQS\`: CONNS QUIC connections, each sending REQS concurrent GETs; ` +
      `${r.settings.requests} requests per run, ${r.settings.rounds} round(s) per server, ` +
      "medians. Server CPU is utime + stime of `/proc/<pid>/stat` over the run, per 2xx answer.",
  );
  L.push("");
  const conns = [...new Set(r.load.map((x) => x.conns))];
  L.push(
    `| connections | ${r.servers.map((s) => `${s} req/s`).join(" | ")} | ${
      r.servers.map((s) => `${s} CPU µs/req`).join(" | ")
    } |`,
  );
  L.push(`|---:|${r.servers.map(() => "---:|").join("").repeat(2)}`);
  for (const c of conns) {
    const row = r.servers.map((s) => r.load.find((x) => x.server === s && x.conns === c));
    L.push(
      `| ${c} | ${row.map((x) => fmt(x?.rps ?? NaN)).join(" | ")} | ${
        row.map((x) => fmt(x?.cpuUsPerReq ?? NaN)).join(" | ")
      } |`,
    );
  }
  L.push("");
  L.push("All rounds (req/s; CPU µs/req):");
  L.push("");
  for (const x of r.load) {
    L.push(
      `- ${x.server}, ${x.conns} conn: ${x.rpsAll.join(", ")}; ${x.cpuAll.join(", ")}` +
        (x.failedRuns ? ` (**${x.failedRuns} run(s) had non-2xx answers**)` : ""),
    );
  }
  L.push("");
  L.push("### CPU by thread");
  L.push("");
  L.push(
    "Medians of µs/req per thread, from `/proc/<pid>/task/*/stat`, grouped by thread name " +
      "(`/proc/<pid>/task/*/comm`). `main` is the process's first thread: for Deno the " +
      "JavaScript thread, which also runs the runtime's Rust I/O (its tokio runtime is " +
      "single-threaded: QUIC, TLS and the HTTP/2 client); for Caddy one of Go's threads, all " +
      "named `caddy`. `tokio-runtime-w` are tokio's blocking-pool threads, `worker` Web " +
      "Workers, `V8 DefaultWorke(r)` V8's concurrent GC and compiler helpers; `(exited)` is " +
      "CPU of threads that ended during the run (or rounding between the process and thread " +
      "counters).",
  );
  L.push("");
  threadTable(L, r.load);
  L.push("");
  L.push("## Latency");
  L.push("");
  L.push(
    `${r.settings.latencyRequests} sequential GETs on one connection (\`bench/latency_client.ts\`, the ` +
      "project's own HTTP/3 client, same for every server; client time included), with no other " +
      `load and with an open-loop load of ${r.settings.bgRate} req/s on 4 other connections; ` +
      "open-loop requests are timed from when they were sent (their sender never waits for " +
      "answers). Medians over the " +
      "rounds of each percentile; max is the largest seen.",
  );
  L.push("");
  latencyTable(L, r.latency);
  if (r.streams.length > 0) {
    L.push("");
    L.push("## Streaming");
    L.push("");
    L.push(
      `One ${fmt(r.settings.streamBytes / 2 ** 20)} MiB transfer with gtlsclient: download of ` +
        "`/bytes/N` (the backend streams 64 KiB chunks), upload of a file to `/sink` (the " +
        "backend counts the bytes). RSS growth = peak VmRSS during the transfer (polled every " +
        "50 ms) minus VmRSS before it. The floor reads bodies whole and is not measured here.",
    );
    L.push("");
    L.push(
      "| server | direction | Mbit/s | seconds | RSS before MiB | RSS peak growth MiB | verified |",
    );
    L.push("|---|---|---:|---:|---:|---:|---|");
    for (const x of r.streams) {
      L.push(
        `| ${x.server} | ${x.direction} | ${fmt(x.mbitPerS)} | ${fmt(x.seconds, 1)} | ${
          mib(x.rssBeforeKiB)
        } | ${mib(x.rssPeakKiB - x.rssBeforeKiB)} | ${x.ok ? "yes" : `**no**: ${x.detail}`} |`,
      );
    }
  }
  if (r.idle.length > 0) {
    L.push("");
    L.push("## Idle connections");
    L.push("");
    L.push(
      `${r.settings.idleConns} QUIC connections (ALPN h3, handshake done, no requests) held open ` +
        "by a separate process (`bench/idle_conns.ts`); server VmRSS before and 2 s after they " +
        "opened. They all come from 127.0.0.1, so spooky runs this row with its per-address and " +
        "per-network admission caps lifted (`limits.max_connections_per_address`, " +
        "`max_handshakes_per_address`, `max_handshakes_per_network`).",
    );
    L.push("");
    L.push(
      "| server | connections | RSS before MiB | RSS with conns MiB | KiB per connection | RSS after close MiB |",
    );
    L.push("|---|---:|---:|---:|---:|---:|");
    for (const x of r.idle) {
      L.push(
        `| ${x.server} | ${x.opened} | ${mib(x.rssBeforeKiB)} | ${mib(x.rssAfterKiB)} | ${
          fmt(x.kibPerConn, 1)
        } | ${mib(x.rssAfterCloseKiB)} |`,
      );
    }
  }
  L.push(...websocketSection(r.websocket));
  L.push("");
  L.push("## Notes on method");
  L.push("");
  L.push(
    "- Two cores are shared by the server under test, the backend and the load generator. " +
      "h3load's gtlsclient processes print per-packet debug output (the shared script does not " +
      "pass `-q`), so the client itself takes much of the CPU and req/s is client-bound for the " +
      "faster servers; CPU µs/request of the server is the better comparison.",
  );
  L.push(
    "- The proxy's `request_timeout_ms` runs until the backend's response headers, so it also " +
      "bounds how long an upload may take: the bench sets it to 600 s (the default, 30 s, fails " +
      "a 1 GiB upload slower than ~290 Mbit/s with 503).",
  );
  L.push(
    "- Options: `--servers floor,floor-worker,floor-h2,floor-h1,spooky,caddy,spooky-h1,caddy-h1` picks " +
      "the servers; `--no-memory` skips streaming and idle connections; `--only streams` runs " +
      "the large transfers alone (printed, no report written); `--quick` is a smoke run.",
  );
  L.push(
    "- Profile the proxy under the same load with `deno task bench --profile` " +
      "(`--cpu-prof`, summarised by `bench/analyze_profile.ts`).",
  );
  L.push("");
  return L.join("\n");
}
