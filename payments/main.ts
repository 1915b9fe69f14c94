// deno-lint-ignore-file no-console
/**
 * CLI of the payments sandbox:
 *
 * ```sh
 * deno task payments [--hostname 127.0.0.1] [--port 8081] [--kv PATH|:memory:|URL]
 *   [--base-path P]... [--token T]... [--cert F --key F] [--log-level L]
 *   [--cors-origin O]... [--trusted-proxy CIDR]... [--info-link URL]
 *   [--max-connections N] [--header-timeout MS] [--idle-timeout MS]
 * ```
 *
 * Tokens also come from `PAYMENTS_TOKENS` (comma-separated); with none, one
 * is generated and printed. Prints the connection limits and then
 * `Listening on http://HOST:PORT` once bound.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { setupLogging } from "../shared/logging.ts";
import { VERSION } from "../shared/version.ts";
import { DEFAULT_BASE_PATHS } from "./app.ts";
import { parseCidr } from "../shared/cidr.ts";
import { INFO_LINK } from "./domain/errors.ts";
import { DEFAULT_CONNECTION_LIMITS } from "../shared/serve_connections.ts";
import { KV_CONNECT_MAX_CHECKS, startPaymentsServer } from "./server.ts";
import { isDatabaseLocked } from "./store/commit_batcher.ts";

/** Default KV location. */
export const DEFAULT_KV_PATH = "./data/payments.kv";

/** True for an `http(s)://` location: a KV Connect server, not a file. */
export function isKvConnectUrl(location: string): boolean {
  return /^https?:\/\//.test(location);
}

/**
 * Open a Deno KV store: `":memory:"`, an `http(s)://` KV Connect URL (token
 * in `DENO_KV_ACCESS_TOKEN`), or a file path whose folder is created (mode
 * 0700). A new store file is created with mode 0600 before Deno KV opens it,
 * so the database and the `-wal`/`-shm` files SQLite makes beside it (which
 * take the database file's mode) are readable by the owner only; an existing
 * file keeps its mode.
 */
export async function openKvAt(location: string): Promise<Deno.Kv> {
  if (location !== ":memory:" && !isKvConnectUrl(location)) {
    const slash = location.lastIndexOf("/");
    if (slash > 0) await Deno.mkdir(location.slice(0, slash), { recursive: true, mode: 0o700 });
    // An empty file is an empty SQLite database. createNew: never touch an existing one.
    try {
      (await Deno.open(location, { write: true, createNew: true, mode: 0o600 })).close();
    } catch (err) {
      if (!(err instanceof Deno.errors.AlreadyExists)) throw err;
    }
  }
  // Two processes opening a new file at once: the one that does not set the
  // store up finds SQLite locked (seen under load); it waits, as commits do.
  for (let waited = 0;; waited += OPEN_LOCKED_RETRY_MS) {
    try {
      return await Deno.openKv(location);
    } catch (err) {
      if (!isDatabaseLocked(err) || waited >= OPEN_LOCKED_WAIT_MS) throw err;
      await new Promise((r) => setTimeout(r, OPEN_LOCKED_RETRY_MS));
    }
  }
}

/** How long opening a store waits while another process holds it locked. */
const OPEN_LOCKED_WAIT_MS = 5_000;
const OPEN_LOCKED_RETRY_MS = 50;

/** Descriptors left for the store, log and runtime when `--max-connections` follows the open-files limit. */
export const DESCRIPTORS_KEPT_FREE = 128;

/**
 * The default of `--max-connections`: 4,096, or fewer when the soft limit on
 * open files (`Max open files` in `/proc/self/limits`, given as `limitsText`)
 * leaves less than that after {@link DESCRIPTORS_KEPT_FREE} descriptors for the
 * store, log and runtime (at least 16).
 *
 * @example
 * ```ts
 * defaultMaxConnections("Max open files  1024  4096  files"); // 896
 * ```
 */
export function defaultMaxConnections(limitsText: string | undefined): number {
  const max = DEFAULT_CONNECTION_LIMITS.maxConnections;
  const m = limitsText === undefined ? null : /^Max open files\s+(\d+)/m.exec(limitsText);
  if (!m) return max;
  return Math.max(16, Math.min(max, Number(m[1]) - DESCRIPTORS_KEPT_FREE));
}

