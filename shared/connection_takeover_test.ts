import assert from "node:assert/strict";
import { serveTlsConnections } from "./serve_connections.ts";
import { serveOnConnection } from "./serve_on_connection.ts";
import type { TakeOver } from "./connection_takeover.ts";
import { ensureDevCerts } from "./certs/generate.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

async function tlsPair() {
  const dir = await Deno.makeTempDir({ prefix: "spooky-takeover-" });
  const certs = await ensureDevCerts(dir);
  const pair = {
    cert: await Deno.readTextFile(certs.certPath),
    key: await Deno.readTextFile(certs.keyPath),
    ca: await Deno.readTextFile(certs.caPath),
  };
  await Deno.remove(dir, { recursive: true });
  return pair;
}

/** Everything `conn` sends until it closes. */
async function readAll(conn: Deno.Conn): Promise<string> {
  let out = "";
  const buf = new Uint8Array(4096);
  for (;;) {
    const n = await conn.read(buf).catch(() => null);
    if (n === null) return out;
    out += dec.decode(buf.subarray(0, n));
  }
}

Deno.test("Deno 2.9.6 fact: an upgraded WebSocket on serveHttpOnConnection closes right after its 101", async () => {
  // Why the TCP fallback takes WebSocket upgrades over (connection_takeover.ts):
  // if this fails, the runtime keeps upgraded streams and the take-over can go.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const closed = Promise.withResolvers<number>();
  (async () => {
    const conn = await listener.accept();
    serveOnConnection!(
      conn,
      { addEventListener() {} },
      (req) => {
        const { socket, response } = Deno.upgradeWebSocket(req);
        socket.onclose = (e) => closed.resolve(e.code);
        return response;
      },
      () => new Response(null, { status: 500 }),
      () => {},
    );
  })();
  const ws = new WebSocket(`ws://127.0.0.1:${listener.addr.port}/`);
  ws.onerror = () => {};
  const timer = setTimeout(() => closed.resolve(-1), 5_000);
  try {
    assert.equal(await closed.promise, 1005, "closed without a close frame, unasked");
  } finally {
    clearTimeout(timer);
    ws.close();
    listener.close();
  }
});

Deno.test({
  name:
    "#29.2: serveTlsConnections' take-over: an HTTP/1.1 head the hook wants is its own; others reach the runtime through a pipe",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const { cert, key, ca } = await tlsPair();
    const offered: string[] = [];
    const takeOver: TakeOver = (bytes, headEnd, conn) => {
      const head = dec.decode(bytes.subarray(0, headEnd));
      offered.push(head.split("\r\n")[0]);
      if (!head.includes("\r\nupgrade: test\r\n")) return null;
      const finished = Promise.withResolvers<void>();
      (async () => {
        const rest = dec.decode(bytes.subarray(headEnd));
        await conn.write(enc.encode(`HTTP/1.1 101 Switching Protocols\r\n\r\ntaken:${rest}`));
        conn.close();
        finished.resolve();
      })();
      return { finished: finished.promise, shutdown: () => finished.promise, close: () => {} };
    };
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const server = serveTlsConnections(
      listener,
      { cert, key },
      (req) => new Response(`runtime ${new URL(req.url).pathname}`),
      { takeOver, limits: { maxConnections: 8, headerTimeoutMs: 20_000, idleTimeoutMs: 20_000 } },
    );
    const connect = async (alpn: string) => {
      const tcp = await Deno.connect({ hostname: "127.0.0.1", port: listener.addr.port });
      return await Deno.startTls(tcp, {
        hostname: "localhost",
        caCerts: [ca],
        alpnProtocols: [alpn],
      });
    };
    try {
      const taken = await connect("http/1.1");
      await taken.write(enc.encode("GET /t HTTP/1.1\r\nhost: x\r\nupgrade: test\r\n\r\nafter"));
      assert.equal(await readAll(taken), "HTTP/1.1 101 Switching Protocols\r\n\r\ntaken:after");
      // Left to the runtime: two requests on one kept-alive connection, through the pipe.
      const left = await connect("http/1.1");
      await left.write(enc.encode("GET /a HTTP/1.1\r\nhost: x\r\n\r\n"));
      const buf = new Uint8Array(4096);
      const first = dec.decode(buf.subarray(0, (await left.read(buf))!));
      assert.match(first, /^HTTP\/1\.1 200 OK\r\n[\s\S]*runtime \/a$/);
      await left.write(enc.encode("GET /b HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n"));
      assert.match(await readAll(left), /runtime \/b$/);
      left.close();
      // h2 is never offered: the runtime serves it at once.
      const client = Deno.createHttpClient({ caCerts: [ca], http1: false, http2: true });
      const res = await fetch(`https://localhost:${listener.addr.port}/h2`, { client });
      assert.equal(await res.text(), "runtime /h2");
      client.close();
      assert.deepEqual(offered, ["GET /t HTTP/1.1", "GET /a HTTP/1.1"]);
      taken.close();
      // A first head longer than the bound (16 KiB) is not offered: the runtime gets it whole.
      const long = await connect("http/1.1");
      await long.write(enc.encode(`GET /long HTTP/1.1\r\nhost: x\r\nx-big: ${"b".repeat(20_000)}`));
      await long.write(enc.encode("\r\nconnection: close\r\n\r\n"));
      assert.match(await readAll(long), /^HTTP\/1\.1 \d{3} /, "answered by the runtime");
      assert.equal(offered.length, 2, "never offered to the hook");
      long.close();
    } finally {
      await server.shutdown();
    }
  },
});
