/**
 * Starts the real proxy (`deno run -A proxy/main.ts -c <file>`) as a child
 * process for end-to-end tests, with dev certificates from the project's own
 * generator.
 *
 * @module
 */

import { ensureDevCerts } from "../../shared/certs/generate.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const MAIN = `${ROOT}proxy/main.ts`;

let certsDir:
  | Promise<{ certPath: string; keyPath: string; caPath: string; spkiPin: string }>
  | undefined;

/** Dev certificates shared by the tests of one process. */
export function testCerts(): Promise<
  { certPath: string; keyPath: string; caPath: string; spkiPin: string }
> {
  certsDir ??= (async () => {
    const dir = await Deno.makeTempDir({ prefix: "spooky-certs-" });
    globalThis.addEventListener("unload", () => {
      try {
        Deno.removeSync(dir, { recursive: true });
      } catch {
        // already gone
      }
    });
    return await ensureDevCerts(dir);
  })();
  return certsDir;
}

/** A running proxy process. */
export interface ProxyProcess {
  port: number;
  /** Process id of the proxy (e.g. to read its RSS from /proc). */
  pid: number;
  /** The configuration file (rewrite it, then SIGHUP or POST /admin/reload). */
  configPath: string;
  /** Port of the admin listener, when the config has `admin`. */
  adminPort?: number;
  /** Lines printed so far on stdout and stderr. */
  stdout: string[];
  stderr: string[];
  /** Sends a signal and waits for the exit code. */
  stop(signal?: Deno.Signal): Promise<number>;
  /** Resolves with the exit code. */
  exited: Promise<number>;
}

/** `POST /admin/reload` on the admin port (no token): what the proxy answers. */
export async function adminReload(
  adminPort: number,
): Promise<{ reloaded: boolean; restart_required: string[] }> {
  const res = await fetch(`http://127.0.0.1:${adminPort}/admin/reload`, { method: "POST" });
  return await res.json();
}

/** Result of running the proxy to completion (for CLI tests). */
export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `proxy/main.ts` with arguments and waits for it to exit. */
export async function runCli(args: string[], env?: Record<string, string>): Promise<CliResult> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MAIN, ...args],
    stdout: "piped",
    stderr: "piped",
    stdin: "null",
    env: { NO_COLOR: "1", ...env },
    signal: AbortSignal.timeout(30_000),
  }).output();
  return {
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  };
}

/**
 * The smallest config: HTTP/3 on a free loopback port, every path to one
 * backend `b0` at `address` (for {@link startProxy}).
 */
export function oneBackendConfig(address: string): string {
  return `version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tls: {cert: "{{cert}}", key: "{{key}}"}}
upstream:
  root: {route: {path_prefix: /}, backends: [{id: b0, address: "${address}"}]}
`;
}

/** Writes `yaml` to a temp file; `{{cert}}`/`{{key}}` are replaced by dev certificate paths. */
export async function writeConfig(yaml: string): Promise<string> {
  const certs = await testCerts();
  const dir = await Deno.makeTempDir({ prefix: "spooky-cfg-" });
  const path = `${dir}/config.yaml`;
  await Deno.writeTextFile(
    path,
    yaml.replaceAll("{{cert}}", certs.certPath).replaceAll("{{key}}", certs.keyPath),
  );
  return path;
}

async function collectLines(
  stream: ReadableStream<Uint8Array>,
  into: string[],
  onLine?: (line: string) => void,
): Promise<void> {
  let buf = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    buf += chunk;
    let nl;
    while ((nl = buf.indexOf("\n")) !== -1) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      into.push(line);
      onLine?.(line);
    }
  }
  if (buf) into.push(buf);
}

/** Options of {@link startProxy}. */
export interface StartProxyOptions {
  /**
   * A command the proxy runs under, e.g. `["prlimit", "--nofile=256", "--"]`
   * (it must exec the proxy, so that `pid` stays the proxy's).
   */
  wrap?: string[];
}

/**
 * Starts the proxy with a YAML config (see {@link writeConfig}) and waits for
 * `Listening on <address>:<port>`.
 */
export async function startProxy(
  yaml: string,
  env: Record<string, string> = {},
  opts: StartProxyOptions = {},
): Promise<ProxyProcess> {
  const path = await writeConfig(yaml);
  const proxyArgs = ["run", "-A", MAIN, "-c", path];
  const [cmd, ...args] = opts.wrap?.length
    ? [...opts.wrap, Deno.execPath(), ...proxyArgs]
    : [Deno.execPath(), ...proxyArgs];
  const child = new Deno.Command(cmd, {
    args,
    stdout: "piped",
    stderr: "piped",
    stdin: "null",
    env: { NO_COLOR: "1", ...env },
  }).spawn();
  const stdout: string[] = [];
  const stderr: string[] = [];
  const listening = Promise.withResolvers<number>();
  let adminPort: number | undefined;
  const outDone = collectLines(child.stdout, stdout, (line) => {
    const admin = /^Admin listening on .*:(\d+)$/.exec(line);
    if (admin) adminPort = Number(admin[1]);
    const m = /^Listening on .*:(\d+)$/.exec(line);
    if (m) listening.resolve(Number(m[1]));
  });
  const errDone = collectLines(child.stderr, stderr);
  const exited = child.status.then(async (s) => {
    await Promise.allSettled([outDone, errDone]);
    // The config folder is this process's own; the shared certificates stay.
    await Deno.remove(path.slice(0, path.lastIndexOf("/")), { recursive: true }).catch(() => {});
    return s.code;
  });
  exited.then((code) =>
    listening.reject(
      new Error(`proxy exited (${code}):\n${stdout.join("\n")}\n${stderr.join("\n")}`),
    )
  );
  const timer = setTimeout(
    () => listening.reject(new Error("proxy did not start in 20 s")),
    20_000,
  );
  try {
    const port = await listening.promise;
    return {
      port,
      pid: child.pid,
      configPath: path,
      adminPort,
      stdout,
      stderr,
      exited,
      async stop(signal: Deno.Signal = "SIGTERM") {
        try {
          child.kill(signal);
        } catch {
          // already gone
        }
        return await exited;
      },
    };
  } catch (err) {
    try {
      child.kill("SIGKILL");
    } catch {
      // already gone
    }
    await exited;
    throw err;
  } finally {
    clearTimeout(timer);
  }
}
