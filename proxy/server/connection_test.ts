/**
 * Connection-level rules of RFC 9114 on the in-memory transport: critical
 * streams, stream types, frame sequences, GOAWAY, and the request/response
 * mapping. (Real QUIC is covered by tests/proxy/.)
 */
import assert from "node:assert/strict";
import {
  concatBytes,
  encodeFrame,
  encodeFrameHeader,
  encodeSettingsFrame,
  FrameDecoder,
  FrameType,
  H3Code,
  NEED_MORE,
  QpackDecoder,
  QpackEncoder,
} from "../h3/mod.ts";
import { decodeSettings } from "../h3/settings.ts";
import { type MemoryConnection, memoryConnectionPair } from "../quic/memory_transport.ts";
import { H3Connection } from "./connection.ts";
import type { IncomingRequest, OutgoingResponse, RequestHandler } from "./types.ts";

const enc = new QpackEncoder();

const GET: Array<[string, string]> = [
  [":method", "GET"],
  [":scheme", "https"],
  [":authority", "example.test"],
  [":path", "/x"],
];

function setup(handler?: RequestHandler) {
  const { client, server } = memoryConnectionPair();
  const seen: IncomingRequest[] = [];
  const h3 = new H3Connection(server, {
    handler: handler ?? (async (req) => {
      seen.push(req);
      const body = req.body ? new Uint8Array(await new Response(req.body).arrayBuffer()) : null;
      return {
        status: 200,
        headers: [["x-len", String(body?.length ?? -1)], ["Connection", "close"]],
        body: new TextEncoder().encode("hello"),
      };
    }),
    maxFieldSectionSize: 16384,
    qpackMaxTableCapacity: 4096,
    qpackBlockedStreams: 8,
    maxRequestBodyBytes: 1000,
  });
  const served = h3.serve();
  return { client, h3, served, seen };
}

async function openControl(client: MemoryConnection, frames: Uint8Array[] = []) {
  const s = (await client.createUnidirectionalStream()).getWriter();
  await s.write(concatBytes(Uint8Array.of(0x00), encodeSettingsFrame(new Map()), ...frames));
  return s;
}

interface Reply {
  status: number;
  headers: Array<[string, string]>;
  body: string;
  trailers?: Array<[string, string]>;
}

async function exchange(client: MemoryConnection, bytes: Uint8Array, fin = true): Promise<Reply> {
  const s = await client.createBidirectionalStream();
  const w = s.writable.getWriter();
  await w.write(bytes);
  if (fin) await w.close();
  const dec = new QpackDecoder({ maxTableCapacity: 0, maxBlockedStreams: 0 });
  const frames = new FrameDecoder();
  const reply: Reply = { status: 0, headers: [], body: "" };
  for await (const chunk of s.readable) {
    frames.push(chunk);
    for (let ev = frames.next(); ev !== NEED_MORE; ev = frames.next()) {
      if (ev.kind === "data") reply.body += new TextDecoder().decode(ev.chunk);
      else if (ev.kind === "frame" && ev.type === FrameType.HEADERS) {
        const fields = dec.decodeSection(0, ev.payload) as Array<[string, string]>;
        if (reply.status === 0) {
          reply.status = Number(fields[0][1]);
          reply.headers = fields.slice(1);
        } else reply.trailers = fields;
      }
    }
  }
  return reply;
}

function request(fields: Array<[string, string]>, ...data: Uint8Array[]): Uint8Array {
  return concatBytes(
    encodeFrame(FrameType.HEADERS, enc.encodeSection(fields)),
    ...data.map((d) => encodeFrame(FrameType.DATA, d)),
  );
}

Deno.test("RFC 9114 §6.2.1: the server opens its control stream with SETTINGS first, and a QPACK decoder stream (no encoder stream: RFC 9204 §4.2)", async () => {
  const { client, served } = setup();
  const reader = client.incomingUnidirectionalStreams.getReader();
  const types: number[] = [];
  let settings = new Map<number, number>();
  for (let i = 0; i < 2; i++) {
    const { value } = await reader.read();
    const r = value!.getReader();
    const { value: first } = await r.read();
    types.push(first![0]);
    if (first![0] === 0) {
      const f = new FrameDecoder();
      f.push(first!.subarray(1));
      const ev = f.next();
      assert.ok(ev !== NEED_MORE && ev.kind === "frame" && ev.type === FrameType.SETTINGS);
      settings = decodeSettings(ev.payload);
    }
    r.releaseLock();
  }
  assert.deepEqual(types.sort(), [0, 3]);
  assert.equal(settings.get(0x1), 4096);
  assert.equal(settings.get(0x7), 8);
  assert.equal(settings.get(0x6), 16384);
  client.close();
  await served;
});

