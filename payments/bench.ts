// deno-lint-ignore-file no-console
/**
 * Benchmark of the payments sandbox over h2c with `h2load` (Debian
 * nghttp2-client). Every scenario is served by this one process and driven by
 * `h2load` with the same `-n -c -m`, next to two baselines:
 *
 * - `hono GET /ping`: a trivial Hono route (small JSON), the cost of the HTTP
 *   stack and framework alone;
 * - `kv write POST /kv-write`: a Hono route doing one single-key
 *   `kv.atomic().check(key is new).set(key, value).commit()` of a value the
 *   size of a stored charge, on the same KV handle and file as the payments
 *   API and with the same request body and headers as create-charge: the
 *   storage floor of a create, behind the same HTTP stack.
 *
 * The scenarios run in alternation for `--rounds` rounds after a warm-up
 * round; the report gives medians (and the range) of throughput, p50 and p99
 * latency, and the medians of the per-round ratios. For information it also
 * measures bare in-process KV writes (no HTTP) with the same concurrency.
 *
 * ```sh
 * deno task payments:bench [--requests 5000] [--clients 10] [--streams 10] [--rounds 5]
 * ```
 *
 * Not a test: numbers vary run to run on a shared machine; compare ratios.
 *
 * @module
 */
import { Hono } from "hono";
import { median, quantile } from "../shared/stats.ts";
import { parseArgs } from "node:util";
import { openKvAt } from "./main.ts";
import { startPaymentsServer } from "./server.ts";

/** One h2load run. */
export interface H2Result {
  /** Requests per second (h2load's figure). */
  reqPerSec: number;
  /** 2xx responses. */
  ok: number;
  /** 4xx + 5xx responses and failed requests. */
  failed: number;
  /** Median request latency, ms (from h2load's per-request log). */
  p50Ms: number;
  /** 99th percentile request latency, ms. */
  p99Ms: number;
}

/** Parse h2load's summary and its `--log-file` (µs per request in column 3). */
export function parseH2load(summary: string, log: string): H2Result | undefined {
  const rps = /finished in [^,]+, ([\d.]+) req\/s/.exec(summary);
  const st = /status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx/.exec(summary);
  const failedReq = /requests: \d+ total, \d+ started, \d+ done, \d+ succeeded, (\d+) failed/
    .exec(summary);
  if (!rps || !st) return undefined;
  const micros = log.split("\n").filter((l) => l.trim() !== "").map((l) => Number(l.split("\t")[2]))
    .filter((n) => Number.isFinite(n)).sort((a, b) => a - b);
  return {
    reqPerSec: Number(rps[1]),
    ok: Number(st[1]),
    failed: Math.max(Number(st[3]) + Number(st[4]), Number(failedReq?.[1] ?? 0)),
    p50Ms: quantile(micros, 0.5) / 1000,
    p99Ms: quantile(micros, 0.99) / 1000,
  };
}

async function h2load(
  url: string,
  o: { n: number; c: number; m: number; headers?: string[]; dataFile?: string; dir: string },
): Promise<H2Result> {
  // h2load appends to its log file: one fresh file per run.
  const logFile = `${o.dir}/h2load-${crypto.randomUUID()}.log`;
  const args = ["-n", String(o.n), "-c", String(o.c), "-m", String(o.m), `--log-file=${logFile}`];
  for (const h of o.headers ?? []) args.push("-H", h);
  if (o.dataFile) args.push("-d", o.dataFile);
  args.push(url);
  const out = await new Deno.Command("h2load", { args, stdout: "piped", stderr: "piped" }).output();
  const text = new TextDecoder().decode(out.stdout);
  const r = parseH2load(text, await Deno.readTextFile(logFile).catch(() => ""));
  await Deno.remove(logFile).catch(() => {});
  if (!r) {
    throw new Error(
      `h2load output not understood:\n${text}\n${new TextDecoder().decode(out.stderr)}`,
    );
  }
  return r;
}

/** A value the size of a stored charge record (~510 bytes serialized). */
const BASELINE_VALUE = {
  id: "x".repeat(26),
  amount: 100,
  status: "CAPTURED",
  pad: "y".repeat(435),
};

/** Bare in-process single-key atomic writes with `concurrency` in flight (no HTTP). */
async function kvAtomicWrites(
  kv: Deno.Kv,
  prefix: string,
  n: number,
  concurrency: number,
): Promise<number> {
  let next = 0;
  const start = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < n) {
      const key = [prefix, next++];
      const res = await kv.atomic().check({ key, versionstamp: null }).set(key, BASELINE_VALUE)
        .commit();
      if (!res.ok) throw new Error("unexpected conflict");
    }
  }));
  return n / ((performance.now() - start) / 1000);
}

/** The baseline app: `GET /ping` and `POST /kv-write` (one single-key atomic write). */
function baselineApp(kv: Deno.Kv): Hono {
  const app = new Hono();
  let seq = 0;
  app.get("/ping", (ctx) => ctx.json({ status: "ok" }));
  app.post("/kv-write", async (ctx) => {
    const key = ["bench_http", seq++];
    const res = await kv.atomic().check({ key, versionstamp: null }).set(key, BASELINE_VALUE)
      .commit();
    if (!res.ok) return ctx.json({ error: "conflict" }, 409);
    return ctx.json({ ok: true }, 201);
  });
  return app;
}

const SCENARIOS = ["hono GET /ping", "kv write POST", "POST create-charge", "GET get-charge"];
const INPROC = "kv write in-process (no HTTP)";

