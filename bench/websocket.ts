/**
 * The WebSocket row of `bench/run.ts` (issue #29): echo round trips through
 * spooky over HTTP/3 (RFC 9220) and over its TCP fallback (HTTP/1.1
 * `Upgrade`), and through Caddy's `reverse_proxy` over TCP, all to the
 * neutral backend's `/ws` (`Deno.upgradeWebSocket`, HTTP/1.1). Each
 * measurement is its own client process (`bench/websocket_client.ts`), in
 * rounds alternating between the servers; medians of p50 and p99 over the
 * rounds.
 *
 * @module
 */
// deno-lint-ignore-file no-console

import { median } from "../shared/stats.ts";
import type { WebSocketResult } from "./results.ts";
import { type Env, ROOT, run, type Server, type ServerSpec, startServer, stop } from "./servers.ts";

/** What the row measures: round trips per run, runs per measurement. */
export interface WebSocketSettings {
  rounds: number;
  /** Echo round trips per run (1,000 in a full run). */
  roundTrips: number;
}

/** One measurement: a server and the transport its client uses. */
interface Probe {
  server: Server;
  transport: "h3" | "tcp";
}

async function oneRun(p: Probe, env: Env, n: number) {
  const r = await run(Deno.execPath(), [
    "run",
    "-A",
    `${ROOT}bench/websocket_client.ts`,
    "--transport",
    p.transport,
    "--port",
    String(p.server.port),
    "--ca",
    env.certs.caPath,
    "--n",
    String(n),
    "--warmup",
    String(Math.min(50, n)),
  ]);
  const line = r.stdout.trim().split("\n").at(-1) ?? "";
  try {
    return JSON.parse(line) as { n: number; p50: number; p99: number; max: number; errors: number };
  } catch {
    throw new Error(`websocket client failed: ${r.stdout}\n${r.stderr}`);
  }
}

/**
 * Starts spooky (HTTP/3 and the TCP fallback, HTTP/1.1 to the backend) and,
 * with `caddy`, Caddy (HTTP/1.1 to the backend), measures, and stops them.
 */
export async function websocketTest(
  env: Env,
  st: WebSocketSettings,
  caddy: boolean,
): Promise<WebSocketResult[]> {
  const specs: ServerSpec[] = [
    { name: "spooky", kind: "spooky", upstream: "http1", tcpFallback: true },
    ...(caddy ? [{ name: "caddy", kind: "caddy", upstream: "http1" } as ServerSpec] : []),
  ];
  const servers: Server[] = [];
  try {
    for (const spec of specs) servers.push(await startServer(env, spec));
    const probes: Probe[] = servers.flatMap((server) =>
      server.spec.kind === "spooky"
        ? [{ server, transport: "h3" as const }, { server, transport: "tcp" as const }]
        : [{ server, transport: "tcp" as const }]
    );
    const runs = new Map(probes.map((p) => [p, [] as Awaited<ReturnType<typeof oneRun>>[]]));
    for (let round = 0; round < st.rounds; round++) {
      for (const p of probes) {
        const r = await oneRun(p, env, st.roundTrips);
        runs.get(p)!.push(r);
        console.log(
          `  ${p.server.spec.name.padEnd(8)} ${p.transport.padEnd(3)} round ${round + 1}: ` +
            `p50 ${r.p50} p99 ${r.p99} ms${r.errors ? `; ${r.errors} errors` : ""}`,
        );
      }
    }
    return [...runs].map(([p, rs]) => ({
      server: p.server.spec.name,
      transport: p.transport,
      rounds: rs.length,
      n: rs.reduce((n, r) => n + r.n, 0),
      p50: median(rs.map((r) => r.p50)),
      p99: median(rs.map((r) => r.p99)),
      max: Math.max(...rs.map((r) => r.max)),
      errors: rs.reduce((n, r) => n + r.errors, 0),
    }));
  } finally {
    for (const s of servers) await stop(s);
  }
}

const ms = (x: number) => Number.isFinite(x) ? x.toFixed(2) : "n/a";

/** The report's section of the row (none when the run has no WebSocket results). */
export function websocketSection(rows: readonly WebSocketResult[] | undefined): string[] {
  if (rows === undefined || rows.length === 0) return [];
  const caddy = rows.find((x) => x.server === "caddy");
  const L = [
    "",
    "## WebSockets",
    "",
    "Echo round trips on one WebSocket (a small text message, its echo awaited before the next) " +
    "to the backend's `/ws` (`Deno.upgradeWebSocket`, HTTP/1.1 to the backend): spooky over " +
    "HTTP/3 (RFC 9220) and over its TCP fallback (HTTP/1.1 `Upgrade` over TLS), Caddy's " +
    "`reverse_proxy` over TLS. Ratios are over Caddy's.",
    "",
    "| server | transport | round trips | p50 ms | p99 ms | max ms | p50 vs Caddy | p99 vs Caddy | errors |",
    "|---|---|---:|---:|---:|---:|---:|---:|---:|",
  ];
  for (const x of rows) {
    const vs = (a: number, b: number | undefined) =>
      b === undefined || !(b > 0) ? "n/a" : `${(a / b).toFixed(2)}x`;
    L.push(
      `| ${x.server} | ${x.transport} | ${x.n} | ${ms(x.p50)} | ${ms(x.p99)} | ${ms(x.max)} | ` +
        `${vs(x.p50, caddy?.p50)} | ${vs(x.p99, caddy?.p99)} | ${x.errors} |`,
    );
  }
  return L;
}

/** The summary lines of the row. */
export function websocketSummary(rows: readonly WebSocketResult[] | undefined): string[] {
  if (rows === undefined || rows.length === 0) return [];
  return [
    "WebSocket echo (p50 / p99 ms):",
    ...rows.map((x) =>
      `  ${x.server.padEnd(12)} ${x.transport.padEnd(3)}: ${ms(x.p50)} / ${ms(x.p99)}` +
      (x.errors ? ` [${x.errors} errors]` : "")
    ),
  ];
}