Deno.test("RFC 9114 §4.1: a GET gets its response; connection-specific fields are dropped", async () => {
  const { client, served, seen } = setup();
  await openControl(client);
  const reply = await exchange(client, request(GET));
  assert.equal(reply.status, 200);
  assert.equal(reply.body, "hello");
  assert.ok(!reply.headers.some(([n]) => n === "connection"));
  assert.equal(seen[0].head.path, "/x");
  assert.equal(seen[0].body, null);
  client.close();
  await served;
});

Deno.test("RFC 9114 §4.1: a POST body streams to the handler", async () => {
  const { client, served } = setup();
  await openControl(client);
  const post: Array<[string, string]> = [...GET, [":method", "POST"]].filter((f, i, a) =>
    f[0] !== ":method" || i === a.length - 1
  ) as Array<[string, string]>;
  post.unshift(post.pop()!);
  const reply = await exchange(
    client,
    request(post, new TextEncoder().encode("abc"), new TextEncoder().encode("de")),
  );
  assert.equal(reply.status, 200);
  assert.deepEqual(reply.headers.find(([n]) => n === "x-len"), ["x-len", "5"]);
  client.close();
  await served;
});

Deno.test("RFC 9114 §4.1.2: a content-length the body does not match is malformed → 400", async () => {
  const { client, served } = setup();
  await openControl(client);
  const post: Array<[string, string]> = [
    [":method", "POST"],
    [":scheme", "https"],
    [":authority", "a"],
    [":path", "/"],
    ["content-length", "10"],
  ];
  const reply = await exchange(client, request(post, new TextEncoder().encode("short")));
  assert.equal(reply.status, 400);
  client.close();
  await served;
});

Deno.test("RFC 9114 §4.2: an uppercase field name is malformed → 400", async () => {
  const { client, served } = setup();
  await openControl(client);
  const reply = await exchange(client, request([...GET, ["X-Bad", "1"]]));
  assert.equal(reply.status, 400);
  client.close();
  await served;
});

Deno.test("limits: a body over maxRequestBodyBytes → 413", async () => {
  const { client, served } = setup();
  await openControl(client);
  const post: Array<[string, string]> = [[":method", "POST"], ...GET.slice(1)];
  const reply = await exchange(client, request(post, new Uint8Array(1500)));
  assert.equal(reply.status, 413);
  client.close();
  await served;
});

Deno.test("a handler that throws → 500", async () => {
  const { client, served } = setup(() => Promise.reject(new Error("bug")));
  await openControl(client);
  const reply = await exchange(client, request(GET));
  assert.equal(reply.status, 500);
  client.close();
  await served;
});

Deno.test("docs/architecture.md §4: a response body that breaks ends with a malformed trailer section", async () => {
  const { client, served } = setup(() =>
    Promise.resolve<OutgoingResponse>({
      status: 200,
      headers: [],
      body: (() => {
        let pulls = 0;
        return new ReadableStream({
          pull(c) {
            if (pulls++ === 0) c.enqueue(new TextEncoder().encode("part"));
            else c.error(new Error("upstream reset"));
          },
        });
      })(),
    })
  );
  await openControl(client);
  const reply = await exchange(client, request(GET));
  assert.equal(reply.body, "part");
  assert.ok(reply.trailers?.some(([n]) => n.startsWith(":")));
  client.close();
  await served;
});

Deno.test("RFC 9114 §4.3.2: HEAD and 204 carry no body", async () => {
  const { client, served } = setup(() =>
    Promise.resolve({ status: 204, headers: [], body: new TextEncoder().encode("nope") })
  );
  await openControl(client);
  const reply = await exchange(client, request(GET));
  assert.equal(reply.status, 204);
  assert.equal(reply.body, "");
  client.close();
  await served;
});

async function expectClose(client: MemoryConnection, served: Promise<void>, code: number) {
  const info = await client.closed;
  assert.equal(
    info.closeCode,
    code,
    `closed with 0x${info.closeCode.toString(16)}: ${info.reason}`,
  );
  await served;
}

Deno.test("RFC 9114 §6.2.1: a second control stream is H3_STREAM_CREATION_ERROR", async () => {
  const { client, served } = setup();
  await openControl(client);
  await openControl(client);
  await expectClose(client, served, H3Code.STREAM_CREATION_ERROR);
});

Deno.test("RFC 9114 §6.2.2: a push stream from a client is H3_STREAM_CREATION_ERROR", async () => {
  const { client, served } = setup();
  await openControl(client);
  const s = (await client.createUnidirectionalStream()).getWriter();
  await s.write(Uint8Array.of(0x01, 0x00));
  await expectClose(client, served, H3Code.STREAM_CREATION_ERROR);
});

