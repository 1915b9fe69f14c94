/**
 * Benchmarks of the HTTP/2 client codec's hot paths: HPACK on a typical
 * request and response, and one whole exchange through
 * {@link H2ClientConnection} (open, response head, 1 KiB body), plus 1 MiB
 * of DATA in 16 KiB frames.
 *
 *     deno bench proxy/h2/h2_bench.ts
 */
import { H2ClientConnection } from "./connection.ts";
import { HpackDecoder, HpackEncoder } from "./hpack.ts";
import { cat, frame, settings } from "./_test_util.ts";

const REQUEST: Array<[string, string]> = [
  [":method", "GET"],
  [":scheme", "http"],
  [":authority", "api.example.com"],
  [":path", "/vendor/v4/payments/charges/ch_1234567890?expand=card"],
  ["accept", "application/json"],
  ["user-agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36"],
  ["x-forwarded-for", "203.0.113.7"],
  ["x-forwarded-proto", "https"],
  ["authorization", "Bearer 0123456789abcdef0123456789abcdef"],
];

const RESPONSE: Array<[string, string]> = [
  [":status", "200"],
  ["content-type", "application/json"],
  ["content-length", "1024"],
  ["date", "Wed, 25 Nov 2026 01:00:00 GMT"],
  ["cache-control", "no-store"],
  ["x-request-id", "4bf92f3577b34da6a3ce929d0e0e4736"],
];

// A server's response block that indexes its fields (as nghttp2 and hyper do):
// literal with incremental indexing the first time, then indexed references.
function indexedBlock(first: boolean): Uint8Array {
  const out: number[] = [0x88];
  if (first) {
    for (const [n, v] of RESPONSE.slice(1)) {
      out.push(
        0x40,
        n.length,
        ...new TextEncoder().encode(n),
        v.length,
        ...new TextEncoder().encode(v),
      );
    }
  } else {
    for (let i = 0; i < RESPONSE.length - 1; i++) out.push(0x80 | (62 + RESPONSE.length - 2 - i));
  }
  return new Uint8Array(out);
}

const encoder = new HpackEncoder();
Deno.bench("HPACK encode a 9-field request (static names, Huffman)", () => {
  encoder.encode(REQUEST);
});

const decoder = new HpackDecoder();
decoder.decode(indexedBlock(true));
const steady = indexedBlock(false);
Deno.bench("HPACK decode a 6-field response (dynamic-table references)", () => {
  decoder.decode(steady, 65536);
});

const literal = new HpackEncoder({ huffman: true }).encode(RESPONSE);
Deno.bench("HPACK decode a 6-field response (Huffman literals)", () => {
  new HpackDecoder().decode(literal, 65536);
});

const body = new Uint8Array(1024).fill(0x61);
Deno.bench("exchange: open a stream, response head + 1 KiB body, credit", (b) => {
  const c = new H2ClientConnection();
  c.receive(settings());
  c.takeOutput();
  const first = c.openStream(REQUEST, { endStream: true });
  if (!("id" in first)) throw new Error("refused");
  c.receive(cat(frame(1, 4, first.id, indexedBlock(true)), frame(0, 1, first.id, body)));
  c.takeOutput();
  b.start();
  for (let i = 0; i < 100; i++) {
    const r = c.openStream(REQUEST, { endStream: true });
    if (!("id" in r)) throw new Error("refused");
    const ev = c.receive(cat(frame(1, 4, r.id, steady), frame(0, 1, r.id, body)));
    for (const e of ev) if (e.type === "data") c.consume(r.id, e.data.length);
    c.takeOutput();
  }
  b.end();
});

const chunk = frame(0, 0, 1, new Uint8Array(16384));
const mib = cat(...Array.from({ length: 64 }, () => chunk));
Deno.bench("receive 1 MiB of DATA in 16 KiB frames, 64 KiB reads", (b) => {
  const c = new H2ClientConnection({ streamWindow: 2 ** 30, connectionWindow: 2 ** 30 });
  c.receive(settings());
  c.openStream(REQUEST, { endStream: true });
  c.receive(frame(1, 4, 1, steady.length ? indexedBlock(true) : steady));
  c.takeOutput();
  b.start();
  for (let at = 0; at < mib.length; at += 65536) {
    for (const e of c.receive(mib.subarray(at, at + 65536))) {
      if (e.type === "data") c.consume(1, e.data.length);
    }
    c.takeOutput();
  }
  b.end();
});
