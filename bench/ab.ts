/**
 * Before and after on a shared machine: spooky built from another commit
 * (`--base`, checked out into a temporary git worktree) and from this
 * checkout, in front of one backend, loaded with `h3load` in rounds that
 * alternate between the two (the order swaps every round). A machine whose
 * speed drifts between runs moves both alike, so their ratio holds where two
 * separate `deno task bench` runs do not (on the 2-core benchmark machine
 * one server's CPU per request moved by 2× between back-to-back runs, while
 * an A/B of identical code read within ±10%).
 *
 *     deno run -A bench/ab.ts --base REV [--upstream h2|http1] [--rounds 7] [--levels 1,4,16]
 *
 * Prints, per connection count, the medians of req/s and server CPU µs per
 * request of each, and this checkout's over the base's.
 *
 * @module
 */
// deno-lint-ignore-file no-console

import { parseArgs } from "node:util";
import { ensureDevCerts } from "../shared/certs/generate.ts";
import { median } from "../shared/stats.ts";
import { h3load, WARMUP_PER_CONN } from "./load.ts";
import {
  checkoutRevision,
  type Env,
  removeCheckout,
  type Server,
  startBackend,
  startSpooky,
  stop,
} from "./servers.ts";

/** The medians of one side at one connection count. */
interface Side {
  rps: number[];
  cpu: number[];
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      base: { type: "string" },
      upstream: { type: "string", default: "h2" },
      rounds: { type: "string", default: "7" },
      levels: { type: "string", default: "1,4,16" },
    },
  });
  if (!values.base || !["h2", "http1"].includes(values.upstream!)) {
    console.error("usage: ab.ts --base REV [--upstream h2|http1] [--rounds 7] [--levels 1,4,16]");
    return 2;
  }
  const upstream = values.upstream === "http1" ? "http1" : undefined;
  const rounds = Number(values.rounds);
  const levels = values.levels!.split(",").map(Number);
  const tmp = await Deno.makeTempDir({ prefix: "spooky-ab-" });
  const tree = `${tmp}/base`;
  let root: string;
  try {
    root = await checkoutRevision(values.base, tree);
  } catch (err) {
    console.error((err as Error).message);
    return 1;
  }
  const servers: Server[] = [];
  const be = await startBackend();
  try {
    const env: Env = { tmp, certs: await ensureDevCerts(`${tmp}/certs`), backendPort: be.port };
    const base = await startSpooky(env, {
      name: "base",
      kind: "spooky",
      upstream,
      root,
    });
    servers.push(base);
    const head = await startSpooky(env, { name: "head", kind: "spooky", upstream });
    servers.push(head);
    for (const s of servers) await h3load(s, 4, WARMUP_PER_CONN); // both run warm (load.ts)
    const sides = new Map<string, Side>();
    for (let r = 0; r < rounds; r++) {
      for (const conns of levels) {
        for (const s of r % 2 === 0 ? [base, head] : [head, base]) {
          const x = await h3load(s, conns, Math.round(4000 / conns));
          const key = `${s.spec.name} ${conns}`;
          const side = sides.get(key) ?? { rps: [], cpu: [] };
          side.rps.push(x.rps);
          side.cpu.push(x.cpuUs);
          sides.set(key, side);
        }
      }
    }
    console.log(`${values.base} (base) against this checkout (head), ${rounds} rounds, medians:`);
    for (const conns of levels) {
      const [b, h] = [sides.get(`base ${conns}`)!, sides.get(`head ${conns}`)!];
      const [brps, hrps, bcpu, hcpu] = [b.rps, h.rps, b.cpu, h.cpu].map(median);
      console.log(
        `  conns=${String(conns).padStart(2)}: base ${brps.toFixed(0)} req/s ${
          bcpu.toFixed(0)
        } µs/req | head ${hrps.toFixed(0)} req/s ${hcpu.toFixed(0)} µs/req | head/base req/s ${
          (hrps / brps).toFixed(2)
        }x, CPU ${(hcpu / bcpu).toFixed(2)}x`,
      );
    }
  } finally {
    for (const s of servers) await stop(s);
    await stop(be);
    await removeCheckout(tree);
    await Deno.remove(tmp, { recursive: true }).catch(() => {});
  }
  return 0;
}

if (import.meta.main) Deno.exit(await main());
