import assert from "node:assert/strict";
import {
  concatBytes,
  encodeFrame,
  encodeSettingsFrame,
  FrameDecoder,
  FrameType,
  H3Code,
  NEED_MORE,
  QpackDecoder,
  QpackEncoder,
} from "../h3/mod.ts";
import { type MemoryConnection, memoryConnectionPair } from "../quic/memory_transport.ts";
import { RequestBodyTooLarge } from "./body_io.ts";
import { H3Connection } from "./connection.ts";
import { errorResponse } from "./error_response.ts";
import type { IncomingRequest, OutgoingResponse, RequestHandler } from "./types.ts";
import { outcomeOfError, outcomeStatus } from "../upstream/outcome.ts";
import { abortedError, UpstreamError } from "../upstream/transport.ts";
import { RequestEnd, requestEnd, type RequestEndKind, requestEndMessage } from "./request_end.ts";

const KINDS: RequestEndKind[] = [
  "client_gone",
  "client_body_failed",
  "connection_closed",
  "shutdown",
  "write_stalled",
];

Deno.test("requestEnd: undefined until aborted; the RequestEnd's kind; any other reason is client_gone", () => {
  const live = new AbortController();
  assert.equal(requestEnd(live.signal), undefined);
  for (const kind of KINDS) {
    const abort = new AbortController();
    abort.abort(new RequestEnd(kind));
    assert.equal(requestEnd(abort.signal), kind);
  }
  // Deno.serve's request.signal (TCP fallback) aborts with its own reason.
  const served = new AbortController();
  served.abort();
  assert.equal(requestEnd(served.signal), "client_gone");
  assert.equal(requestEndMessage(served.signal), "client went away");
});

Deno.test("a request's end maps straight to its outcome: shutdown is 503, every other end the client's (499)", () => {
  const expected: Record<RequestEndKind, string> = {
    client_gone: "client_gone",
    client_body_failed: "client_gone",
    connection_closed: "client_gone",
    shutdown: "shutdown",
    write_stalled: "client_gone",
  };
  for (const kind of KINDS) {
    const abort = new AbortController();
    const cause = new Error("underlying");
    abort.abort(new RequestEnd(kind, { cause }));
    // What a transport rejects with when the signal aborts.
    const err = abortedError(abort.signal);
    assert.equal(err.kind, "aborted");
    assert.equal(err.message, requestEndMessage(abort.signal));
    assert.ok(err.cause instanceof RequestEnd && err.cause.cause === cause);
    // The request's end outranks whatever the transport said.
    for (const said of [err, new UpstreamError("timeout", "slow"), new Error("bug")]) {
      const outcome = outcomeOfError(said, requestEnd(abort.signal));
      assert.equal(outcome, expected[kind], kind);
    }
    assert.equal(
      outcomeStatus(outcomeOfError(err, requestEnd(abort.signal))),
      kind === "shutdown" ? 503 : 499,
    );
  }
  // Without an end, an `aborted` exchange means the transport was closed under it.
  assert.equal(outcomeOfError(new UpstreamError("aborted", "closed"), undefined), "shutdown");
});

// The server layer aborts a request with its end, wherever it ends (in-memory QUIC).
const GET: Array<[string, string]> = [
  [":method", "GET"],
  [":scheme", "https"],
  [":authority", "example.test"],
  [":path", "/x"],
];

function serve(handler: RequestHandler) {
  const { client, server } = memoryConnectionPair();
  const h3 = new H3Connection(server, {
    handler,
    maxFieldSectionSize: 16384,
    qpackMaxTableCapacity: 4096,
    qpackBlockedStreams: 8,
    maxRequestBodyBytes: 1000,
  });
  return { client, h3, served: h3.serve() };
}

async function send(client: MemoryConnection, fields: Array<[string, string]>, body?: Uint8Array) {
  const control = (await client.createUnidirectionalStream()).getWriter();
  await control.write(concatBytes(Uint8Array.of(0x00), encodeSettingsFrame(new Map())));
  const s = await client.createBidirectionalStream();
  const w = s.writable.getWriter();
  const parts = [encodeFrame(FrameType.HEADERS, new QpackEncoder().encodeSection(fields))];
  if (body !== undefined) parts.push(encodeFrame(FrameType.DATA, body));
  await w.write(concatBytes(...parts));
  await w.close();
  return s;
}

for (const [end, close] of [["connection_closed", undefined], ["shutdown", "shutdown"]] as const) {
  Deno.test(`request end: a connection closed ${close ? "by the drain's end" : "under a request"} ends it as ${end}`, async () => {
    const seen = Promise.withResolvers<IncomingRequest>();
    const { client, h3, served } = serve((req) => {
      seen.resolve(req);
      return new Promise<OutgoingResponse>((resolve) =>
        req.signal.addEventListener("abort", () => resolve(errorResponse(502, "x", "x")))
      );
    });
    await send(client, GET);
    const req = await seen.promise;
    assert.equal(requestEnd(req.signal), undefined);
    h3.close(H3Code.NO_ERROR, "bye", close);
    assert.equal(requestEnd(req.signal), end);
    client.close();
    await served;
  });
}

Deno.test("request end: a client body over the limit ends the request as client_body_failed; the client gets 413", async () => {
  let signal: AbortSignal | undefined;
  const { client, served } = serve(async (req) => {
    signal = req.signal;
    await new Response(req.body).arrayBuffer().catch(() => {});
    return errorResponse(502, "client_gone", "client went away");
  });
  const post: Array<[string, string]> = [[":method", "POST"], ...GET.slice(1)];
  const s = await send(client, post, new Uint8Array(1500));
  const reply = new Uint8Array(await new Response(s.readable).arrayBuffer());
  const frames = new FrameDecoder();
  frames.push(reply);
  const head = frames.next();
  assert.ok(head !== NEED_MORE && head.kind === "frame" && head.type === FrameType.HEADERS);
  const fields = new QpackDecoder({ maxTableCapacity: 0, maxBlockedStreams: 0 })
    .decodeSection(0, head.payload) as Array<[string, string]>;
  assert.deepEqual(fields[0], [":status", "413"]);
  assert.equal(requestEnd(signal!), "client_body_failed");
  assert.ok((signal!.reason as RequestEnd).cause instanceof RequestBodyTooLarge);
  client.close();
  await served;
});