Deno.test("RFC 9114 §6.2.1: a control stream not starting with SETTINGS is H3_MISSING_SETTINGS", async () => {
  const { client, served } = setup();
  const s = (await client.createUnidirectionalStream()).getWriter();
  await s.write(concatBytes(Uint8Array.of(0x00), encodeFrame(FrameType.GOAWAY, Uint8Array.of(0))));
  await expectClose(client, served, H3Code.MISSING_SETTINGS);
});

Deno.test("RFC 9114 §6.2.1: closing the control stream is H3_CLOSED_CRITICAL_STREAM", async () => {
  const { client, served } = setup();
  const s = await openControl(client);
  await s.close();
  await expectClose(client, served, H3Code.CLOSED_CRITICAL_STREAM);
});

Deno.test("RFC 9114 §7.2.3: CANCEL_PUSH with no MAX_PUSH_ID sent is H3_ID_ERROR", async () => {
  const { client, served } = setup();
  await openControl(client, [encodeFrame(FrameType.CANCEL_PUSH, Uint8Array.of(5))]);
  await expectClose(client, served, H3Code.ID_ERROR);
});

Deno.test("RFC 9114 §7.2.3: CANCEL_PUSH of a push never promised is H3_ID_ERROR, even within MAX_PUSH_ID", async () => {
  const { client, served } = setup();
  await openControl(client, [
    encodeFrame(FrameType.MAX_PUSH_ID, Uint8Array.of(10)),
    encodeFrame(FrameType.CANCEL_PUSH, Uint8Array.of(2)),
  ]);
  await expectClose(client, served, H3Code.ID_ERROR);
});

Deno.test("RFC 9114 §6.2.3: unknown stream types are drained and ignored", async () => {
  const { client, served } = setup();
  await openControl(client);
  const s = (await client.createUnidirectionalStream()).getWriter();
  await s.write(Uint8Array.of(0x21, 1, 2, 3));
  await s.close();
  const reply = await exchange(client, request(GET));
  assert.equal(reply.status, 200);
  client.close();
  await served;
});

Deno.test("RFC 9114 §4.1: DATA before HEADERS is H3_FRAME_UNEXPECTED", async () => {
  const { client, served } = setup();
  await openControl(client);
  const s = await client.createBidirectionalStream();
  const w = s.writable.getWriter();
  await w.write(encodeFrame(FrameType.DATA, Uint8Array.of(1)));
  await expectClose(client, served, H3Code.FRAME_UNEXPECTED);
});

Deno.test("RFC 9114 §7.2.5: SETTINGS on a request stream is H3_FRAME_UNEXPECTED", async () => {
  const { client, served } = setup();
  await openControl(client);
  const s = await client.createBidirectionalStream();
  await s.writable.getWriter().write(encodeSettingsFrame(new Map()));
  await expectClose(client, served, H3Code.FRAME_UNEXPECTED);
});

Deno.test("RFC 9114 §7.1: a stream ending mid-frame is H3_FRAME_ERROR", async () => {
  const { client, served } = setup();
  await openControl(client);
  const s = await client.createBidirectionalStream();
  const w = s.writable.getWriter();
  await w.write(encodeFrameHeader(FrameType.HEADERS, 50));
  await w.close();
  await expectClose(client, served, H3Code.FRAME_ERROR);
});

/** Collects what the server writes on its QPACK decoder stream (after the stream type). */
function serverDecoderStream(client: MemoryConnection): { bytes: number[] } {
  const seen = { bytes: [] as number[] };
  (async () => {
    for await (const uni of client.incomingUnidirectionalStreams) {
      (async () => {
        let type = -1;
        for await (const chunk of uni) {
          const first = type === -1;
          if (first) type = chunk[0];
          if (type === 0x03) seen.bytes.push(...(first ? chunk.subarray(1) : chunk));
        }
      })().catch(() => {});
    }
  })().catch(() => {});
  return seen;
}

/** A HEADERS frame of `length` bytes whose section references the dynamic table (RIC 1). */
function oversizedHeaders(length: number): Uint8Array {
  const section = new Uint8Array(length).fill(0x5f);
  section.set([0x02, 0x80]); // Required Insert Count 1, Base 1
  return encodeFrame(FrameType.HEADERS, section);
}

