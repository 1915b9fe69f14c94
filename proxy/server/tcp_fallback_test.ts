import assert from "node:assert/strict";
import { tcpFallbackHandler } from "./tcp_fallback.ts";
import type { IncomingRequest, OutgoingResponse } from "./types.ts";

const INFO = {
  remoteAddr: { transport: "tcp", hostname: "192.0.2.7", port: 50123 },
  completed: Promise.resolve(),
} as unknown as Deno.ServeHandlerInfo;

/** A handler that records what it was given and answers `res`. */
function recording(res: Partial<OutgoingResponse> = {}) {
  const seen: IncomingRequest[] = [];
  const handler = (req: IncomingRequest): Promise<OutgoingResponse> => {
    seen.push(req);
    return Promise.resolve({ status: 200, headers: [], body: null, ...res });
  };
  return { seen, handler };
}

Deno.test("tcp fallback: the request reaches the handler as an HTTP/3-shaped head", async () => {
  const { seen, handler } = recording();
  const serve = tcpFallbackHandler(handler, 9889);
  const req = new Request("https://edge.example:9889/items?page=2", {
    method: "POST",
    headers: { "x-user": "u1", "content-length": "3", "content-type": "text/plain" },
    body: "abc",
  });
  await serve(req, INFO);
  assert.equal(seen.length, 1);
  const { head, remote, body } = seen[0];
  assert.equal(head.method, "POST");
  assert.equal(head.scheme, "https");
  assert.equal(head.authority, "edge.example:9889");
  assert.equal(head.path, "/items?page=2");
  assert.equal(head.contentLength, 3);
  assert.ok(head.fields.some(([n, v]) => n === "x-user" && v === "u1"));
  assert.deepEqual(remote, { hostname: "192.0.2.7", port: 50123 });
  assert.equal(await new Response(body).text(), "abc");
});

Deno.test("tcp fallback: Host wins over the URL; a malformed Content-Length is not trusted", async () => {
  const { seen, handler } = recording();
  const serve = tcpFallbackHandler(handler, 443);
  await serve(
    new Request("https://127.0.0.1:443/", {
      headers: { host: "api.example", "content-length": "1e3" },
    }),
    INFO,
  );
  assert.equal(seen[0].head.authority, "api.example");
  assert.equal(seen[0].head.contentLength, undefined);
  assert.equal(seen[0].head.path, "/");
});

Deno.test("RFC 7838: every response advertises HTTP/3 with alt-svc on the same port", async () => {
  const { handler } = recording({
    status: 201,
    headers: [["x-a", "1"], ["x-a", "2"], ["alt-svc", "clear"]],
    body: new TextEncoder().encode("made"),
  });
  const res = await tcpFallbackHandler(handler, 8443)(new Request("https://e.example/"), INFO);
  assert.equal(res.status, 201);
  assert.equal(res.headers.get("alt-svc"), 'h3=":8443"; ma=86400');
  assert.equal(res.headers.get("x-a"), "1, 2");
  assert.equal(await res.text(), "made");
});

Deno.test("tcp fallback: a streamed body is passed through as a stream", async () => {
  const { handler } = recording({
    body: ReadableStream.from([new TextEncoder().encode("a"), new TextEncoder().encode("b")]),
  });
  const res = await tcpFallbackHandler(handler, 1)(new Request("https://e.example/"), INFO);
  assert.equal(await res.text(), "ab");
});

for (
  const [what, method, status] of [
    ["HEAD", "HEAD", 200],
    ["204 No Content", "GET", 204],
    ["304 Not Modified", "GET", 304],
  ] as const
) {
  Deno.test(`RFC 9110 §6.4.1: ${what} is sent without a body; a stream body is cancelled`, async () => {
    let cancelled = false;
    const body = new ReadableStream<Uint8Array>({
      pull: (c) => c.enqueue(new Uint8Array(8)),
      cancel: () => {
        cancelled = true;
      },
    });
    const { handler } = recording({ status, body });
    const res = await tcpFallbackHandler(handler, 1)(
      new Request("https://e.example/", { method }),
      INFO,
    );
    assert.equal(res.status, status);
    assert.equal(res.body, null);
    assert.ok(cancelled);
  });
}

Deno.test("tcp fallback: one connection's requests in flight to a pool are capped; the claim is freed when the response is done", async () => {
  const claims: boolean[] = [];
  const handler = (req: IncomingRequest): Promise<OutgoingResponse> => {
    const claim = req.claimBackendStream?.("api", 20) ?? true;
    return Promise.resolve(claim).then((ok) => {
      claims.push(ok);
      return { status: 200, headers: [], body: null };
    });
  };
  const serve = tcpFallbackHandler(handler, 443, { maxBackendStreamsPerConnection: 1 });
  const first = Promise.withResolvers<void>();
  const conn = (completed: Promise<void>, port = 50123) =>
    ({
      remoteAddr: { transport: "tcp", hostname: "192.0.2.7", port },
      completed,
    }) as unknown as Deno.ServeHandlerInfo;
  await serve(new Request("https://a.test/1"), conn(first.promise));
  // Waits 20 ms for the first to finish, which it does not: refused.
  await serve(new Request("https://a.test/2"), conn(new Promise(() => {})));
  await serve(new Request("https://a.test/3"), conn(Promise.resolve(), 50124));
  first.resolve();
  await new Promise((r) => setTimeout(r, 0));
  await serve(new Request("https://a.test/4"), conn(Promise.resolve()));
  assert.deepEqual(claims, [true, false, true, true]);
});

Deno.test("tcp fallback: a response body the client takes none of for writeStallMs is cut and its source cancelled", async () => {
  let cancelled: unknown = null;
  const source = new ReadableStream<Uint8Array>({
    pull: (c) => c.enqueue(new Uint8Array(10)),
    cancel: (reason) => void (cancelled = reason),
  }, { highWaterMark: 0 });
  const serve = tcpFallbackHandler(
    () => Promise.resolve({ status: 200, headers: [], body: source }),
    443,
    { writeStallMs: 50 },
  );
  const res = await serve(new Request("https://a.test/big"), INFO);
  const reader = res.body!.getReader();
  assert.equal((await reader.read()).value?.length, 10);
  // The client stops reading here.
  for (let i = 0; i < 100 && cancelled === null; i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(cancelled instanceof Error && /accepted no response data/.test(cancelled.message));
  await assert.rejects(reader.read());
});
