/**
 * Real HTTP/2 (h2c) backends on loopback for end-to-end tests: `Deno.serve`
 * speaks h2c to clients with prior knowledge. {@link startBackend} serves in
 * the test's own process; {@link startBackendProcess} in a child process, so
 * that a test can kill it abruptly (`deno run -A tests/support/backend.ts
 * NAME` prints `port <n>` once listening).
 *
 * @module
 */

import { sleep, withTimeout } from "./wait.ts";

/** A running backend. */
export interface TestBackend {
  port: number;
  address: string;
  /** Requests seen, newest last. */
  seen: Request[];
  close(): Promise<void>;
}

/**
 * Starts a backend. The default handler understands:
 * - `/echo`: returns the request body, with `x-body-sha256`;
 * - `/bytes/<n>`: returns n bytes;
 * - `/status/<code>`: returns that status;
 * - `/slow/<ms>`: answers after ms;
 * - `/headers`: returns the request headers as JSON, the authority in `x-authority`;
 * - `/health`: 200;
 * - anything else: JSON with method, path, backend name.
 */
export function startBackend(
  name: string,
  handler?: (req: Request) => Response | Promise<Response>,
): TestBackend {
  const seen: Request[] = [];
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (req) => {
      seen.push(req);
      if (handler) return await handler(req);
      return await defaultHandler(name, req);
    },
  );
  return {
    port: server.addr.port,
    address: `127.0.0.1:${server.addr.port}`,
    seen,
    close: () => server.shutdown(),
  };
}

async function defaultHandler(name: string, req: Request): Promise<Response> {
  const url = new URL(req.url);
  // Route prefixes are not stripped by the proxy: match on the last known segment.
  const m = /\/(echo|bytes|random|status|slow|headers|health)(\/.*)?$/.exec(url.pathname);
  const p = m ? m[0] : url.pathname;
  if (p === "/echo") {
    const body = new Uint8Array(await req.arrayBuffer());
    const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", body));
    const hex = [...digest].map((b) => b.toString(16).padStart(2, "0")).join("");
    return new Response(body, { headers: { "x-body-sha256": hex, "x-backend": name } });
  }
  if (p.startsWith("/bytes/")) {
    const n = Number(p.slice(7));
    return new Response(new Uint8Array(n).fill(97), { headers: { "x-backend": name } });
  }
  if (p.startsWith("/random/")) {
    // n random bytes (no repeating pattern), streamed, with their SHA-256 in a header.
    const n = Number(p.slice(8));
    const data = new Uint8Array(n);
    for (let off = 0; off < n; off += 65536) {
      crypto.getRandomValues(data.subarray(off, Math.min(n, off + 65536)));
    }
    const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", data));
    const hex = [...digest].map((b) => b.toString(16).padStart(2, "0")).join("");
    let off = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        if (off >= n) return c.close();
        const size = 1000 + Math.floor(Math.random() * 60000);
        c.enqueue(data.slice(off, off + size));
        off += size;
      },
    });
    return new Response(body, { headers: { "x-body-sha256": hex, "content-length": String(n) } });
  }
  if (p.startsWith("/status/")) {
    return new Response(null, { status: Number(p.slice(8)), headers: { "x-backend": name } });
  }
  if (p.startsWith("/slow/")) {
    await sleep(Number(p.slice(6)));
    return new Response("slow", { headers: { "x-backend": name } });
  }
  if (p === "/headers") {
    return Response.json(Object.fromEntries(req.headers), {
      // The authority as the backend heard it: HTTP/2 carries it as
      // `:authority`, which Deno.serve puts in the URL, not in `host`.
      headers: { "x-backend": name, "x-authority": new URL(req.url).host },
    });
  }
  if (p === "/health") return Response.json({ status: "ok" });
  return Response.json({ backend: name, method: req.method, path: url.pathname + url.search }, {
    headers: { "x-backend": name },
  });
}

/** A backend running in a child process (see {@link startBackendProcess}). */
export interface BackendProcess {
  address: string;
  pid: number;
  /** Sends a signal and waits for the process to end. */
  kill(signal?: Deno.Signal): Promise<void>;
}

/** Starts this module as a backend in a child process and waits for its port. */
export async function startBackendProcess(name: string): Promise<BackendProcess> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL(import.meta.url).pathname, name],
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

if (import.meta.main) {
  const be = startBackend(Deno.args[0] ?? "backend");
  // deno-lint-ignore no-console
  console.log(`port ${be.port}`);
}
