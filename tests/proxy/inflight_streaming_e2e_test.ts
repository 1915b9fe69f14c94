/**
 * Issue #30.2-3: a request is in flight on its backend until its exchange
 * is over (the body delivered to the client, the client gone, or the body
 * broken), not only until the response head: a real proxy process in front
 * of real backends that send the head at once and the body when the test
 * says. With `max_inflight: 2`, two downloads in progress fill the backend
 * (a third request is 503 `overloaded`); a download the client cancels
 * (HTTP/3 STOP_SENDING, or an HTTP/2 client on the TCP fallback) or one
 * that completes frees its slot. `least-request` sees a backend holding a
 * long download as busy and sends the next requests to the other one.
 */
import assert from "node:assert/strict";
import {
  encodeFrame,
  FrameDecoder,
  FrameType,
  NEED_MORE,
  QpackDecoder,
} from "../../proxy/h3/mod.ts";
import { startBackend, type TestBackend } from "../support/backend.ts";
import { getHead } from "../support/faults.ts";
import { H3TestClient } from "../support/h3_client.ts";
import { startProxy, testCerts } from "../support/proxy_process.ts";
import { pollUntil, withTimeout } from "../support/wait.ts";
import { scrapeMetrics } from "../support/metrics.ts";

const text = new TextEncoder();

/**
 * A backend whose `/dl` responses send their head and a first chunk at
 * once and the rest when {@link Downloads.finishAll} says; anything else is
 * answered at once. Each answer names the backend in `x-backend`.
 */
interface Downloads {
  backend: TestBackend;
  /** Downloads begun and not finished. */
  readonly open: number;
  /** Ends every open download's body. */
  finishAll(): void;
}

function downloadsBackend(name: string): Downloads {
  const open = new Set<ReadableStreamDefaultController<Uint8Array>>();
  const backend = startBackend(name, (req) => {
    const headers = { "x-backend": name };
    if (!new URL(req.url).pathname.includes("/dl")) return new Response(name, { headers });
    let own: ReadableStreamDefaultController<Uint8Array>;
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        own = c;
        open.add(c);
        c.enqueue(text.encode("first chunk;"));
      },
      cancel() {
        open.delete(own);
      },
    });
    return new Response(body, { headers });
  });
  return {
    backend,
    get open() {
      return open.size;
    },
    finishAll() {
      for (const c of open) {
        c.enqueue(text.encode("the rest"));
        c.close();
      }
      open.clear();
    },
  };
}

/** A download over HTTP/3 in progress: its head and first bytes have arrived. */
interface Download {
  status: number;
  backend: string | undefined;
  /** Reads the rest of the body; resolves with its length once the stream ends. */
  rest(): Promise<number>;
  /** Stops reading (STOP_SENDING): the client abandons it. */
  cancel(): Promise<void>;
}

async function startDownload(client: H3TestClient, port: number, path: string): Promise<Download> {
  const stream = await client.conn.createBidirectionalStream();
  const writer = stream.writable.getWriter();
  await writer.write(encodeFrame(FrameType.HEADERS, client.encodeFields(getHead(path, port))));
  await writer.close();
  const reader = stream.readable.getReader();
  const frames = new FrameDecoder({ maxFrameSize: 1 << 20 });
  const qpack = new QpackDecoder({ maxTableCapacity: 0, maxBlockedStreams: 0 });
  let status = 0;
  let backend: string | undefined;
  let bytes = 0;
  /** Reads until `enough` holds or the stream ends; false at the end. */
  const readUntil = async (enough: () => boolean): Promise<boolean> => {
    while (!enough()) {
      const r = await reader.read();
      if (r.done) return false;
      frames.push(r.value);
      for (let ev = frames.next(); ev !== NEED_MORE; ev = frames.next()) {
        if (ev.kind === "data") bytes += ev.chunk.length;
        else if (ev.kind === "frame" && ev.type === FrameType.HEADERS && status === 0) {
          const fields = qpack.decodeSection(0, ev.payload) as Array<[string, string]>;
          status = Number(fields.find(([n]) => n === ":status")?.[1]);
          backend = fields.find(([n]) => n === "x-backend")?.[1];
        }
      }
    }
    return true;
  };
  await withTimeout(readUntil(() => status !== 0 && bytes > 0), 10_000, `${path}: its head`);
  return {
    status,
    backend,
    rest: async () => {
      await withTimeout(readUntil(() => false), 10_000, `${path}: its end`);
      return bytes;
    },
    cancel: () => reader.cancel(),
  };
}

async function inflight(adminPort: number, backend: string, pool: string): Promise<number> {
  const text = await scrapeMetrics(adminPort);
  const series = `spooky_backend_inflight{backend="${backend}",pool="${pool}"} `;
  const line = text.split("\n").find((l) => l.startsWith(series));
  return Number(line?.slice(series.length) ?? NaN);
}

