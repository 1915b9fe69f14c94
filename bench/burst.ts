/**
 * New connections under a burst (issues #24 item 8, #35 item 7): N QUIC
 * connections with one GET each, opened in concurrent waves by one client
 * process (this one), against spooky, Caddy and the runtime's floor
 * (`bench/floor.ts`) in rotating order, round after round. Prints
 * connections per second, failed connections and the server's CPU per
 * connection, and spooky's rate over Caddy's and the floor's (medians).
 *
 *     deno run -A bench/burst.ts [--total 400] [--waves 50,200] [--rounds 3]
 *                                [--gap 0] [--servers floor,spooky,caddy] [--profile]
 *                                [--base REV]
 *
 * `--base REV` adds `spooky@REV`: spooky as of that commit (a temporary git
 * worktree), for a before/after in the same rounds.
 *
 * Each server is warmed with one burst of 1,000 connections first (not
 * counted; `--total`, when larger). `--gap MS` waits that long before each
 * burst (bursts with quiet spells between them, as a server meets them).
 * Each burst's line also gives the server's CPU by thread, this client's
 * CPU per connection, the UDP datagrams per connection (both peers'), the
 * server's resident memory at its end, and the p50 and p99 of the handshakes
 * and of the requests after them (a wave lasts as long as its slowest
 * connection).
 *
 * Each server has its own client sockets, one per connection of a wave,
 * bound once (`clientEndpoints` says why: an endpoint per connection made
 * the client, not the server, set the rate).
 *
 * Every connection comes from 127.0.0.1 and spooky runs with its default
 * limits: a burst from one address (a NAT, a load test) must not be shed.
 * The host's sysctls are left as they are; spooky and Caddy each size their
 * own socket's receive buffer (the floor does not). The host's UDP
 * receive-buffer drops over each run are printed.
 *
 * `--profile` runs spooky alone under `--cpu-prof` and prints where its CPU
 * went (`analyze_profile.ts`): the per-connection cost, by file and function.
 *
 * @module
 */
// deno-lint-ignore-file no-console

import { parseArgs } from "node:util";
import { ensureDevCerts } from "../shared/certs/generate.ts";
import { median, quantile } from "../shared/stats.ts";
import { H3TestClient } from "../examples/h3_client.ts";
import { parseSnmpRcvbufErrors, parseSnmpUdp } from "../proxy/quic/udp_stats.ts";
import { printProfileDir } from "./analyze_profile.ts";
import { rssKiB } from "./memory.ts";
import { sleep } from "../tests/support/wait.ts";
import { cpuPerRequest, cpuSnapshot } from "./load.ts";
import {
  checkoutRevision,
  type Env,
  has,
  removeCheckout,
  type Server,
  serverSpecs,
  startBackend,
  startServer,
  startSpooky,
  stop,
} from "./servers.ts";

/** The host's UDP receive-buffer drops so far (`/proc/net/snmp`). */
function readUdpRcvbufErrors(): number {
  return parseSnmpRcvbufErrors(Deno.readTextFileSync("/proc/net/snmp")) ?? 0;
}

/** UDP datagrams the host has sent so far, both peers' (`/proc/net/snmp` `OutDatagrams`). */
function readUdpOut(): number {
  return parseSnmpUdp(Deno.readTextFileSync("/proc/net/snmp"), "OutDatagrams") ?? 0;
}

/** New connections each server is warmed with before the rounds. */
const WARMUP_CONNECTIONS = 1000;

/** One burst: `total` connections in waves of `wave`, each with one GET. */
interface BurstResult {
  connPerS: number;
  failed: number;
  cpuUsPerConn: number;
  /** This client process's CPU µs per connection: the work the server's packets cost its peer. */
  clientUsPerConn: number;
  /** CPU µs per connection by thread group (`main`, the runtime's workers). */
  threads: Record<string, number>;
  rcvbufErrors: number;
  /** UDP datagrams per connection, both directions. */
  datagramsPerConn: number;
  /** The server's resident memory at the end of the burst (MiB). */
  rssMiB: number;
  /** Handshake times (connect) and first-request times after it, ms: p50 and p99. */
  connectMs: [p50: number, p99: number];
  requestMs: [p50: number, p99: number];
}

/** The p50 and p99 of `values` (ms; NaN for none). */
function p50p99(values: number[]): [number, number] {
  const sorted = [...values].sort((a, b) => a - b);
  return [quantile(sorted, 0.5), quantile(sorted, 0.99)];
}

