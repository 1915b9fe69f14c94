/**
 * Start `payments/main.ts` as a child process and wait for its
 * `Listening on URL` line.
 *
 * @module
 */

const ROOT = new URL("../../", import.meta.url);

/** A running server process. */
export interface ServerProcess {
  /** The child. */
  child: Deno.ChildProcess;
  /** Base URL printed by the server. */
  url: string;
  /** Every stdout line read so far. */
  lines: string[];
  /** SIGTERM and wait. */
  stop(): Promise<Deno.CommandStatus>;
  /** SIGKILL and wait. */
  kill(): Promise<Deno.CommandStatus>;
}

/** Spawn the server with the given CLI arguments (add `--port 0`). */
export async function spawnServer(
  args: string[],
  env: Record<string, string> = {},
): Promise<ServerProcess> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "payments/main.ts", ...args],
    cwd: ROOT,
    env: { NO_COLOR: "1", ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const lines: string[] = [];
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  let url: string | undefined;
  const deadline = Date.now() + 30_000;
  while (!url) {
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      await child.status;
      throw new Error(`server did not start: ${lines.join("\n")}`);
    }
    const { done, value } = await reader.read();
    if (done) {
      await child.status;
      throw new Error(`server exited: ${lines.join("\n")}`);
    }
    buf += value;
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      lines.push(line);
      const m = /^Listening on (\S+)$/.exec(line);
      if (m) url = m[1];
    }
  }
  // keep draining stdout so the child never blocks on a full pipe
  const drained = (async () => {
    try {
      while (true) {
        const { done, value } = await reader.read();
        if (done) break;
        lines.push(...value.split("\n").filter((l) => l !== ""));
      }
    } catch {
      // closed
    }
  })();
  const end = async (signal: Deno.Signal) => {
    try {
      child.kill(signal);
    } catch {
      // already gone
    }
    const status = await child.status;
    await drained;
    return status;
  };
  return { child, url, lines, stop: () => end("SIGTERM"), kill: () => end("SIGKILL") };
}

/** A JSON API call's outcome. */
export interface ApiReply {
  status: number;
  // deno-lint-ignore no-explicit-any
  body: any;
  headers: Headers;
}

/** Calls `<base>/vendor/v4/<path>` with a JSON body (see {@link apiCaller}). */
export type ApiCall = (
  client: Deno.HttpClient,
  base: string,
  method: string,
  path: string,
  body?: unknown,
  headers?: Record<string, string>,
) => Promise<ApiReply>;

/**
 * An API caller sending `token` as its bearer token; the reply's body is
 * parsed as JSON. Each call is bounded to 10 s.
 */
export function apiCaller(token: string): ApiCall {
  return async (client, base, method, path, body, headers = {}) => {
    const res = await fetch(`${base}/vendor/v4/${path}`, {
      client,
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    });
    return { status: res.status, body: await res.json(), headers: res.headers };
  };
}
