/**
 * Real HTTP/2 (h2c) backends on loopback for end-to-end tests: `Deno.serve`
 * speaks h2c to clients with prior knowledge.
 *
 * @module
 */

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
 * - `/headers`: returns the request headers as JSON;
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
    await new Promise((r) => setTimeout(r, Number(p.slice(6))));
    return new Response("slow", { headers: { "x-backend": name } });
  }
  if (p === "/headers") {
    return Response.json(Object.fromEntries(req.headers), { headers: { "x-backend": name } });
  }
  if (p === "/health") return Response.json({ status: "ok" });
  return Response.json({ backend: name, method: req.method, path: url.pathname + url.search }, {
    headers: { "x-backend": name },
  });
}