async function main() {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      requests: { type: "string", default: "5000" },
      clients: { type: "string", default: "10" },
      streams: { type: "string", default: "10" },
      rounds: { type: "string", default: "5" },
      "no-inprocess": { type: "boolean", default: false },
    },
  });
  const n = Number(values.requests);
  const c = Number(values.clients);
  const m = Number(values.streams);
  const rounds = Math.max(1, Number(values.rounds));
  const dir = await Deno.makeTempDir({ prefix: "payments-bench-" });
  const runs: Record<string, H2Result[]> = {};
  const inproc: number[] = [];
  const kv = await openKvAt(`${dir}/payments.kv`);
  const base = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    baselineApp(kv).fetch,
  );
  const srv = await startPaymentsServer({ port: 0, kv, closeKv: false, tokens: ["bench"] });
  try {
    const body = `${dir}/charge.json`;
    await Deno.writeTextFile(
      body,
      JSON.stringify({
        amount: "10.00",
        currency: "USD",
        capture: true,
        card: { number: "4111111111111111", expMonth: 12, expYear: 2035, cvc: "123", name: "B" },
      }),
    );
    const headers = ["authorization: Bearer bench", "content-type: application/json"];
    const one = await fetch(`${srv.url}/vendor/v4/payments/charges`, {
      method: "POST",
      headers: { authorization: "Bearer bench", "content-type": "application/json" },
      body: await Deno.readTextFile(body),
    });
    const id = (await one.json()).id;
    const baseUrl = `http://127.0.0.1:${base.addr.port}`;
    const run = (name: string, count: number): Promise<H2Result> => {
      const o = { n: count, c, m, headers, dir };
      switch (name) {
        case "hono GET /ping":
          return h2load(`${baseUrl}/ping`, o);
        case "kv write POST":
          return h2load(`${baseUrl}/kv-write`, { ...o, dataFile: body });
        case "POST create-charge":
          return h2load(`${srv.url}/vendor/v4/payments/charges`, { ...o, dataFile: body });
        default:
          return h2load(`${srv.url}/vendor/v4/payments/charges/${id}`, o);
      }
    };
    // Warm-up round (JIT, KV file growth), not recorded.
    for (const s of SCENARIOS) await run(s, Math.min(n, 2000));
    for (let r = 0; r < rounds; r++) {
      for (const s of SCENARIOS) {
        const res = await run(s, n);
        if (res.failed > 0 || res.ok !== n) {
          throw new Error(`${s}: ${res.failed} failed, ${res.ok}/${n} ok`);
        }
        (runs[s] ??= []).push(res);
      }
      if (!values["no-inprocess"]) inproc.push(await kvAtomicWrites(kv, `inproc_${r}`, n, c * m));
    }
  } finally {
    await srv.shutdown();
    await base.shutdown();
    kv.close();
    await Deno.remove(dir, { recursive: true });
  }

  const fmt = (x: number, d = 0) => x.toFixed(d);
  console.log(
    `h2load -n ${n} -c ${c} -m ${m} over h2c, ${rounds} alternating rounds (medians, ` +
      `[min-max] req/s); Deno ${Deno.version.deno}; ${navigator.hardwareConcurrency} CPUs`,
  );
  console.log(
    `${"scenario".padEnd(30)} ${"req/s".padStart(7)} ${"[min-max]".padStart(13)} ` +
      `${"p50 ms".padStart(7)} ${"p99 ms".padStart(7)}`,
  );
  for (const s of SCENARIOS) {
    const rs = runs[s];
    const t = rs.map((r) => r.reqPerSec);
    console.log(
      `${s.padEnd(30)} ${fmt(median(t)).padStart(7)} ${
        `[${fmt(Math.min(...t))}-${fmt(Math.max(...t))}]`.padStart(13)
      } ${fmt(median(rs.map((r) => r.p50Ms)), 2).padStart(7)} ${
        fmt(median(rs.map((r) => r.p99Ms)), 2).padStart(7)
      }`,
    );
  }
  if (inproc.length) {
    console.log(
      `${INPROC.padEnd(30)} ${fmt(median(inproc)).padStart(7)} ${
        `[${fmt(Math.min(...inproc))}-${fmt(Math.max(...inproc))}]`.padStart(13)
      }`,
    );
  }
  const ratio = (a: string, b: string) =>
    median(runs[a].map((r, i) => r.reqPerSec / runs[b][i].reqPerSec));
  const range = (a: string, b: string) => {
    const xs = runs[a].map((r, i) => r.reqPerSec / runs[b][i].reqPerSec);
    return `[${fmt(Math.min(...xs), 2)}-${fmt(Math.max(...xs), 2)}]`;
  };
  console.log("ratios (median of per-round ratios [min-max]):");
  console.log(
    `create-charge / kv write POST   ${fmt(ratio("POST create-charge", "kv write POST"), 3)} ` +
      `${range("POST create-charge", "kv write POST")}  target >= 1.0`,
  );
  console.log(
    `get-charge / hono GET /ping     ${fmt(ratio("GET get-charge", "hono GET /ping"), 3)} ` +
      `${range("GET get-charge", "hono GET /ping")}  target >= 0.5`,
  );
  if (inproc.length) {
    const xs = runs["POST create-charge"].map((r, i) => r.reqPerSec / inproc[i]);
    console.log(`create-charge / kv in-process   ${fmt(median(xs), 3)} (information)`);
  }
}

if (import.meta.main) await main();
