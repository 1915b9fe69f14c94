/**
 * HTTP/2 servers nobody here wrote, started for the interop tests: nghttpd
 * (nghttp2), Node's own `http2` module (run by `node`, not Deno), Caddy, and
 * `Deno.serve`. Each serves the same small site from a temp folder:
 * `/small.txt`, `/big.bin` (1 MiB), and (where the server can) `/echo`,
 * which answers a POST with its body.
 *
 * @module
 */

import { freePort } from "../support/free_port.ts";
import { sleep } from "../support/wait.ts";

/** A running server. */
export interface Server {
  /** `127.0.0.1:port`. */
  readonly address: string;
  /** Stops it. */
  close(): Promise<void>;
}

/** The site every server serves. */
export interface Site {
  readonly dir: string;
  readonly small: Uint8Array<ArrayBuffer>;
  readonly big: Uint8Array<ArrayBuffer>;
}

let site: Promise<Site> | null = null;

/** The shared site (created once per test process). */
export function testSite(): Promise<Site> {
  site ??= (async () => {
    const dir = await Deno.makeTempDir({ prefix: "spooky-interop-" });
    const small = new TextEncoder().encode("hello from the interop site\n");
    const big = new Uint8Array(1024 * 1024);
    for (let i = 0; i < big.length; i++) big[i] = (i * 7 + (i >>> 10)) & 0xff;
    await Deno.writeFile(`${dir}/small.txt`, small);
    await Deno.writeFile(`${dir}/big.bin`, big);
    globalThis.addEventListener("unload", () => {
      try {
        Deno.removeSync(dir, { recursive: true });
      } catch { /* gone */ }
    });
    return { dir, small, big };
  })();
  return site;
}

/** Waits until something accepts TCP connections on `port`. */
export async function listening(
  port: number,
  child: Deno.ChildProcess,
  what: string,
): Promise<void> {
  const end = performance.now() + 15_000;
  let exited = false;
  child.status.then(() => exited = true);
  for (;;) {
    try {
      const c = await Deno.connect({ hostname: "127.0.0.1", port });
      c.close();
      return;
    } catch {
      if (exited) throw new Error(`${what} exited before listening`);
      if (performance.now() > end) throw new Error(`${what} did not listen on ${port}`);
      await sleep(50);
    }
  }
}

/** Spawns `cmd` with its stderr piped (read by {@link listening} on failure). */
export function spawn(cmd: string, args: string[], cwd?: string): Deno.ChildProcess {
  return new Deno.Command(cmd, { args, cwd, stdin: "null", stdout: "null", stderr: "piped" })
    .spawn();
}

/** Stops a spawned server (SIGTERM) and waits for it. */
export async function stop(child: Deno.ChildProcess): Promise<void> {
  try {
    child.kill("SIGTERM");
  } catch { /* exited */ }
  await child.stderr.cancel().catch(() => {});
  await child.status;
}

/** Options of {@link startNghttpd}. */
export interface NghttpdOptions {
  /** `-m`: SETTINGS_MAX_CONCURRENT_STREAMS. */
  maxConcurrentStreams?: number;
  /** `-w`: stream windows of 2^bits - 1. */
  windowBits?: number;
  /** TLS with this key and certificate (PEM paths); h2c otherwise. */
  tls?: { keyPath: string; certPath: string };
}

/** nghttpd serving the site, h2c (prior knowledge) or TLS, POST/PUT echoed (`--echo-upload`). */
export async function startNghttpd(opts: NghttpdOptions = {}): Promise<Server> {
  const { dir } = await testSite();
  const port = freePort();
  const args = ["-a", "127.0.0.1", "-d", dir, "--echo-upload"];
  if (opts.maxConcurrentStreams) args.push("-m", String(opts.maxConcurrentStreams));
  if (opts.windowBits) args.push("-w", String(opts.windowBits));
  if (opts.tls) args.push(String(port), opts.tls.keyPath, opts.tls.certPath);
  else args.push("--no-tls", String(port));
  const child = spawn("nghttpd", args);
  await listening(port, child, "nghttpd");
  return { address: `127.0.0.1:${port}`, close: () => stop(child) };
}

const NODE_SERVER = `
import http2 from "node:http2";
import fs from "node:fs";
const [port, dir] = process.argv.slice(2);
const server = http2.createServer();
server.on("stream", (stream, headers) => {
  stream.on("error", () => {});
  const path = headers[":path"];
  if (path === "/echo") {
    const parts = [];
    stream.on("data", (c) => parts.push(c));
    stream.on("end", () => {
      const body = Buffer.concat(parts);
      stream.respond({ ":status": 200, "content-length": body.length, "x-method": headers[":method"] },
        { waitForTrailers: true });
      stream.on("wantTrailers", () => stream.sendTrailers({ "x-trailer": "done" }));
      stream.end(body);
    });
    return;
  }
  if (path === "/headers") {
    const body = Buffer.from(JSON.stringify(stream.sentHeaders ? headers : headers));
    stream.respond({ ":status": 200, "content-type": "application/json", "content-length": body.length });
    stream.end(body);
    return;
  }
  const file = dir + path;
  if (!/^\\/[a-z]+\\.[a-z]+$/.test(path) || !fs.existsSync(file)) {
    stream.respond({ ":status": 404 });
    stream.end();
    return;
  }
  const body = fs.readFileSync(file);
  stream.respond({ ":status": 200, "content-length": body.length });
  if (headers[":method"] === "HEAD") stream.end(); else stream.end(body);
});
server.listen(Number(port), "127.0.0.1");
`;