Deno.test("#30.2: max_inflight counts a download until its body is done: full while two stream, free again once one is cancelled or both complete", async () => {
  const slow = downloadsBackend("slow");
  const certs = await testCerts();
  const ca = await Deno.readTextFile(certs.caPath);
  const proxy = await startProxy(`version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tcp_fallback: true, tls: {cert: "${certs.certPath}", key: "${certs.keyPath}"}}
upstream:
  guarded:
    route: {path_prefix: /guarded}
    backends: [{id: slow-0, address: "${slow.backend.address}", max_inflight: 2}]
admin: {port: 0}
`);
  const client = await H3TestClient.connect(proxy.port, ca);
  const h2 = Deno.createHttpClient({ caCerts: [ca], http1: false, http2: true });
  const get = (path: string) => client.request({ head: getHead(path, proxy.port) });
  const slots = () => inflight(proxy.adminPort!, "slow-0", "guarded");
  const expectRefused = async (what: string) => {
    const res = await get("/guarded/quick");
    assert.equal(res.status, 503, what);
    assert.equal(JSON.parse(new TextDecoder().decode(res.body)).error, "overloaded");
  };
  const expectServed = async (what: string) => {
    assert.equal((await get("/guarded/quick")).status, 200, what);
  };
  /** Waits (bounded) until the backend has `n` requests in flight. */
  const settle = async (n: number, what: string) => {
    await pollUntil(async () => (await slots()) === n);
    assert.equal(await slots(), n, what);
  };

  try {
    // Two downloads with their heads sent: both slots stay taken while the bodies stream.
    const first = await startDownload(client, proxy.port, "/guarded/dl/1");
    const second = await startDownload(client, proxy.port, "/guarded/dl/2");
    assert.deepEqual([first.status, second.status], [200, 200]);
    await expectRefused("two bodies streaming: the backend is full");
    assert.equal(await slots(), 2);

    // The client abandons one (STOP_SENDING): its slot is freed.
    await first.cancel();
    await settle(1, "a cancelled download gives its slot back");
    await expectServed("one slot free again");

    // Full again; then both bodies complete: both slots are freed.
    const third = await startDownload(client, proxy.port, "/guarded/dl/3");
    await expectRefused("full again");
    slow.finishAll();
    assert.ok((await second.rest()) > 12 && (await third.rest()) > 12, "the bodies arrived whole");
    await settle(0, "completed downloads give their slots back");
    await expectServed("free once the downloads are over");

    // The TCP fallback (HTTP/2): a download holds its slot until the client cancels it.
    const viaTcp = await fetch(`https://localhost:${proxy.port}/guarded/dl/4`, { client: h2 });
    assert.equal(viaTcp.status, 200);
    const tcpReader = viaTcp.body!.getReader();
    await tcpReader.read();
    assert.equal(await slots(), 1, "a TCP fallback download in progress holds its slot");
    await tcpReader.cancel();
    await settle(0, "a TCP fallback download the client cancels gives its slot back");
  } finally {
    slow.finishAll();
    h2.close();
    await client.close();
    assert.equal(await proxy.stop(), 0);
    await slow.backend.close();
  }
});

Deno.test("#30.3: least-request: a backend holding a long download is busy; new requests go to the other", async () => {
  const long = downloadsBackend("long");
  const quick = downloadsBackend("quick");
  const certs = await testCerts();
  const proxy = await startProxy(`version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tls: {cert: "${certs.certPath}", key: "${certs.keyPath}"}}
upstream:
  lr:
    route: {path_prefix: /lr}
    load_balancing: {type: least-request}
    backends:
      - {id: lr-long, address: "${long.backend.address}"}
      - {id: lr-quick, address: "${quick.backend.address}"}
admin: {port: 0}
`);
  const client = await H3TestClient.connect(proxy.port, await Deno.readTextFile(certs.caPath));
  try {
    // Downloads until one is held by `long` (those `quick` serves are read whole at once).
    let held: Download | undefined;
    for (let i = 0; i < 40 && held === undefined; i++) {
      const dl = await startDownload(client, proxy.port, `/lr/dl/${i}`);
      if (dl.backend === "long") held = dl;
      else {
        quick.finishAll();
        await dl.rest();
      }
    }
    assert.ok(held !== undefined, "a download landed on the long backend");

    const answered: Record<string, number> = { long: 0, quick: 0 };
    for (let i = 0; i < 20; i++) {
      const res = await client.request({ head: getHead(`/lr/q/${i}`, proxy.port) });
      assert.equal(res.status, 200);
      const name = res.headers.find(([n]) => n === "x-backend")?.[1] ?? "?";
      answered[name] = (answered[name] ?? 0) + 1;
    }
    // Equal weights and no load elsewhere: half of them would go to `long` if its
    // download did not count; a stray tie at a request's very end may send one there.
    assert.ok(answered.long <= 2, `the busy backend answered ${JSON.stringify(answered)}`);
    assert.equal(await inflight(proxy.adminPort!, "lr-long", "lr"), 1);

    long.finishAll();
    await held.rest();
    await pollUntil(async () => (await inflight(proxy.adminPort!, "lr-long", "lr")) === 0);
    assert.equal(await inflight(proxy.adminPort!, "lr-long", "lr"), 0, "the download is over");
  } finally {
    long.finishAll();
    quick.finishAll();
    await client.close();
    assert.equal(await proxy.stop(), 0);
    await long.backend.close();
    await quick.backend.close();
  }
});
