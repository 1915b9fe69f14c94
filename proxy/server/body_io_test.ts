import assert from "node:assert/strict";
import { FrameDecoder, type FrameEvent, NEED_MORE } from "../h3/mod.ts";
import v8 from "node:v8";
import vm from "node:vm";
import { pipeBody, ResponseIdleTimeout } from "./body_io.ts";

/** A writer that keeps a copy of every write (the QUIC stream copies too). */
function recordingWriter(): {
  writer: WritableStreamDefaultWriter<Uint8Array>;
  writes: Uint8Array[];
} {
  const writes: Uint8Array[] = [];
  const ws = new WritableStream<Uint8Array>({ write: (c) => void writes.push(c.slice()) });
  return { writer: ws.getWriter(), writes };
}

/** The DATA payloads of the written frames, in order. */
function payloads(writes: Uint8Array[]): Uint8Array[] {
  const dec = new FrameDecoder();
  const out: Uint8Array[] = [];
  for (const w of writes) {
    dec.push(w);
    for (let ev = dec.next(); ev !== NEED_MORE; ev = dec.next()) {
      const e = ev as FrameEvent;
      if (e.kind === "data") out.push(e.chunk.slice());
    }
  }
  return out;
}

function chunks(list: Uint8Array[]): ReadableStream<Uint8Array> {
  let i = 0;
  return new ReadableStream({
    pull(c) {
      if (i < list.length) c.enqueue(list[i++]);
      else c.close();
    },
  });
}

for (const byteStream of [false, true]) {
  Deno.test(`pipeBody (${byteStream ? "byte" : "default"} stream): DATA frames carry the body exactly; bytes counts payload only`, async () => {
    const body = new Uint8Array(200_000);
    for (let i = 0; i < body.length; i++) body[i] = (i * 7) & 0xff;
    // Small, empty and larger-than-the-buffer chunks.
    const parts = [
      body.subarray(0, 10),
      body.subarray(10, 10),
      body.subarray(10, 150_000),
      body.subarray(150_000),
    ];
    const source = byteStream
      ? new ReadableStream({
        type: "bytes",
        start(c) {
          for (const p of parts) if (p.length > 0) c.enqueue(p.slice());
          c.close();
        },
      })
      : chunks(parts.map((p) => p.slice()));
    const { writer, writes } = recordingWriter();
    const outcome = await pipeBody(writer, source, new AbortController().signal, 5_000);
    assert.deepEqual(outcome, { kind: "complete", bytes: body.length });
    const got = payloads(writes);
    const joined = new Uint8Array(got.reduce((n, c) => n + c.length, 0));
    let at = 0;
    for (const c of got) {
      joined.set(c, at);
      at += c.length;
    }
    assert.deepEqual(joined, body);
    // No frame exceeds the buffer, and no frame is empty.
    assert.ok(
      got.every((c) => c.length > 0 && c.length <= 64 * 1024),
      got.map((c) => c.length).join(),
    );
  });
}

Deno.test("pipeBody: a body that breaks mid-way is reported broken with the bytes sent so far", async () => {
  let n = 0;
  const source = new ReadableStream<Uint8Array>({
    pull(c) {
      if (n++ === 0) c.enqueue(new Uint8Array(1000));
      else c.error(new Error("backend reset"));
    },
  });
  const { writer } = recordingWriter();
  const outcome = await pipeBody(writer, source, new AbortController().signal, 5_000);
  assert.equal(outcome.kind, "broken");
  assert.equal(outcome.bytes, 1000);
});

Deno.test("pipeBody: a client that takes no write for idleMs ends it as stalled and cancels the source (backend stream reset)", async () => {
  let cancelled: unknown = null;
  let pulled = 0;
  const source = new ReadableStream<Uint8Array>({
    pull(c) {
      pulled++;
      c.enqueue(new Uint8Array(1000));
    },
    cancel(reason) {
      cancelled = reason;
    },
  }, { highWaterMark: 0 });
  // The first write is taken; every later one waits forever (no flow-control credit).
  let writes = 0;
  const ws = new WritableStream<Uint8Array>({
    write: () => writes++ === 0 ? Promise.resolve() : new Promise<void>(() => {}),
  }, { highWaterMark: 1 });
  const waits: string[] = [];
  const outcome = await pipeBody(ws.getWriter(), source, new AbortController().signal, 100, {
    pause: () => waits.push("pause"),
    resume: () => waits.push("resume"),
  });
  assert.equal(outcome.kind, "stalled");
  assert.equal(outcome.bytes, 1000);
  assert.ok(cancelled instanceof Error && /accepted no response data/.test(cancelled.message));
  assert.ok(pulled <= 3, `pulled ${pulled} chunks from the source for a stalled client`);
  // Waiting on the source is reported around each read, never during a write.
  assert.deepEqual(waits.slice(0, 4), ["resume", "pause", "resume", "pause"]);
});

Deno.test("pipeBody: a source that sends nothing for idleMs ends it broken (ResponseIdleTimeout) and is cancelled", async () => {
  let cancelled: unknown = null;
  let n = 0;
  const source = new ReadableStream<Uint8Array>({
    pull: (c) => n++ === 0 ? c.enqueue(new Uint8Array(500)) : new Promise<void>(() => {}),
    cancel: (reason) => void (cancelled = reason),
  }, { highWaterMark: 0 });
  const { writer } = recordingWriter();
  const outcome = await pipeBody(writer, source, new AbortController().signal, 100);
  assert.equal(outcome.kind, "broken");
  assert.equal(outcome.bytes, 500);
  assert.ok(outcome.kind === "broken" && outcome.error instanceof ResponseIdleTimeout);
  assert.ok(cancelled instanceof ResponseIdleTimeout, `cancelled with ${cancelled}`);
});

/** This isolate's JS heap after a full GC (MiB). */
const heapMiB: () => number = (() => {
  v8.setFlagsFromString("--expose-gc");
  const gc: () => void = vm.runInNewContext("gc");
  return () => {
    gc();
    return Deno.memoryUsage().heapUsed / 2 ** 20;
  };
})();

Deno.test("pipeBody: a long body keeps nothing per frame (the stall bound holds one deadline per body)", async () => {
  const frames = 30_000;
  let n = 0;
  const source = new ReadableStream({
    type: "bytes",
    pull(c) {
      const req = c.byobRequest!;
      if (n++ === frames) {
        c.close();
        return req.respond(0);
      }
      req.view!.fill(7, 0, 10);
      req.respond(10);
    },
  });
  const ws = new WritableStream<Uint8Array>({ write() {} });
  const signal = new AbortController().signal;
  const before = heapMiB();
  let grew = 0;
  const pipe = pipeBody(ws.getWriter(), source, signal, 60_000);
  // Measured while the pipe is still going: what it holds per frame so far.
  while (n < frames * 0.9) await new Promise((r) => setTimeout(r, 5));
  grew = heapMiB() - before;
  assert.deepEqual(await pipe, { kind: "complete", bytes: frames * 10 });
  assert.ok(grew < 1, `the heap grew by ${grew.toFixed(2)} MiB over ${n} frames`);
});
