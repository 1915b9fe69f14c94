// deno-lint-ignore-file no-console
/**
 * Benchmark of the payments sandbox over h2c with `h2load` (Debian
 * nghttp2-client), in one run next to two baselines:
 *
 * - a trivial Hono route (`GET /ping` → small JSON) served by `Deno.serve`:
 *   the cost of the HTTP stack and framework alone;
 * - a bare single-key Deno KV atomic write on the same kind of store (a SQLite
 *   file), driven in-process with the same concurrency: the storage floor of
 *   a create.
 *
 * ```sh
 * deno task payments:bench [--requests 5000] [--clients 10] [--streams 10]
 * ```
 *
 * Prints requests/s per scenario and the ratios. Not a test.
 *
 * @module
 */
import { Hono } from "hono";
import { parseArgs } from "node:util";
import { openKvAt } from "./main.ts";
import { startPaymentsServer } from "./server.ts";

interface H2Result {
  reqPerSec: number;
  ok: number;
  failed: number;
  meanMs: number;
}

async function h2load(
  url: string,
  o: { n: number; c: number; m: number; headers?: string[]; dataFile?: string },
): Promise<H2Result> {
  const args = ["-n", String(o.n), "-c", String(o.c), "-m", String(o.m)];
  for (const h of o.headers ?? []) args.push("-H", h);
  if (o.dataFile) args.push("-d", o.dataFile);
  args.push(url);
  const out = await new Deno.Command("h2load", { args, stdout: "piped", stderr: "piped" }).output();
  const text = new TextDecoder().decode(out.stdout);
  const rps = /finished in [^,]+, ([\d.]+) req\/s/.exec(text);
  const st = /status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx/.exec(text);
  const mean = /time for request:\s+\S+\s+\S+\s+(\S+)/.exec(text);
  if (!rps || !st) {
    throw new Error(
      `h2load output not understood:\n${text}\n${new TextDecoder().decode(out.stderr)}`,
    );
  }
  const toMs = (s: string) =>
    s.endsWith("us")
      ? parseFloat(s) / 1000
      : s.endsWith("ms")
      ? parseFloat(s)
      : parseFloat(s) * 1000;
  return {
    reqPerSec: Number(rps[1]),
    ok: Number(st[1]),
    failed: Number(st[3]) + Number(st[4]),
    meanMs: mean ? toMs(mean[1]) : NaN,
  };
}

async function kvAtomicWrites(path: string, n: number, concurrency: number): Promise<number> {
  const kv = await openKvAt(path);
  try {
    const value = { id: "x".repeat(26), amount: 100, status: "CAPTURED", pad: "y".repeat(400) };
    let next = 0;
    const start = performance.now();
    await Promise.all(Array.from({ length: concurrency }, async () => {
      while (next < n) {
        const i = next++;
        const key = ["bench", i];
        const res = await kv.atomic().check({ key, versionstamp: null }).set(key, value).commit();
        if (!res.ok) throw new Error("unexpected conflict");
      }
    }));
    return n / ((performance.now() - start) / 1000);
  } finally {
    kv.close();
  }
}

async function main() {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      requests: { type: "string", default: "5000" },
      clients: { type: "string", default: "10" },
      streams: { type: "string", default: "10" },
    },
  });
  const n = Number(values.requests);
  const c = Number(values.clients);
  const m = Number(values.streams);
  const dir = await Deno.makeTempDir({ prefix: "payments-bench-" });
  const results: Record<string, H2Result | number> = {};
  try {
    // Baseline 1: trivial Hono route.
    const hono = new Hono();
    hono.get("/ping", (ctx) => ctx.json({ status: "ok" }));
    const trivial = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, hono.fetch);
    results["hono GET /ping"] = await h2load(`http://127.0.0.1:${trivial.addr.port}/ping`, {
      n,
      c,
      m,
    });
    await trivial.shutdown();

    // Baseline 2: bare single-key KV atomic writes, same concurrency as the HTTP runs.
    results["kv atomic write (in-process)"] = await kvAtomicWrites(`${dir}/raw.kv`, n, c * m);

    // The payments API on a KV file.
    const srv = await startPaymentsServer({
      port: 0,
      kv: () => openKvAt(`${dir}/payments.kv`),
      tokens: ["bench"],
    });
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
      results["POST create-charge"] = await h2load(`${srv.url}/vendor/v4/payments/charges`, {
        n,
        c,
        m,
        headers,
        dataFile: body,
      });
      const one = await fetch(`${srv.url}/vendor/v4/payments/charges`, {
        method: "POST",
        headers: { authorization: "Bearer bench", "content-type": "application/json" },
        body: await Deno.readTextFile(body),
      });
      const id = (await one.json()).id;
      results["GET get-charge"] = await h2load(`${srv.url}/vendor/v4/payments/charges/${id}`, {
        n,
        c,
        m,
        headers,
      });
    } finally {
      await srv.shutdown();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }

  console.log(`h2load -n ${n} -c ${c} -m ${m} over h2c; Deno ${Deno.version.deno}`);
  for (const [name, r] of Object.entries(results)) {
    if (typeof r === "number") console.log(`${name.padEnd(32)} ${r.toFixed(0).padStart(8)} ops/s`);
    else {
      console.log(
        `${name.padEnd(32)} ${r.reqPerSec.toFixed(0).padStart(8)} req/s  ` +
          `mean ${r.meanMs.toFixed(2)} ms  2xx ${r.ok}  errors ${r.failed}`,
      );
    }
  }
  const rps = (k: string) => (results[k] as H2Result).reqPerSec;
  const kvw = results["kv atomic write (in-process)"] as number;
  console.log(
    `create-charge / hono trivial     ${
      (rps("POST create-charge") / rps("hono GET /ping")).toFixed(3)
    }`,
  );
  console.log(
    `get-charge / hono trivial        ${
      (rps("GET get-charge") / rps("hono GET /ping")).toFixed(3)
    }`,
  );
  console.log(`create-charge / kv atomic write  ${(rps("POST create-charge") / kvw).toFixed(3)}`);
}

if (import.meta.main) await main();
