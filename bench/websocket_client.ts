/**
 * WebSocket echo latency for `bench/run.ts`: one WebSocket to `/ws` sends a
 * small text message, waits for its echo, and records the round trip,
 * `--n` times after `--warmup` unmeasured ones. `--transport h3` opens it
 * over HTTP/3 (RFC 9220, the project's own client), `tcp` over TLS as
 * HTTP/1.1 `Upgrade: websocket` (a browser's way, and the TCP fallback's),
 * with the same framing code for both, whatever server is measured.
 *
 *     deno run -A bench/websocket_client.ts --transport h3|tcp --port P --ca ca.pem \
 *       [--n 1000] [--warmup 50]
 *
 * Prints one JSON line: `{"n", "p50", "p99", "max", "errors"}` (milliseconds).
 *
 * @module
 */
// deno-lint-ignore-file no-console

import { parseArgs } from "node:util";
import { H3TestClient } from "../examples/h3_client.ts";
import { quantile } from "../shared/stats.ts";
import { wsClose, WsFrameReader, wsText } from "../tests/support/websocket_frames.ts";
import { readTarget, TARGET_OPTIONS } from "./target.ts";

/** One side of an open WebSocket: write bytes, read bytes, end. */
interface Socket {
  send(bytes: Uint8Array): Promise<unknown>;
  reader: ReadableStreamDefaultReader<Uint8Array>;
  close(): Promise<void>;
}

const enc = new TextEncoder();

/** A WebSocket over HTTP/3 (RFC 9220). */
async function overH3(host: string, port: number, caPem: string): Promise<Socket> {
  const client = await H3TestClient.connect(port, caPem, host);
  const ws = await client.connectWebSocket({ authority: `localhost:${port}`, path: "/ws" });
  if (ws.status !== 200) throw new Error(`HTTP/3 WebSocket refused: ${ws.status}`);
  return {
    send: (b) => ws.send(b),
    reader: ws.readable.getReader(),
    close: async () => {
      await ws.end().catch(() => {});
      await client.close();
    },
  };
}

/** A WebSocket over TLS + HTTP/1.1 `Upgrade` (the TCP fallback's, a browser's). */
async function overTcp(host: string, port: number, caPem: string): Promise<Socket> {
  const tcp = await Deno.connect({ hostname: host, port });
  const conn = await Deno.startTls(tcp, {
    hostname: "localhost",
    caCerts: [caPem],
    alpnProtocols: ["http/1.1"],
  });
  await conn.write(enc.encode(
    `GET /ws HTTP/1.1\r\nHost: localhost:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
  ));
  const raw = conn.readable.getReader();
  // The answer's head: whatever follows it is handed on first.
  let pending: Uint8Array = new Uint8Array(0);
  for (;;) {
    const r = await raw.read();
    if (r.done) throw new Error("closed before the answer");
    pending = new Uint8Array([...pending, ...r.value]);
    const end = headEnd(pending);
    if (end < 0) continue;
    const head = new TextDecoder().decode(pending.subarray(0, end));
    if (!head.startsWith("HTTP/1.1 101")) throw new Error(`not switched: ${head.split("\r\n")[0]}`);
    pending = pending.slice(end);
    break;
  }
  const first = pending;
  const readable = new ReadableStream<Uint8Array>({
    start: (c) => void (first.length > 0 && c.enqueue(first)),
    pull: async (c) => {
      const r = await raw.read();
      if (r.done) c.close();
      else c.enqueue(r.value);
    },
  });
  return {
    send: (b) => conn.write(b),
    reader: readable.getReader(),
    close: async () => {
      await conn.write(wsClose(1000)).catch(() => {});
      try {
        conn.close();
      } catch { /* closed */ }
    },
  };
}

function headEnd(b: Uint8Array): number {
  for (let i = 0; i + 3 < b.length; i++) {
    if (b[i] === 13 && b[i + 1] === 10 && b[i + 2] === 13 && b[i + 3] === 10) return i + 4;
  }
  return -1;
}

/** Sends one message and waits for its echo. */
async function roundTrip(s: Socket, frames: WsFrameReader, i: number): Promise<void> {
  await s.send(wsText(`echo ${i}`));
  for (;;) {
    const r = await s.reader.read();
    if (r.done) throw new Error("the WebSocket ended");
    if (frames.push(r.value).length > 0) return;
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      ...TARGET_OPTIONS,
      transport: { type: "string", default: "h3" },
      n: { type: "string", default: "1000" },
      warmup: { type: "string", default: "50" },
    },
  });
  const { host, port, caPem } = await readTarget(values);
  const n = Number(values.n);
  const warmup = Number(values.warmup);
  const socket = values.transport === "tcp"
    ? await overTcp(host, port, caPem)
    : await overH3(host, port, caPem);
  const frames = new WsFrameReader();
  const times: number[] = [];
  let errors = 0;
  for (let i = 0; i < warmup + n; i++) {
    const t0 = performance.now();
    try {
      await roundTrip(socket, frames, i);
    } catch {
      errors++;
      break;
    }
    if (i >= warmup) times.push(performance.now() - t0);
  }
  await socket.close();
  times.sort((a, b) => a - b);
  const ms = (q: number) => Number(quantile(times, q).toFixed(3));
  console.log(JSON.stringify({
    n: times.length,
    p50: ms(0.5),
    p99: ms(0.99),
    max: Number((times.at(-1) ?? NaN).toFixed(3)),
    errors,
  }));
}
