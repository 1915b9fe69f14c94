import assert from "node:assert/strict";
import { type GateCandidate, HandshakeFailed, passHandshakeGate } from "./handshake_gate.ts";
import type { SendStream } from "./transport.ts";

function sendStream(id: number): SendStream {
  return Object.assign(new WritableStream<Uint8Array>(), { id: BigInt(id) });
}

/** A connection whose stream opener answers with `open` and records the options. */
function candidate(open: () => Promise<SendStream>) {
  const calls: Array<{ waitUntilAvailable?: boolean } | undefined> = [];
  const conn: GateCandidate = {
    remoteAddr: { hostname: "127.0.0.1", port: 4433 },
    incomingBidirectionalStreams: new ReadableStream(),
    incomingUnidirectionalStreams: new ReadableStream(),
    closed: new Promise(() => {}),
    createUnidirectionalStream(options) {
      calls.push(options);
      return open();
    },
    close() {},
  };
  return { conn, calls };
}

Deno.test("handshake gate: a connection whose first stream cannot be opened is refused", async () => {
  // What Deno 2.9.6 does on a connection that died before its handshake.
  const { conn } = candidate(() => Promise.reject(new Error("timed out")));
  await assert.rejects(passHandshakeGate(conn), (err) => {
    assert.ok(err instanceof HandshakeFailed);
    assert.match(err.message, /not established: timed out/);
    return true;
  });
});

Deno.test("handshake gate: the stream it opened is the first one the HTTP/3 layer gets", async () => {
  let next = 3;
  const { conn, calls } = candidate(() => Promise.resolve(sendStream(next++ * 4 - 1)));
  const established = await passHandshakeGate(conn);
  assert.deepEqual(calls, [{ waitUntilAvailable: true }], "waits for the peer's stream credit");
  assert.equal((await established.createUnidirectionalStream()).id, 11n);
  assert.equal((await established.createUnidirectionalStream()).id, 15n);
  assert.equal(calls.length, 2);
  assert.equal(established.remoteAddr.port, 4433);
  assert.equal(established.incomingBidirectionalStreams, conn.incomingBidirectionalStreams);
});