Deno.test("#35.4: a HEADERS frame over the limit plus 1 KiB is that stream's 431, undecoded: Stream Cancellation, no Section Acknowledgment", async () => {
  const { client, served } = setup();
  const decoderStream = serverDecoderStream(client);
  await openControl(client);
  // 40 KB with maxFieldSectionSize 16384: skipped, never handed to QPACK (its
  // entry was never inserted: decoded, it would block).
  const big = await exchange(client, oversizedHeaders(40_000));
  assert.equal(big.status, 431);
  assert.match(big.body, /headers_too_large/);
  const next = await exchange(client, request(GET));
  assert.equal(next.status, 200, "the connection serves on");
  // Stream 0's references are released (Stream Cancellation 0b01 + id,
  // RFC 9204 §4.4.2); no Section Acknowledgment (0b1 + id) for a section
  // never decoded, and nothing else is owed.
  for (let i = 0; i < 50 && decoderStream.bytes.length === 0; i++) {
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.deepEqual(decoderStream.bytes, [0x40 | 0]);
  client.close();
  await served;
});

Deno.test("#35.4: oversized trailers are the request's 431", async () => {
  const { client, served } = setup();
  await openControl(client);
  const post: Array<[string, string]> = [[":method", "POST"], ...GET.slice(1)];
  const reply = await exchange(
    client,
    concatBytes(request(post, new TextEncoder().encode("abc")), oversizedHeaders(20_000)),
  );
  assert.equal(reply.status, 431);
  client.close();
  await served;
});

Deno.test("#35.4: a HEADERS frame over 16 × the limit (at least 1 MiB) is H3_EXCESSIVE_LOAD", async () => {
  const { client, served } = setup();
  await openControl(client);
  const s = await client.createBidirectionalStream();
  await s.writable.getWriter().write(encodeFrameHeader(FrameType.HEADERS, 1024 * 1024 + 1));
  await expectClose(client, served, H3Code.EXCESSIVE_LOAD);
});

Deno.test("RFC 9114 §5.2: goaway() sends GOAWAY, finishes in-flight requests, then closes", async () => {
  const gate = Promise.withResolvers<void>();
  const { client, h3, served } = setup(async () => {
    await gate.promise;
    return { status: 200, headers: [], body: new TextEncoder().encode("late") };
  });
  await openControl(client);
  // Read the server's control stream for the GOAWAY.
  const uni = client.incomingUnidirectionalStreams.getReader();
  const goaway = (async () => {
    for (;;) {
      const { value } = await uni.read();
      const frames = new FrameDecoder();
      for await (const chunk of value!) {
        const data = chunk[0] === 0 && frames.framesStarted === 0 ? chunk.subarray(1) : chunk;
        frames.push(data);
        for (let ev = frames.next(); ev !== NEED_MORE; ev = frames.next()) {
          if (ev.kind === "frame" && ev.type === FrameType.GOAWAY) return ev.payload[0];
        }
        if (chunk[0] !== 0 && frames.framesStarted === 0) break;
      }
    }
  })();
  const inflight = exchange(client, request(GET));
  await new Promise((r) => setTimeout(r, 20));
  const closing = h3.goaway();
  assert.equal(await goaway, 4, "GOAWAY carries the next stream id (0 + 4)");
  gate.resolve();
  const reply = await inflight;
  assert.equal(reply.body, "late");
  client.close(); // the peer closes after its last response
  await closing;
  await served;
});

Deno.test("per-connection share: past maxBackendStreamsPerConnection a request waits for the connection's own to finish, and is refused when none does in time", async () => {
  const { client, server } = memoryConnectionPair();
  const release = Promise.withResolvers<void>();
  const claims: Array<[string, boolean]> = [];
  const h3 = new H3Connection(server, {
    handler: async (req) => {
      const path = req.head.path ?? "";
      // /late waits long enough for /hold to finish; /short gives up first.
      const ok = await (req.claimBackendStream?.("api", path === "/short" ? 30 : 5_000) ?? true);
      claims.push([path, ok]);
      if (!ok) return { status: 503, headers: [], body: null };
      if (path === "/hold") await release.promise;
      return { status: 200, headers: [], body: null };
    },
    maxFieldSectionSize: 16384,
    qpackMaxTableCapacity: 0,
    qpackBlockedStreams: 0,
    maxRequestBodyBytes: 1000,
    maxBackendStreamsPerConnection: 1,
  });
  const served = h3.serve();
  await openControl(client);
  const path = (p: string) => GET.map(([n, v]) => [n, n === ":path" ? p : v] as [string, string]);
  const held = exchange(client, request(path("/hold")));
  while (claims.length === 0 && h3.activeStreams === 0) await new Promise((r) => setTimeout(r, 5));
  await new Promise((r) => setTimeout(r, 20));
  assert.equal((await exchange(client, request(path("/short")))).status, 503);
  const late = exchange(client, request(path("/late")));
  await new Promise((r) => setTimeout(r, 20));
  release.resolve();
  assert.equal((await held).status, 200);
  assert.equal((await late).status, 200, "the waiting request got the freed slot");
  assert.deepEqual(
    new Map(claims),
    new Map([["/hold", true], ["/short", false], ["/late", true]]),
  );
  client.close();
  await served;
});
