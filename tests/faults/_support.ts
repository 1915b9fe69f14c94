/**
 * Shared helpers of the fault tests (issue #8): proxy configurations, RSS of a
 * process, bounded waits.
 *
 * @module
 */

/** Options of {@link faultConfig}. */
export interface FaultConfigOptions {
  /** Health check of every backend, as a YAML flow mapping (e.g. `{interval: 200}`). */
  healthCheck?: string;
  /** `request_timeout_ms` of the pool. */
  requestTimeoutMs?: number;
  /** Extra top-level YAML appended to the file (e.g. `limits:` or `log:`). */
  extra?: string;
  /** `listen.max_streams`. */
  maxStreams?: number;
}

/** A proxy configuration with one pool on `/` over the given backend addresses. */
export function faultConfig(addresses: string[], opts: FaultConfigOptions = {}): string {
  const health = opts.healthCheck ? `, health_check: ${opts.healthCheck}` : "";
  const backends = addresses
    .map((a, i) => `      - {id: b${i}, address: "${a}"${health}}`)
    .join("\n");
  const maxStreams = opts.maxStreams ? `, max_streams: ${opts.maxStreams}` : "";
  return `version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tls: {cert: "{{cert}}", key: "{{key}}"}${maxStreams}}
load_balancing: {type: round-robin}
upstream:
  root:
    route: {path_prefix: /}
    request_timeout_ms: ${opts.requestTimeoutMs ?? 5000}
    backends:
${backends}
${opts.extra ?? ""}
`;
}

/** Resident set size of a process in bytes (Linux `/proc/<pid>/status`). */
export async function rssBytes(pid: number): Promise<number> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  const m = /^VmRSS:\s+(\d+) kB/m.exec(status);
  if (!m) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(m[1]) * 1024;
}

/** Whether a process is still running (and not a zombie). */
export async function isAlive(pid: number): Promise<boolean> {
  try {
    const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state !== "Z" && state !== "X";
  } catch {
    return false;
  }
}

/** Resolves after `ms`. */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Races `p` against a timer; the timer never outlives the race. */
export async function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what}: no result within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Formats bytes as MiB with one decimal. */
export function mib(bytes: number): string {
  return `${(bytes / 1048576).toFixed(1)} MiB`;
}

/** The request fields of a GET on `path` (static-table QPACK via the test client). */
export function getHead(path: string, port: number): Array<[string, string]> {
  return [
    [":method", "GET"],
    [":scheme", "https"],
    [":authority", `localhost:${port}`],
    [":path", path],
  ];
}

/** A backend running in a child process (see `_backend_main.ts`). */
export interface BackendProcess {
  address: string;
  pid: number;
  /** Sends a signal and waits for the process to end. */
  kill(signal?: Deno.Signal): Promise<void>;
}

/** Starts `_backend_main.ts` in a child process and waits for its port. */
export async function startBackendProcess(name: string): Promise<BackendProcess> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL("./_backend_main.ts", import.meta.url).pathname, name],
    stdout: "piped",
    stderr: "inherit",
    stdin: "null",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  const port = await withTimeout(
    (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`backend ${name} exited before listening`);
        text += value;
        const m = /port (\d+)/.exec(text);
        if (m) return Number(m[1]);
      }
    })(),
    20_000,
    `backend ${name} start`,
  ).catch(async (err) => {
    child.kill("SIGKILL");
    await child.status;
    throw err;
  });
  // Keep draining stdout so the child never blocks on a full pipe.
  const drained = (async () => {
    try {
      while (!(await reader.read()).done) { /* discard */ }
    } catch {
      // closed
    }
  })();
  let ended = false;
  return {
    address: `127.0.0.1:${port}`,
    pid: child.pid,
    async kill(signal: Deno.Signal = "SIGKILL") {
      if (!ended) {
        ended = true;
        try {
          child.kill(signal);
        } catch {
          // already gone
        }
      }
      await child.status;
      await drained;
    },
  };
}
