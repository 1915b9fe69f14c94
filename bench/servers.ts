/**
 * The processes of `bench/run.ts`: starting and stopping them, and the servers
 * measured. Each is its own process: the neutral backend (`bench/backend.ts`),
 * the floor (`bench/floor.ts`, with or without its fetch Worker), spooky
 * (`proxy/main.ts -c <generated yaml>`) and Caddy. spooky and Caddy each
 * run twice: speaking HTTP/2 (h2c) to the backend, and (`spooky-h1`,
 * `caddy-h1`) HTTP/1.1 to the same backend (`Deno.serve` answers both on one
 * port).
 *
 * @module
 */

import { freePort } from "../tests/support/free_port.ts";

/** The repository root (with a trailing slash). */
export const ROOT: string = new URL("../", import.meta.url).pathname;

/** A started process. */
export interface Proc {
  name: string;
  child: Deno.ChildProcess;
  pid: number;
  /** the first capture group of the ready pattern */
  ready: string;
  /** last lines of output, for error messages */
  tail: string[];
}

/** What every server of one run shares. */
export interface Env {
  tmp: string;
  certs: { certPath: string; keyPath: string; caPath: string };
  backendPort: number;
}

/** The kinds of server compared; ratios are spooky's over the floor's and Caddy's. */
export type ServerKind = "floor" | "spooky" | "caddy";

/** What a proxy speaks to the backend: HTTP/2 with prior knowledge (h2c) or HTTP/1.1. */
export type UpstreamProtocol = "h2" | "http1";

/** What to start: `name` labels its rows in the report ("floor-worker", "floor-h2", ...). */
export interface ServerSpec {
  name: string;
  kind: ServerKind;
  /** floor: `fetch` on one Worker */
  worker?: boolean;
  /** floor: the `node:http2` client instead of `fetch` */
  nodeHttp2?: boolean;
  /** spooky: more `limits` keys, as `key: value` lines */
  limits?: string[];
  /** spooky, Caddy and the floor (`fetch`): the protocol to the backend (absent: h2c) */
  upstream?: UpstreamProtocol;
  /** spooky: also the TCP fallback (`listen.tcp_fallback`), for the WebSocket row */
  tcpFallback?: boolean;
  /** spooky: the checkout whose `proxy/main.ts` runs, with a trailing `/` (default: this one; `ab.ts`) */
  root?: string;
}

/** A running server. */
export type Server = Proc & { port: number; spec: ServerSpec };

async function drainLines(
  stream: ReadableStream<Uint8Array>,
  onLine: (line: string) => void,
): Promise<void> {
  const decoder = new TextDecoder();
  let buf = "";
  try {
    for await (const chunk of stream) {
      buf += decoder.decode(chunk, { stream: true });
      let i;
      while ((i = buf.indexOf("\n")) >= 0) {
        onLine(buf.slice(0, i));
        buf = buf.slice(i + 1);
      }
    }
  } catch {
    // process gone
  }
  if (buf) onLine(buf);
}

/** Starts a process and waits until a line of its output matches `ready`. */
export async function start(
  name: string,
  cmd: string,
  args: string[],
  ready: RegExp,
  env: Record<string, string> = {},
  stdin: "piped" | "null" = "null",
): Promise<Proc> {
  const child = new Deno.Command(cmd, {
    args,
    env,
    stdin,
    stdout: "piped",
    stderr: "piped",
    cwd: ROOT,
  }).spawn();
  const tail: string[] = [];
  const { promise, resolve } = Promise.withResolvers<string | null>();
  const onLine = (line: string) => {
    tail.push(line);
    if (tail.length > 20) tail.shift();
    const m = line.match(ready);
    if (m) resolve(m[1] ?? "");
  };
  drainLines(child.stdout, onLine);
  drainLines(child.stderr, onLine);
  child.status.then(() => resolve(null));
  const timer = setTimeout(() => resolve(null), 60_000);
  const got = await promise;
  clearTimeout(timer);
  if (got === null) {
    try {
      child.kill("SIGKILL");
    } catch { /* gone */ }
    throw new Error(`${name} did not start:\n${tail.join("\n")}`);
  }
  return { name, child, pid: child.pid, ready: got, tail };
}

/** Stops a process (SIGKILL after 15 s) and waits for it. */
export async function stop(p: Proc | undefined, signal: Deno.Signal = "SIGTERM"): Promise<void> {
  if (!p) return;
  try {
    p.child.kill(signal);
  } catch {
    return; // already exited
  }
  const timer = setTimeout(() => {
    try {
      p.child.kill("SIGKILL");
    } catch { /* gone */ }
  }, 15_000);
  await p.child.status;
  clearTimeout(timer);
}