function readLimits(): string | undefined {
  try {
    return Deno.readTextFileSync("/proc/self/limits");
  } catch {
    return undefined; // not Linux, or no read permission: the plain default
  }
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
  --max-connections N most connections open at once; past it a newcomer
                      sheds the oldest one not serving a request, or is
                      closed at once if all are (default 4096, less if the
                      open-files limit is lower)
  --header-timeout MS close a connection whose first request head has not
                      arrived this long after connecting (default 10000)
  --idle-timeout MS   close a connection with no request in flight for this
                      long (default 60000)
  --base-path P       another API base path, may repeat (always served:
                      ${DEFAULT_BASE_PATHS.join(", ")})
  --cors-origin O     origin a browser may call the token endpoint from, may
                      repeat (default *: any); authenticated routes send no
                      CORS headers
  --trusted-proxy C   CIDR of a proxy whose forwarded client address
                      (Forwarded / X-Forwarded-For) the token rate limit
                      counts, may repeat (default none: the TCP peer)
  --info-link URL     infoLink of every error (default ${INFO_LINK})
  --token T           accepted bearer token, may repeat (or PAYMENTS_TOKENS=a,b)
  --cert F --key F    PEM files: serve HTTPS (HTTP/2 + HTTP/1.1 over TLS)
  --log-level L       log level (default info; RUST_LOG overrides)
  --log-file F        write logs to this file instead of stderr
  -V, --version       print the version and exit
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
        "max-connections": { type: "string" },
        "header-timeout": {
          type: "string",
          default: String(DEFAULT_CONNECTION_LIMITS.headerTimeoutMs),
        },
        "idle-timeout": {
          type: "string",
          default: String(DEFAULT_CONNECTION_LIMITS.idleTimeoutMs),
        },
        "base-path": { type: "string", multiple: true },
        "cors-origin": { type: "string", multiple: true },
        "trusted-proxy": { type: "string", multiple: true },
        "info-link": { type: "string" },
        token: { type: "string", multiple: true },
        cert: { type: "string" },
        key: { type: "string" },
        "log-level": { type: "string" },
        "log-file": { type: "string" },
        help: { type: "boolean", short: "h" },
        version: { type: "boolean", short: "V" },
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
  if (values.version) {
    console.log(`payments ${VERSION}`);
    return 0;
  }
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(`--port must be an integer 0..65535, got ${values.port}`);
    return 2;
  }
  const ms: Record<string, number> = {};
  const timeouts = [
    "kv-timeout",
    "body-timeout",
    "drain-timeout",
    "header-timeout",
    "idle-timeout",
  ] as const;
  for (const flag of timeouts) {
    ms[flag] = Number(values[flag]);
    if (!Number.isInteger(ms[flag]) || ms[flag] < 1) {
      console.error(`--${flag} must be a positive integer (ms), got ${values[flag]}`);
      return 2;
    }
  }
  const maxConnections = values["max-connections"] === undefined
    ? defaultMaxConnections(readLimits())
    : Number(values["max-connections"]);
  if (!Number.isInteger(maxConnections) || maxConnections < 1) {
    console.error(`--max-connections must be a positive integer, got ${values["max-connections"]}`);
    return 2;
  }
  for (const cidr of values["trusted-proxy"] ?? []) {
    const problem = parseCidr(cidr);
    if (typeof problem === "string") {
      console.error(
        `--trusted-proxy must be a CIDR block such as 10.0.0.0/8, got ${cidr} (${problem})`,
      );
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
      limits: {
        maxConnections,
        headerTimeoutMs: ms["header-timeout"],
        idleTimeoutMs: ms["idle-timeout"],
      },
      basePaths: values["base-path"],
      corsOrigins: values["cors-origin"],
      trustedProxies: values["trusted-proxy"],
      infoLink: values["info-link"],
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
  if (server.limits) {
    const { maxConnections, headerTimeoutMs, idleTimeoutMs } = server.limits;
    console.log(
      `Connections: at most ${maxConnections} open, header timeout ${headerTimeoutMs} ms, ` +
        `idle timeout ${idleTimeoutMs} ms`,
    );
  }
  // Signals are handled before the line a supervisor waits for: a SIGTERM sent
  // right after it drains instead of killing the process.
  const done = Promise.withResolvers<void>();
  const stop = () => done.resolve();
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
  console.log(`Listening on ${server.url}`);
  await done.promise;
  await server.shutdown();
  return 0;
}

if (import.meta.main) Deno.exit(await main());
