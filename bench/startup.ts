/**
 * Startup time (issue #21.6): from launching `deno run -A proxy/main.ts` to
 * the first request served over HTTP/3, and when `Listening on` was printed.
 * It reports; it asserts nothing (a busy machine makes any bound a lie).
 *
 *     deno run -A bench/startup.ts [--runs 5] [--tcp-fallback]
 *
 * Each run starts an h2c backend in this process, the proxy as a child
 * process on a free port, and an HTTP/3 client that retries every 5 ms
 * until a request is answered 200. Prints one line per run and the median.
 *
 * @module
 */
// deno-lint-ignore-file no-console

import { parseArgs } from "node:util";
import { H3TestClient } from "../examples/h3_client.ts";
import { ensureDevCerts } from "../shared/certs/generate.ts";
import { sleep } from "../tests/support/wait.ts";

const ROOT = new URL("../", import.meta.url).pathname;

/** One measured start. */
export interface StartupSample {
  /** Launch to `Listening on`, ms. */
  listeningMs: number;
  /** Launch to the first 200 over HTTP/3, ms. */
  firstRequestMs: number;
}

/**
 * Starts the proxy once with the configuration at `configPath` (port 0: the
 * proxy picks one and prints it) and measures it.
 */
export async function measureStartup(
  configPath: string,
  caPem: string,
  timeoutMs = 20_000,
): Promise<StartupSample> {
  const t0 = performance.now();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `${ROOT}proxy/main.ts`, "-c", configPath],
    stdout: "piped",
    stderr: "null",
    stdin: "null",
    env: { NO_COLOR: "1" },
  }).spawn();
  try {
    let listeningMs = 0;
    let port = 0;
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let buf = "";
    while (port === 0) {
      const { value, done } = await reader.read();
      if (done) throw new Error("proxy exited before listening");
      buf += value;
      const m = /Listening on .*:(\d+)\n/.exec(buf);
      if (m) {
        port = Number(m[1]);
        listeningMs = performance.now() - t0;
      }
    }
    reader.releaseLock();
    child.stdout.cancel().catch(() => {});
    for (;;) {
      if (performance.now() - t0 > timeoutMs) throw new Error("no request served in time");
      let client: H3TestClient | undefined;
      try {
        client = await H3TestClient.connect(port, caPem, "127.0.0.1", "localhost", 2000);
        const r = await client.request({
          head: [
            [":method", "GET"],
            [":scheme", "https"],
            [":authority", `localhost:${port}`],
            [":path", "/"],
          ],
        });
        if (r.status === 200) return { listeningMs, firstRequestMs: performance.now() - t0 };
      } catch {
        // not up yet
      } finally {
        await client?.close();
      }
      await sleep(5);
    }
  } finally {
    try {
      child.kill("SIGKILL");
    } catch {
      // gone
    }
    await child.status;
  }
}

/** What {@link measureStartup} starts the proxy with: a configuration over a running backend. */
export interface StartupSetup {
  /** The proxy's configuration file (port 0, one pool on `/` over the backend). */
  configPath: string;
  /** The CA that signed the proxy's certificate, PEM. */
  caPem: string;
  /** Stops the backend and removes the files. */
  close(): Promise<void>;
}

/** Starts an h2c backend in this process and writes a configuration routing to it. */
export async function startupSetup(tcpFallback = false): Promise<StartupSetup> {
  const backend = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => new Response("ok"),
  );
  const dir = await Deno.makeTempDir({ prefix: "spooky-startup-" });
  const close = async () => {
    await backend.shutdown();
    await Deno.remove(dir, { recursive: true });
  };
  try {
    const certs = await ensureDevCerts(dir);
    const configPath = `${dir}/config.yaml`;
    await Deno.writeTextFile(
      configPath,
      `version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tcp_fallback: ${tcpFallback}, tls: {cert: "${certs.certPath}", key: "${certs.keyPath}"}}
upstream:
  root: {route: {path_prefix: /}, backends: [{id: b0, address: "127.0.0.1:${backend.addr.port}"}]}
`,
    );
    return { configPath, caPem: await Deno.readTextFile(certs.caPath), close };
  } catch (err) {
    await close();
    throw err;
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      runs: { type: "string", default: "5" },
      "tcp-fallback": { type: "boolean", default: false },
    },
  });
  const setup = await startupSetup(values["tcp-fallback"]);
  try {
    const samples: StartupSample[] = [];
    for (let i = 0; i < Number(values.runs); i++) {
      const s = await measureStartup(setup.configPath, setup.caPem);
      samples.push(s);
      console.log(
        `run ${i + 1}: listening ${s.listeningMs.toFixed(0)} ms, first request ${
          s.firstRequestMs.toFixed(0)
        } ms`,
      );
    }
    const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    console.log(
      `median: listening ${median(samples.map((s) => s.listeningMs)).toFixed(0)} ms, ` +
        `first request ${median(samples.map((s) => s.firstRequestMs)).toFixed(0)} ms`,
    );
  } finally {
    await setup.close();
  }
}

if (import.meta.main) await main();