/**
 * The client's UDP sockets for one server: one per connection of a wave, bound once and used
 * by wave after wave, so each connection of a wave still has a source port of its own.
 *
 * - Not an endpoint per connection: the runtime zeroes a large receive buffer for each
 *   new one, and that work (a memset and its page faults, two thirds of this process's CPU
 *   under `perf`) made the client cost 1–14 ms per connection from one wave to the next, which
 *   set the burst's rate more than the server did.
 * - Not one set for all servers: an endpoint keeps the TLS session tickets it was given, all
 *   under the name `localhost`. Caddy leaves a ClientHello that offers another server's ticket
 *   unanswered until the client's retransmissions (1–7 s; one connection shows it), so its
 *   rounds after another server's were the slowest of a run. Spooky answers such a ClientHello
 *   at once, with a full handshake.
 */
function clientEndpoints(count: number): Deno.QuicEndpoint[] {
  return Array.from({ length: count }, () => new Deno.QuicEndpoint({ hostname: "127.0.0.1" }));
}

async function burst(
  s: Server,
  ca: string,
  endpoints: Deno.QuicEndpoint[],
  total: number,
  wave: number,
): Promise<BurstResult> {
  const cpu0 = cpuSnapshot(s.pid);
  const client0 = cpuSnapshot(Deno.pid);
  const drops0 = readUdpRcvbufErrors();
  const out0 = readUdpOut();
  let failed = 0;
  let ok = 0;
  const connectMs: number[] = [];
  const requestMs: number[] = [];
  const t0 = performance.now();
  for (let i = 0; i < total; i += wave) {
    await Promise.all(Array.from({ length: Math.min(wave, total - i) }, async (_, slot) => {
      let client: H3TestClient | undefined;
      try {
        const started = performance.now();
        client = await H3TestClient.connect(
          s.port,
          ca,
          "127.0.0.1",
          "localhost",
          10_000,
          endpoints[slot],
        );
        const connected = performance.now();
        connectMs.push(connected - started);
        const res = await client.request({
          head: [[":method", "GET"], [":scheme", "https"], [":authority", "localhost"], [
            ":path",
            "/",
          ]],
        });
        requestMs.push(performance.now() - connected);
        if (res.status === 200) ok++;
        else failed++;
      } catch {
        failed++;
      } finally {
        await client?.close();
      }
    }));
  }
  const seconds = (performance.now() - t0) / 1000;
  const cpu = cpuPerRequest(cpu0, cpuSnapshot(s.pid), ok);
  const client = cpuPerRequest(client0, cpuSnapshot(Deno.pid), ok + failed);
  return {
    connPerS: ok / seconds,
    failed,
    cpuUsPerConn: cpu.totalUs,
    clientUsPerConn: client.totalUs,
    threads: cpu.threads,
    rcvbufErrors: readUdpRcvbufErrors() - drops0,
    datagramsPerConn: (readUdpOut() - out0) / Math.max(1, ok + failed),
    rssMiB: rssKiB(s.pid) / 1024,
    connectMs: p50p99(connectMs),
    requestMs: p50p99(requestMs),
  };
}

/** `12/340`: a p50 and a p99 in whole ms. */
function ms([p50, p99]: [number, number]): string {
  return `${p50.toFixed(0)}/${p99.toFixed(0)}`;
}

/** `main 900, tokio-runtime-worker 400`: CPU µs per connection by thread group. */
function byThread(threads: Record<string, number>): string {
  return Object.entries(threads).map(([group, us]) => `${group} ${us.toFixed(0)}`).join(", ");
}

