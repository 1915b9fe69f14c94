/**
 * Per-request latency of an HTTP/3 server for `bench/run.ts`: one connection
 * sends `--requests` GETs one after the other (each waits for the previous
 * response) and records each round trip; meanwhile `--bg-conns` other
 * connections send a fixed, open-loop background load of `--bg-rate`
 * requests per second (0: none), each timed from when it is sent (the
 * sender never waits for answers, so a stalled server cannot slow it down and
 * hide its delay). Uses the project's own HTTP/3 client
 * (`examples/h3_client.ts`), the same for every server measured.
 *
 *     deno run -A bench/latency_client.ts --port P --ca ca.pem \
 *       [--requests 1000] [--warmup 50] [--bg-rate 200] [--bg-conns 4]
 *
 * Prints one JSON line: `{"n", "p50", "p90", "p99", "max", "bgSent", "bgOk", "bgP50",
 * "bgP99", "errors"}` (milliseconds; `bg*` percentiles are of the background
 * requests answered while the sequential ones ran, NaN as null without load).
 *
 * @module
 */
// deno-lint-ignore-file no-console

import { parseArgs } from "node:util";
import { H3TestClient } from "../examples/h3_client.ts";
import { quantile } from "../shared/stats.ts";
import { sleep } from "../tests/support/wait.ts";
import { readTarget, TARGET_OPTIONS } from "./target.ts";

/** Background requests are issued on this tick (ms). */
const TICK_MS = 5;

function head(port: number): Array<[string, string]> {
  return [
    [":method", "GET"],
    [":scheme", "https"],
    [":authority", `localhost:${port}`],
    [":path", "/"],
  ];
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      ...TARGET_OPTIONS,
      requests: { type: "string", default: "1000" },
      warmup: { type: "string", default: "50" },
      "bg-rate": { type: "string", default: "0" },
      "bg-conns": { type: "string", default: "4" },
    },
  });
  const { host, port, caPem } = await readTarget(values);
  const requests = Number(values.requests);
  const warmup = Number(values.warmup);
  const bgRate = Number(values["bg-rate"]);
  const bgConns = Number(values["bg-conns"]);

  const fg = await H3TestClient.connect(port, caPem, host);
  const bg: H3TestClient[] = [];
  for (let i = 0; i < (bgRate > 0 ? bgConns : 0); i++) {
    bg.push(await H3TestClient.connect(port, caPem, host));
  }
  let bgSent = 0;
  let bgOk = 0;
  let errors = 0;
  let recordBg = false;
  const bgSamples: number[] = [];
  const pending = new Set<Promise<void>>();
  let timer: ReturnType<typeof setInterval> | undefined;
  if (bgRate > 0) {
    const t0 = performance.now();
    timer = setInterval(() => {
      // open loop: catch up to the schedule, whatever the responses do
      const dueCount = Math.floor(((performance.now() - t0) / 1000) * bgRate);
      while (bgSent < dueCount && pending.size < 2000) {
        const client = bg[bgSent % bg.length];
        bgSent++;
        const sent = performance.now();
        const p: Promise<void> = client.request({ head: head(port) }).then(
          (r) => {
            if (r.status === 200) bgOk++;
            else errors++;
            if (recordBg) bgSamples.push(performance.now() - sent);
          },
          () => {
            errors++;
          },
        ).finally(() => pending.delete(p));
        pending.add(p);
      }
    }, TICK_MS);
    await sleep(500); // let the load settle
  }
  const samples: number[] = [];
  for (let i = 0; i < warmup + requests; i++) {
    if (i === warmup) recordBg = true;
    const t = performance.now();
    const r = await fg.request({ head: head(port) });
    const ms = performance.now() - t;
    if (r.status !== 200 || r.body.length === 0) errors++;
    if (i >= warmup) samples.push(ms);
  }
  recordBg = false;
  clearInterval(timer);
  await Promise.allSettled([...pending]);
  samples.sort((a, b) => a - b);
  bgSamples.sort((a, b) => a - b);
  const round = (x: number) => Math.round(x * 1000) / 1000;
  console.log(JSON.stringify({
    n: samples.length,
    p50: round(quantile(samples, 0.5)),
    p90: round(quantile(samples, 0.9)),
    p99: round(quantile(samples, 0.99)),
    max: round(samples.at(-1) ?? NaN),
    bgSent,
    bgOk,
    bgP50: round(quantile(bgSamples, 0.5)),
    bgP99: round(quantile(bgSamples, 0.99)),
    errors,
  }));
  await Promise.all([fg, ...bg].map((c) => c.close()));
  Deno.exit(0);
}