/** Runs a command to its end and returns its output. */
export async function run(
  cmd: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(cmd, {
    args,
    env,
    stdout: "piped",
    stderr: "piped",
    cwd: ROOT,
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/**
 * Checks `rev` out into a git worktree at `dir`, for spooky as of that
 * commit (`ServerSpec.root`): returns the root to give it (with its trailing
 * `/`). Throws with git's message when `rev` cannot be checked out; undone
 * by {@link removeCheckout}.
 */
export async function checkoutRevision(rev: string, dir: string): Promise<string> {
  const added = await run("git", ["worktree", "add", "--detach", dir, rev]);
  if (added.code !== 0) throw new Error(`git worktree add ${rev} failed: ${added.stderr.trim()}`);
  return `${dir}/`;
}

/** Removes a worktree made by {@link checkoutRevision}. */
export async function removeCheckout(dir: string): Promise<void> {
  await run("git", ["worktree", "remove", "--force", dir]);
}

/** Whether a command is on the PATH. */
export async function has(cmd: string): Promise<boolean> {
  try {
    return (await run("sh", ["-c", `command -v ${cmd}`])).code === 0;
  } catch {
    return false;
  }
}

/** Starts the neutral h2c backend. */
export async function startBackend(): Promise<Proc & { port: number }> {
  const p = await start(
    "backend",
    Deno.execPath(),
    ["run", "-A", `${ROOT}bench/backend.ts`],
    /^Listening on .*:(\d+)$/,
  );
  return { ...p, port: Number(p.ready) };
}

/**
 * Starts spooky with a generated configuration. Only keys that every version
 * of the schema knows are written, plus the spec's `limits`.
 */
export async function startSpooky(
  env: Env,
  spec: ServerSpec = { name: "spooky", kind: "spooky" },
  extraArgs: string[] = [],
): Promise<Server> {
  const config = `${env.tmp}/${spec.name}.yaml`;
  const limitLines = (spec.limits ?? []).map((line) => `  ${line}\n`).join("");
  const limits = limitLines === "" ? "" : `limits:\n${limitLines}`;
  await Deno.writeTextFile(
    config,
    `version: 1
listen:
  protocol: http3
  address: 127.0.0.1
  port: 0${spec.tcpFallback ? "\n  tcp_fallback: true" : ""}
  tls:
    cert: ${env.certs.certPath}
    key: ${env.certs.keyPath}
upstream:
  bench:
    route:
      path_prefix: /
    # the timeout runs until the response headers, so it also bounds an upload
    request_timeout_ms: 600000
    backends:
      - id: backend-1
        address: 127.0.0.1:${env.backendPort}${
      spec.upstream === "http1" ? "\n        protocol: http1" : ""
    }
log:
  level: info
${limits}`,
  );
  const p = await start(
    spec.name,
    Deno.execPath(),
    ["run", "-A", ...extraArgs, `${spec.root ?? ROOT}proxy/main.ts`, "-c", config],
    /^Listening on .*:(\d+)$/,
  );
  return { ...p, port: Number(p.ready), spec };
}

/** Starts the floor server (`bench/floor.ts`). */
export async function startFloor(env: Env, spec: ServerSpec): Promise<Server> {
  const p = await start(
    spec.name,
    Deno.execPath(),
    [
      "run",
      "-A",
      `${ROOT}bench/floor.ts`,
      "--cert",
      env.certs.certPath,
      "--key",
      env.certs.keyPath,
      "--backend",
      `127.0.0.1:${env.backendPort}`,
      ...(spec.worker ? ["--worker"] : []),
      ...(spec.nodeHttp2 ? ["--node-http2"] : []),
      ...(spec.upstream === "http1" ? ["--http1"] : []),
    ],
    /^Listening on .*:(\d+)$/,
  );
  return { ...p, port: Number(p.ready), spec };
}

/** Starts Caddy as an HTTP/3 reverse proxy to the backend (h2c, or HTTP/1.1 for `upstream: http1`). */
export async function startCaddy(env: Env, spec: ServerSpec): Promise<Server> {
  const port = freePort();
  const file = `${env.tmp}/${spec.name}.Caddyfile`;
  // `http://` upstreams get HTTP/1.1 from Caddy's reverse_proxy, `h2c://` HTTP/2.
  const scheme = spec.upstream === "http1" ? "http" : "h2c";
  await Deno.writeTextFile(
    file,
    `{
	admin off
	auto_https off
	skip_install_trust
	storage file_system ${env.tmp}/${spec.name}-data
	servers {
		protocols h1 h2 h3
	}
}
https://localhost:${port} {
	bind 127.0.0.1
	tls ${env.certs.certPath} ${env.certs.keyPath}
	reverse_proxy ${scheme}://127.0.0.1:${env.backendPort}
}
`,
  );
  const p = await start(
    spec.name,
    "caddy",
    ["run", "--config", file, "--adapter", "caddyfile"],
    /"msg":"serving initial configuration"()/,
    { HOME: env.tmp, XDG_DATA_HOME: `${env.tmp}/xdg`, XDG_CONFIG_HOME: `${env.tmp}/xdg` },
  );
  return { ...p, port, spec };
}

/** Starts one server of any kind. */
export function startServer(env: Env, spec: ServerSpec): Promise<Server> {
  switch (spec.kind) {
    case "floor":
      return startFloor(env, spec);
    case "spooky":
      return startSpooky(env, spec);
    case "caddy":
      return startCaddy(env, spec);
  }
}

/**
 * The servers of a run, from `--servers` (names: floor, floor-worker,
 * floor-h2, floor-h1, spooky, caddy, spooky-h1, caddy-h1).
 */
export function serverSpecs(names: string[]): ServerSpec[] {
  return names.map((name): ServerSpec => {
    switch (name) {
      case "floor":
        return { name, kind: "floor" };
      case "floor-worker":
        return { name, kind: "floor", worker: true };
      case "floor-h2":
        return { name, kind: "floor", nodeHttp2: true };
      case "floor-h1":
        return { name, kind: "floor", upstream: "http1" };
      case "spooky":
        return { name, kind: "spooky" };
      case "caddy":
        return { name, kind: "caddy" };
      case "spooky-h1":
        return { name, kind: "spooky", upstream: "http1" };
      case "caddy-h1":
        return { name, kind: "caddy", upstream: "http1" };
      default:
        throw new Error(
          `unknown server "${name}" (floor, floor-worker, floor-h2, floor-h1, spooky, caddy, spooky-h1, caddy-h1)`,
        );
    }
  });
}
