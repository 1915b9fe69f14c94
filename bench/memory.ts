/**
 * The memory phase of `bench/run.ts`: a large download and upload through a
 * server (throughput and peak RSS growth), and many idle QUIC connections
 * (RSS per connection). The floor reads bodies whole, so it is not measured
 * here.
 *
 * @module
 */

import type { IdleResult, StreamResult } from "./results.ts";
import { type Env, ROOT, run, type Server, start } from "./servers.ts";
import { sleep } from "../tests/support/wait.ts";

/** VmRSS of a process in KiB (NaN once it is gone). */
export function rssKiB(pid: number): number {
  try {
    const m = Deno.readTextFileSync(`/proc/${pid}/status`).match(/VmRSS:\s+(\d+)/);
    return m ? Number(m[1]) : NaN;
  } catch {
    return NaN;
  }
}

/** Polls a process's RSS until `done` settles; returns the peak. */
async function peakRss<T>(pid: number, done: Promise<T>): Promise<{ result: T; peakKiB: number }> {
  let peak = rssKiB(pid);
  let finished = false;
  const result = done.finally(() => (finished = true));
  while (!finished) {
    peak = Math.max(peak, rssKiB(pid) || 0);
    await sleep(50);
  }
  return { result: await result, peakKiB: peak };
}

/** One transfer of `bytes` with gtlsclient: `/bytes/N` down, or `uploadFile` up to `/sink`. */
export async function streamTest(
  s: Server,
  env: Env,
  bytes: number,
  direction: "download" | "upload",
  uploadFile: string,
): Promise<StreamResult> {
  const dir = await Deno.makeTempDir({ dir: env.tmp, prefix: "dl-" });
  const path = direction === "download" ? `/bytes/${bytes}` : "/sink";
  const args = [
    "300",
    "gtlsclient",
    "-q",
    "--no-quic-dump",
    "--no-http-dump",
    "--exit-on-all-streams-close",
    `--download=${dir}`,
    "--max-data=64M",
    "--max-stream-data-bidi-local=32M",
    ...(direction === "upload" ? ["-m", "POST", "-d", uploadFile] : []),
    "127.0.0.1",
    String(s.port),
    `https://localhost:${s.port}${path}`,
  ];
  await sleep(500);
  const before = rssKiB(s.pid);
  const t0 = performance.now();
  const { result, peakKiB } = await peakRss(s.pid, run("timeout", args));
  const seconds = (performance.now() - t0) / 1000;
  let ok = result.code === 0;
  let detail = "";
  try {
    if (direction === "download") {
      const size = (await Deno.stat(`${dir}/${bytes}`)).size;
      ok &&= size === bytes;
      detail = `${size} bytes received`;
    } else {
      const text = (await Deno.readTextFile(`${dir}/sink`)).trim();
      const echoed = Number(text);
      ok &&= echoed === bytes;
      detail = `backend counted ${
        Number.isNaN(echoed) ? JSON.stringify(text.slice(0, 200)) : echoed
      } bytes`;
    }
  } catch (err) {
    ok = false;
    detail = `no response body: ${err}; ${result.stderr.slice(-300)}`;
  }
  await Deno.remove(dir, { recursive: true });
  return {
    server: s.spec.name,
    direction,
    bytes,
    seconds,
    mbitPerS: (bytes * 8) / seconds / 1e6,
    rssBeforeKiB: before,
    rssPeakKiB: peakKiB,
    ok,
    detail,
  };
}

/** Holds `count` idle QUIC connections open (`bench/idle_conns.ts`) and measures RSS. */
export async function idleTest(s: Server, env: Env, count: number): Promise<IdleResult> {
  await sleep(1000);
  const before = rssKiB(s.pid);
  const client = await start(
    "idle client",
    Deno.execPath(),
    [
      "run",
      "-A",
      `${ROOT}bench/idle_conns.ts`,
      "--port",
      String(s.port),
      "--ca",
      env.certs.caPath,
      "--count",
      String(count),
    ],
    /^ready (\d+)$/,
    {},
    "piped",
  );
  const opened = Number(client.ready);
  await sleep(2000); // let the server settle
  const after = rssKiB(s.pid);
  const writer = client.child.stdin.getWriter();
  await writer.write(new TextEncoder().encode("close\n")).catch(() => {});
  await writer.close().catch(() => {});
  await client.child.status;
  await sleep(1000);
  return {
    server: s.spec.name,
    opened,
    rssBeforeKiB: before,
    rssAfterKiB: after,
    kibPerConn: (after - before) / Math.max(1, opened),
    rssAfterCloseKiB: rssKiB(s.pid),
  };
}
