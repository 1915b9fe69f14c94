// deno-lint-ignore-file no-console
/**
 * CLI of the payments sandbox:
 *
 * ```sh
 * deno task payments [--hostname 127.0.0.1] [--port 8081] [--kv PATH|:memory:|URL]
 *   [--base-path /vendor/v4]... [--token T]... [--cert F --key F] [--log-level L]
 * ```
 *
 * Tokens also come from `PAYMENTS_TOKENS` (comma-separated); with none, one
 * is generated and printed. Prints `Listening on http://HOST:PORT` once bound.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { setupLogging } from "../shared/logging.ts";
import { KV_CONNECT_MAX_CHECKS } from "./app.ts";
import { startPaymentsServer } from "./server.ts";

/** Default KV location. */
export const DEFAULT_KV_PATH = "./data/payments.kv";

/** True for an `http(s)://` location: a KV Connect server, not a file. */
export function isKvConnectUrl(location: string): boolean {
  return /^https?:\/\//.test(location);
}

/**
 * Open a Deno KV store: `":memory:"`, an `http(s)://` KV Connect URL (token
 * in `DENO_KV_ACCESS_TOKEN`), or a file path whose folder is created.
 */
export async function openKvAt(location: string): Promise<Deno.Kv> {
  if (location !== ":memory:" && !isKvConnectUrl(location)) {
    const slash = location.lastIndexOf("/");
    if (slash > 0) await Deno.mkdir(location.slice(0, slash), { recursive: true });
  }
  return await Deno.openKv(location);
}

/** A startup failure already described for the operator. */
class StartupError extends Error {}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

async function openStore(location: string): Promise<Deno.Kv> {
  try {
    return await openKvAt(location);
  } catch (err) {
    throw new StartupError(`cannot open the KV store ${location}: ${messageOf(err)}`);
  }
}

async function readPem(flag: string, path: string): Promise<string> {
  try {
    return await Deno.readTextFile(path);
  } catch (err) {
    throw new StartupError(`cannot read ${flag} ${path}: ${messageOf(err)}`);
  }
}

/** One line saying why the server could not start. */
function startupProblem(err: unknown, hostname: string, port: number): string {
  if (err instanceof StartupError) return err.message;
  if (err instanceof Deno.errors.AddrInUse) {
    return `cannot listen on ${hostname}:${port}: the address is already in use`;
  }
  if (err instanceof Deno.errors.AddrNotAvailable) {
    return `cannot listen on ${hostname}:${port}: no such local address`;
  }
  return `cannot start: ${messageOf(err)}`;
}

const USAGE = `Usage: deno task payments [options]
  --hostname H        interface to bind (default 127.0.0.1)
  --port N            port, 0 = any free port (default 8081)
  --kv LOC            KV file path, :memory:, or http(s):// KV Connect URL
                      (token in DENO_KV_ACCESS_TOKEN) (default ${DEFAULT_KV_PATH})
  --kv-timeout MS     longest wait for one store call before answering 503
                      (default 10000)
  --body-timeout MS   longest wait for a request body before answering 408
                      (default 30000)
  --drain-timeout MS  on SIGINT/SIGTERM, longest wait for requests in flight
                      (default 10000)
  --base-path P       API base path, may repeat (default /vendor/v4)
  --token T           accepted bearer token, may repeat (or PAYMENTS_TOKENS=a,b)
  --cert F --key F    PEM files: serve HTTPS (HTTP/2 + HTTP/1.1 over TLS)
  --log-level L       log level (default info; RUST_LOG overrides)
  --log-file F        write logs to this file instead of stderr
  -h, --help          this help`;

async function main(): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: Deno.args,
      options: {
        hostname: { type: "string", default: "127.0.0.1" },
        port: { type: "string", default: "8081" },
        kv: { type: "string", default: DEFAULT_KV_PATH },
        "kv-timeout": { type: "string", default: "10000" },
        "body-timeout": { type: "string", default: "30000" },
        "drain-timeout": { type: "string", default: "10000" },
        "base-path": { type: "string", multiple: true },
        token: { type: "string", multiple: true },
        cert: { type: "string" },
        key: { type: "string" },
        "log-level": { type: "string" },
        "log-file": { type: "string" },
        help: { type: "boolean", short: "h" },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    console.error(`${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(`--port must be an integer 0..65535, got ${values.port}`);
    return 2;
  }
  const ms: Record<string, number> = {};
  for (const flag of ["kv-timeout", "body-timeout", "drain-timeout"] as const) {
    ms[flag] = Number(values[flag]);
    if (!Number.isInteger(ms[flag]) || ms[flag] < 1) {
      console.error(`--${flag} must be a positive integer (ms), got ${values[flag]}`);
      return 2;
    }
  }
  if ((values.cert === undefined) !== (values.key === undefined)) {
    console.error("--cert and --key go together");
    return 2;
  }
  await setupLogging({
    service: "payments",
    level: values["log-level"],
    file: values["log-file"] ? { enabled: true, path: values["log-file"] } : undefined,
    rustLog: Deno.env.get("RUST_LOG"),
  });
  const envTokens = (Deno.env.get("PAYMENTS_TOKENS") ?? "").split(",").map((t) => t.trim())
    .filter((t) => t !== "");
  const tokens = [...(values.token ?? []), ...envTokens];
  let server;
  try {
    server = await startPaymentsServer({
      hostname: values.hostname,
      port,
      kv: () => openStore(values.kv),
      // A KV Connect server refuses commits with more than 10 checks.
      maxChecksPerCommit: isKvConnectUrl(values.kv) ? KV_CONNECT_MAX_CHECKS : undefined,
      storeDeadlineMs: ms["kv-timeout"],
      bodyTimeoutMs: ms["body-timeout"],
      drainTimeoutMs: ms["drain-timeout"],
      basePaths: values["base-path"],
      tokens,
      cert: values.cert ? await readPem("--cert", values.cert) : undefined,
      key: values.key ? await readPem("--key", values.key) : undefined,
    });
  } catch (err) {
    console.error(`payments: ${startupProblem(err, values.hostname, port)}`);
    return 1;
  }
  if (server.generatedToken) console.log(`Generated bearer token: ${server.token}`);
  console.log(`Base paths: ${server.basePaths.join(" ")}`);
  console.log(`Listening on ${server.url}`);
  const done = Promise.withResolvers<void>();
  const stop = () => done.resolve();
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
  await done.promise;
  await server.shutdown();
  return 0;
}

if (import.meta.main) Deno.exit(await main());