/** The ratio of the medians of `a` over `b`, for one figure of the results. */
function medianRatio(a: BurstResult[], b: BurstResult[], f: (r: BurstResult) => number): number {
  return median(a.map(f)) / median(b.map(f));
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      total: { type: "string", default: "400" },
      waves: { type: "string", default: "50,200" },
      rounds: { type: "string", default: "3" },
      gap: { type: "string", default: "0" },
      servers: { type: "string", default: "floor,spooky,caddy" },
      profile: { type: "boolean", default: false },
      base: { type: "string" },
    },
  });
  const total = Number(values.total);
  const waves = values.waves!.split(",").map(Number);
  const rounds = Number(values.rounds);
  const gapMs = Number(values.gap);
  let names = values.profile
    ? ["spooky"]
    : values.servers!.split(",").map((n) => n.trim()).filter(Boolean);
  if (names.includes("caddy") && !(await has("caddy"))) {
    console.error("caddy is missing (apt-get install -y caddy): the Caddy comparison is skipped");
    names = names.filter((n) => n !== "caddy");
  }
  const tmp = await Deno.makeTempDir({ prefix: "spooky-burst-" });
  const certs = await ensureDevCerts(`${tmp}/certs`);
  const ca = await Deno.readTextFile(certs.caPath);
  const be = await startBackend();
  const env: Env = { tmp, certs, backendPort: be.port };
  const specs = serverSpecs(names);
  const baseTree = `${tmp}/base`;
  if (values.base) {
    const root = await checkoutRevision(values.base, baseTree);
    specs.push({ name: `spooky@${values.base}`, kind: "spooky", root });
  }
  const servers: Server[] = [];
  const endpoints = new Map<Server, Deno.QuicEndpoint[]>();
  // outside tmp, which is removed at the end: the profile is kept
  const profileDir = values.profile ? await Deno.makeTempDir({ prefix: "spooky-profile-" }) : null;
  try {
    for (const spec of specs) {
      const server = profileDir === null
        ? await startServer(env, spec)
        : await startSpooky(env, spec, ["--cpu-prof", `--cpu-prof-dir=${profileDir}`]);
      servers.push(server);
      endpoints.set(server, clientEndpoints(Math.max(...waves)));
    }
    // Warm: rounds measure servers whose code is compiled and whose heap has grown (a fresh
    // Deno process's first 1,000 connections cost spooky about twice the CPU of the next
    // ones; Caddy is compiled ahead of time).
    for (const s of servers) {
      await burst(s, ca, endpoints.get(s)!, Math.max(total, WARMUP_CONNECTIONS), waves[0]);
    }
    for (const wave of waves) {
      const by = new Map<string, BurstResult[]>();
      for (let r = 0; r < rounds; r++) {
        // Each server goes first once in a while: none always meets a host still busy with another.
        const order = servers.map((_, i) => servers[(i + r) % servers.length]);
        for (const s of order) {
          if (gapMs > 0) await sleep(gapMs);
          const res = await burst(s, ca, endpoints.get(s)!, total, wave);
          by.set(s.spec.name, [...(by.get(s.spec.name) ?? []), res]);
          console.log(
            `wave ${wave} round ${r + 1} ${s.spec.name}: ${res.connPerS.toFixed(0)} conn/s, ` +
              `${res.failed} failed, ${res.cpuUsPerConn.toFixed(0)} µs CPU/conn ` +
              `(the client ${res.clientUsPerConn.toFixed(0)}), ` +
              `${res.rcvbufErrors} UDP receive-buffer drops, ${
                res.datagramsPerConn.toFixed(1)
              } datagrams/conn, ${res.rssMiB.toFixed(0)} MiB resident, connect p50/p99 ${
                ms(res.connectMs)
              }, request ${ms(res.requestMs)} ms; by thread: ${byThread(res.threads)}`,
          );
        }
      }
      const spooky = by.get("spooky");
      const parts = servers.map((s) => {
        const list = by.get(s.spec.name)!;
        return `${s.spec.name} ${median(list.map((r) => r.connPerS)).toFixed(0)} conn/s ` +
          `(${list.reduce((n, r) => n + r.failed, 0)} failed, ` +
          `${median(list.map((r) => r.cpuUsPerConn)).toFixed(0)} µs CPU/conn)`;
      });
      const ratios = spooky
        ? servers.filter((s) => s.spec.name !== "spooky").map((s) =>
          `spooky/${s.spec.name} ${
            medianRatio(spooky, by.get(s.spec.name)!, (r) => r.connPerS).toFixed(2)
          }x`
        )
        : [];
      console.log(`wave ${wave}, medians of ${rounds}: ${parts.join(", ")}; ${ratios.join(", ")}`);
    }
    if (profileDir !== null) {
      await stop(servers.pop()!, "SIGINT");
      await printProfileDir(profileDir);
    }
  } finally {
    for (const s of servers) await stop(s);
    for (const e of [...endpoints.values()].flat()) e.close();
    await stop(be);
    if (values.base) await removeCheckout(baseTree);
    await Deno.remove(tmp, { recursive: true }).catch(() => {});
  }
  return 0;
}

if (import.meta.main) Deno.exit(await main());