/** Node's own `http2` server (run by `node`): the site, `/echo` (with a trailer) and `/headers`. */
export async function startNodeServer(): Promise<Server> {
  const { dir } = await testSite();
  const script = `${dir}/node_h2_server.mjs`;
  await Deno.writeTextFile(script, NODE_SERVER);
  const port = freePort();
  const child = spawn("node", [script, String(port), dir]);
  await listening(port, child, "node http2 server");
  return { address: `127.0.0.1:${port}`, close: () => stop(child) };
}

/**
 * Writes `caddyfile` into the directory `conf` and runs Caddy on it, with
 * its home, data and config there too (stderr piped, as {@link spawn}).
 */
export async function spawnCaddy(conf: string, caddyfile: string): Promise<Deno.ChildProcess> {
  await Deno.writeTextFile(`${conf}/Caddyfile`, caddyfile);
  return new Deno.Command("caddy", {
    args: ["run", "--config", `${conf}/Caddyfile`, "--adapter", "caddyfile"],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
    env: { HOME: conf, XDG_DATA_HOME: `${conf}/data`, XDG_CONFIG_HOME: `${conf}/config` },
  }).spawn();
}

/** A Caddy of {@link runCaddy}: its port and process, and `close` (stops it, removes its folder). */
export interface CaddyProcess extends Server {
  readonly port: number;
  readonly child: Deno.ChildProcess;
}

/**
 * Caddy on a free port of 127.0.0.1 with the global options every test's
 * Caddy shares (no admin API, no automatic HTTPS, its state in a folder of
 * its own), `servers` as the body of its `servers` block, and the site block
 * `site(port)`; resolves once it listens.
 */
export async function runCaddy(
  servers: string,
  site: (port: number) => string,
): Promise<CaddyProcess> {
  const port = freePort();
  const conf = await Deno.makeTempDir({ prefix: "spooky-caddy-" });
  const child = await spawnCaddy(
    conf,
    `{
  admin off
  auto_https off
  storage file_system ${conf}/data
  servers {
    ${servers}
  }
}
${site(port)}`,
  );
  await listening(port, child, "caddy");
  return {
    address: `127.0.0.1:${port}`,
    port,
    child,
    close: async () => {
      await stop(child);
      await Deno.remove(conf, { recursive: true }).catch(() => {});
    },
  };
}

/** Caddy 2 serving the site over h2c, or over TLS (h2 by ALPN) with the given pair. */
export async function startCaddy(
  tls?: { keyPath: string; certPath: string },
): Promise<Server> {
  const { dir } = await testSite();
  return await runCaddy(
    `protocols ${tls ? "h1 h2" : "h1 h2c"}`,
    (port) =>
      `${tls ? "https" : "http"}://:${port} {
  bind 127.0.0.1
  ${tls ? `tls ${tls.certPath} ${tls.keyPath}` : ""}
  root * ${dir}
  file_server
}
`,
  );
}

/** `Deno.serve` (h2c with prior knowledge): the site and `/echo`. */
export async function startDenoServe(): Promise<Server> {
  const { small, big } = await testSite();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const path = new URL(req.url).pathname;
    if (path === "/echo") {
      const body = new Uint8Array(await req.arrayBuffer());
      return new Response(body, { headers: { "x-method": req.method } });
    }
    if (path === "/small.txt") return new Response(req.method === "HEAD" ? null : small);
    if (path === "/big.bin") return new Response(big);
    return new Response(null, { status: 404 });
  });
  return { address: `127.0.0.1:${server.addr.port}`, close: () => server.shutdown() };
}

/** The h2c servers nobody here wrote, by name, each started in its default setup. */
export const H2C_SERVERS: Readonly<Record<string, () => Promise<Server>>> = {
  nghttpd: () => startNghttpd(),
  node: () => startNodeServer(),
  caddy: () => startCaddy(),
  deno: () => startDenoServe(),
};

/** The payments service (`payments/main.ts`) with an in-memory store. */
export async function startPayments(token: string): Promise<Server> {
  const port = freePort();
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      new URL("../../payments/main.ts", import.meta.url).pathname,
      "--port",
      String(port),
      "--kv",
      ":memory:",
      "--token",
      token,
      "--log-level",
      "error",
    ],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  await listening(port, child, "payments");
  return { address: `127.0.0.1:${port}`, close: () => stop(child) };
}
