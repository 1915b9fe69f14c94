/**
 * Time to first byte of a resumed 0-RTT request against a full (1-RTT) one,
 * on spooky and on Caddy (issue #33): what holding early data until the
 * handshake completes costs. It reports; it asserts nothing.
 *
 *     deno run -A bench/zero_rtt.ts [--rtt 50] [--rounds 10] [--servers spooky,caddy]
 *
 * Each server runs behind a UDP relay on loopback that delays every datagram
 * by half of `--rtt` each way (loopback alone has no round trip to save).
 * Each round is two gtlsclient runs of `GET /` (the neutral backend's
 * 100-byte answer) with one `--session-file`/`--tp-file`: the first makes a
 * full handshake and stores a ticket, the second resumes with it and sends
 * its request in 0-RTT packets (checked: the relay saw 0-RTT packets, and
 * the client did not report the early data rejected). The time to first byte
 * is gtlsclient's own clock (ngtcp2's log, 1 ms steps) from its first packet
 * to the first STREAM frame of the response. One round per server is a
 * warm-up and is not counted. Prints each median and the ratios.
 *
 * @module
 */
// deno-lint-ignore-file no-console

import { parseArgs } from "node:util";
import { ensureDevCerts } from "../shared/certs/generate.ts";
import { startUdpRelay, type UdpRelay } from "../tests/support/udp_relay.ts";
import { type Env, has, type Server, startBackend, startServer, stop } from "./servers.ts";

/** One client run: its time to first byte, and whether it used 0-RTT. */
export interface TtfbSample {
  /** From the client's first packet to the first byte of the response (ms). */
  ttfbMs: number;
  /** The request rode in 0-RTT packets and the server accepted them. */
  zeroRtt: boolean;
}

/** The medians of one server. */
export interface ZeroRttResult {
  server: string;
  fullMs: number;
  resumedMs: number;
  /** Resumed runs whose early data was accepted, of all resumed runs. */
  accepted: string;
}

const STREAM_0_RX = /^I(\d+) \S+ frm rx \d+ \S+ STREAM\(0x0[89a-f]\) id=0x0 /m;

/**
 * The time to first byte in a gtlsclient log: ngtcp2 stamps each line with
 * the milliseconds since the connection began (`I00000127`).
 */
export function ttfbFromLog(log: string): number | undefined {
  const m = STREAM_0_RX.exec(log);
  return m ? Number(m[1]) : undefined;
}

/** One gtlsclient `GET /` through the relay, with the session files in `dir`. */
async function measure(relay: UdpRelay, server: Server, dir: string): Promise<TtfbSample> {
  const flow = new Set(relay.seen.map((d) => d.flow)).size;
  const out = await new Deno.Command("gtlsclient", {
    args: [
      "--exit-on-all-streams-close",
      "--no-http-dump",
      "--timeout=10s",
      `--session-file=${dir}/session`,
      `--tp-file=${dir}/tp`,
      "127.0.0.1",
      String(relay.port),
      `https://localhost:${server.port}/`,
    ],
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(30_000),
  }).output();
  const log = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  const ttfbMs = ttfbFromLog(log);
  if (out.code !== 0 || ttfbMs === undefined) {
    throw new Error(`${server.spec.name}: gtlsclient failed (${out.code}):\n${log.slice(-2000)}`);
  }
  const sent0Rtt = relay.seen.some((d) => d.flow === flow && d.packets.includes("0rtt"));
  return { ttfbMs, zeroRtt: sent0Rtt && !/Early data was rejected/.test(log) };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

/** Measures one server: `rounds` pairs of a full and a resumed request, after one warm-up pair. */
async function measureServer(
  env: Env,
  name: "spooky" | "caddy",
  rttMs: number,
  rounds: number,
): Promise<ZeroRttResult> {
  const server = await startServer(env, { name, kind: name });
  const relay = startUdpRelay({ serverPort: server.port, delayMs: rttMs / 2 });
  const full: number[] = [];
  const resumed: number[] = [];
  let accepted = 0;
  try {
    for (let i = 0; i <= rounds; i++) {
      const dir = await Deno.makeTempDir({ dir: env.tmp, prefix: "session-" });
      const first = await measure(relay, server, dir);
      const second = await measure(relay, server, dir);
      if (i === 0) continue; // warm-up
      full.push(first.ttfbMs);
      resumed.push(second.ttfbMs);
      if (second.zeroRtt) accepted++;
      console.log(
        `${name} round ${i}: full ${first.ttfbMs} ms, resumed ${second.ttfbMs} ms` +
          (second.zeroRtt ? " (0-RTT)" : " (0-RTT not accepted)"),
      );
    }
  } finally {
    relay.close();
    await stop(server);
  }
  return {
    server: name,
    fullMs: median(full),
    resumedMs: median(resumed),
    accepted: `${accepted}/${rounds}`,
  };
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      rtt: { type: "string", default: "50" },
      rounds: { type: "string", default: "10" },
      servers: { type: "string", default: "spooky,caddy" },
    },
  });
  const rttMs = Number(values.rtt);
  const rounds = Number(values.rounds);
  const names = values.servers.split(",").filter((s): s is "spooky" | "caddy" =>
    s === "spooky" || s === "caddy"
  );
  if (names.includes("caddy") && !(await has("caddy"))) {
    console.log("caddy is not installed: measuring spooky only");
    names.splice(names.indexOf("caddy"), 1);
  }
  const tmp = await Deno.makeTempDir({ prefix: "spooky-0rtt-bench-" });
  const backend = await startBackend();
  const results: ZeroRttResult[] = [];
  try {
    const env: Env = {
      tmp,
      certs: await ensureDevCerts(`${tmp}/certs`),
      backendPort: backend.port,
    };
    for (const name of names) results.push(await measureServer(env, name, rttMs, rounds));
  } finally {
    await stop(backend);
    await Deno.remove(tmp, { recursive: true }).catch(() => {});
  }
  console.log(`\ntime to first byte, median of ${rounds}, round trip ${rttMs} ms (relay):`);
  for (const r of results) {
    console.log(
      `  ${r.server.padEnd(7)} full handshake ${r.fullMs} ms, resumed 0-RTT ${r.resumedMs} ms ` +
        `(${(r.resumedMs / r.fullMs).toFixed(2)}x; early data accepted ${r.accepted})`,
    );
  }
  const spooky = results.find((r) => r.server === "spooky");
  const caddy = results.find((r) => r.server === "caddy");
  if (spooky && caddy) {
    console.log(
      `  spooky/Caddy: full ${(spooky.fullMs / caddy.fullMs).toFixed(2)}x, ` +
        `resumed 0-RTT ${(spooky.resumedMs / caddy.resumedMs).toFixed(2)}x`,
    );
  }
}
