/**
 * New connections under a burst (issue #24 item 8): N QUIC connections with
 * one GET each, opened in concurrent waves by one client process (this one),
 * against spooky and the runtime's floor (`bench/floor.ts`) in alternating
 * rounds. Prints connections per second, failed connections and the server's
 * CPU per connection, and spooky's rate over the floor's.
 *
 *     deno run -A bench/burst.ts [--total 400] [--waves 50,200] [--rounds 3]
 *
 * Every connection comes from 127.0.0.1, so spooky runs with its per-address
 * and per-network admission caps lifted (they exist to turn exactly such a
 * burst from one address away). The UDP receive buffer is left as the host
 * has it (`net.core.rmem_default`); its drops over each run are printed.
 *
 * @module
 */
// deno-lint-ignore-file no-console

import { parseArgs } from "node:util";
import { ensureDevCerts } from "../shared/certs/generate.ts";
import { median } from "../shared/stats.ts";
import { H3TestClient } from "../examples/h3_client.ts";
import { parseSnmpRcvbufErrors } from "../proxy/quic/udp_stats.ts";
import { cpuSnapshot } from "./load.ts";
import { type Env, type Server, startBackend, startServer, stop } from "./servers.ts";

/** The host's UDP receive-buffer drops so far (`/proc/net/snmp`). */
function readUdpRcvbufErrors(): number {
  return parseSnmpRcvbufErrors(Deno.readTextFileSync("/proc/net/snmp")) ?? 0;
}

/** One burst: `total` connections in waves of `wave`, each with one GET. */
interface BurstResult {
  connPerS: number;
  failed: number;
  cpuUsPerConn: number;
  rcvbufErrors: number;
}

async function burst(s: Server, ca: string, total: number, wave: number): Promise<BurstResult> {
  const ticks = 1e6 / 100; // µs per clock tick (USER_HZ 100)
  const cpu0 = cpuSnapshot(s.pid).total;
  const drops0 = readUdpRcvbufErrors();
  let failed = 0;
  let ok = 0;
  const t0 = performance.now();
  for (let i = 0; i < total; i += wave) {
    await Promise.all(Array.from({ length: Math.min(wave, total - i) }, async () => {
      let client: H3TestClient | undefined;
      try {
        client = await H3TestClient.connect(s.port, ca, "127.0.0.1", "localhost", 10_000);
        const res = await client.request({
          head: [[":method", "GET"], [":scheme", "https"], [":authority", "localhost"], [
            ":path",
            "/",
          ]],
        });
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
  const cpu = (cpuSnapshot(s.pid).total - cpu0) * ticks;
  return {
    connPerS: ok / seconds,
    failed,
    cpuUsPerConn: cpu / Math.max(1, ok),
    rcvbufErrors: readUdpRcvbufErrors() - drops0,
  };
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      total: { type: "string", default: "400" },
      waves: { type: "string", default: "50,200" },
      rounds: { type: "string", default: "3" },
    },
  });
  const total = Number(values.total);
  const waves = values.waves!.split(",").map(Number);
  const rounds = Number(values.rounds);
  const tmp = await Deno.makeTempDir({ prefix: "spooky-burst-" });
  const certs = await ensureDevCerts(`${tmp}/certs`);
  const ca = await Deno.readTextFile(certs.caPath);
  const be = await startBackend();
  const env: Env = { tmp, certs, backendPort: be.port };
  const servers: Server[] = [];
  try {
    servers.push(await startServer(env, { name: "floor", kind: "floor" }));
    servers.push(
      await startServer(env, {
        name: "spooky",
        kind: "spooky",
        limits: [
          `max_connections_per_address: ${2 * total}`,
          `max_handshakes_per_address: ${2 * total}`,
          `max_handshakes_per_network: ${2 * total}`,
        ],
      }),
    );
    for (const s of servers) await burst(s, ca, 100, 50); // warm
    for (const wave of waves) {
      const by = new Map<string, BurstResult[]>();
      for (let r = 0; r < rounds; r++) {
        const order = r % 2 === 0 ? servers : [...servers].reverse();
        for (const s of order) {
          const res = await burst(s, ca, total, wave);
          by.set(s.spec.name, [...(by.get(s.spec.name) ?? []), res]);
          console.log(
            `wave ${wave} round ${r + 1} ${s.spec.name}: ${res.connPerS.toFixed(0)} conn/s, ` +
              `${res.failed} failed, ${res.cpuUsPerConn.toFixed(0)} µs CPU/conn, ` +
              `${res.rcvbufErrors} UDP receive-buffer drops`,
          );
        }
      }
      const med = (name: string, f: (r: BurstResult) => number) => median(by.get(name)!.map(f));
      const ratio = med("spooky", (r) => r.connPerS) / med("floor", (r) => r.connPerS);
      console.log(
        `wave ${wave}: spooky/floor conn/s ${ratio.toFixed(2)}x (medians: spooky ${
          med("spooky", (r) => r.connPerS).toFixed(0)
        }, floor ${med("floor", (r) => r.connPerS).toFixed(0)}); CPU/conn ${
          med("spooky", (r) => r.cpuUsPerConn).toFixed(0)
        } vs ${med("floor", (r) => r.cpuUsPerConn).toFixed(0)} µs`,
      );
    }
  } finally {
    for (const s of servers) await stop(s);
    await stop(be);
    await Deno.remove(tmp, { recursive: true }).catch(() => {});
  }
  return 0;
}

if (import.meta.main) Deno.exit(await main());
