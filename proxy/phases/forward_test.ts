import assert from "node:assert/strict";
import { ProxyMetrics } from "../metrics/metrics.ts";
import { createRequestSink } from "../request_log.ts";
import type { IncomingRequest } from "../server/types.ts";
import { createForwarder } from "./forward.ts";
import { buildPools, PoolState } from "./pool.ts";
import {
  UpstreamError,
  type UpstreamFailureKind,
  type UpstreamRequest,
  type UpstreamResponse,
  type UpstreamTransport,
} from "../upstream/transport.ts";
import { ConfigSchema } from "../config/schema.ts";
import { maySendAgain, OUTCOMES, type UpstreamOutcome } from "../upstream/outcome.ts";

/** A transport that answers each exchange from a script: a failure kind, or a status. */
type Step = UpstreamFailureKind | number | UpstreamResponse | Error;

function scripted(script: Step[]) {
  const seen: UpstreamRequest[] = [];
  const transport: UpstreamTransport = {
    exchange(req): Promise<UpstreamResponse> {
      seen.push(req);
      const next = script.shift() ?? 200;
      if (typeof next === "number") {
        return Promise.resolve({ status: next, headers: [], body: new Uint8Array([0x6f, 0x6b]) });
      }
      if (next instanceof Error) return Promise.reject(next);
      if (typeof next === "object") return Promise.resolve(next);
      if (next === "aborted") abortClient?.abort();
      return Promise.reject(new UpstreamError(next, `scripted ${next}`));
    },
    release() {},
    close: () => Promise.resolve(),
  };
  return { transport, seen };
}

function incoming(
  method: string,
  body: Uint8Array<ArrayBuffer> | null = null,
  signal: AbortSignal = new AbortController().signal,
): IncomingRequest {
  return {
    head: {
      method,
      scheme: "https",
      authority: "a.test",
      path: "/x",
      fields: body === null ? [] : [["content-length", String(body.length)]],
      contentLength: body?.length,
    },
    body: body === null ? null : new Blob([body]).stream(),
    remote: { hostname: "127.0.0.1", port: 5000 },
    signal,
  };
}

/** Pool "p" over b1 as the phases see it, its configuration given `keys` besides. */
function poolWith(keys: Record<string, unknown>) {
  return buildPools(
    ConfigSchema.parse({
      version: 1,
      listen: { protocol: "http3", port: 9889, tls: { cert: "c.pem", key: "k.pem" } },
      upstream: {
        p: {
          route: { path_prefix: "/" },
          ...keys,
          backends: [{ id: "b1", address: "127.0.0.1:1" }],
        },
      },
    }),
    () => new PoolState(),
  ).get("p")!;
}
const pool = poolWith({ request_timeout_ms: 1000 });
const one = [{ id: "b1", address: "127.0.0.1:1", weight: 1 }];
const two = [...one, { id: "b2", address: "127.0.0.1:2", weight: 1 }];

/** When set, a scripted `aborted` step aborts this (the client leaving) first. */
let abortClient: AbortController | undefined;

function forwarder(script: Step[]) {
  const { transport, seen } = scripted(script);
  const reports: string[] = [];
  const metrics = new ProxyMetrics();
  const forward = createForwarder({
    transport,
    health: { isAvailable: () => true, report: (id, o) => void reports.push(`${id}:${o}`) },
    metrics,
  });
  return { forward, seen, reports, metrics };
}

Deno.test("forward: a connect failure moves on to the next candidate; with none left it is 502", async () => {
  const a = forwarder(["connect", 200]);
  assert.equal(
    (await a.forward(incoming("POST", new Uint8Array(3)), pool, two, "/x", "a.test")).status,
    200,
  );
  assert.deepEqual(a.seen.map((r) => r.address), ["127.0.0.1:1", "127.0.0.1:2"]);
  assert.deepEqual(a.reports, ["b1:connect", "b2:success"]);
  const b = forwarder(["connect"]);
  assert.equal((await b.forward(incoming("GET"), pool, one, "/x", "a.test")).status, 502);
  assert.equal(b.seen.length, 1);
});

Deno.test("forward: a reset before any answer is retried once for an idempotent method, on the same backend when it is the only one", async () => {
  for (const method of ["GET", "HEAD", "OPTIONS", "PUT", "DELETE"]) {
    const f = forwarder(["reset", 200]);
    const body = method === "PUT" ? new Uint8Array(10) : null;
    const res = await f.forward(incoming(method, body), pool, one, "/x", "a.test");
    assert.equal(res.status, 200, method);
    assert.deepEqual(f.seen.map((r) => r.address), ["127.0.0.1:1", "127.0.0.1:1"], method);
    assert.deepEqual(f.reports, ["b1:reset", "b1:success"], method);
  }
  // With two candidates the retry goes to the next one.
  const g = forwarder(["reset", 200]);
  assert.equal((await g.forward(incoming("GET"), pool, two, "/x", "a.test")).status, 200);
  assert.deepEqual(g.seen.map((r) => r.address), ["127.0.0.1:1", "127.0.0.1:2"]);
});

Deno.test("forward: a reset is not retried for POST, nor a second time", async () => {
  const post = forwarder(["reset", 200]);
  assert.equal(
    (await post.forward(incoming("POST", new Uint8Array(3)), pool, two, "/x", "a.test")).status,
    502,
  );
  assert.equal(post.seen.length, 1);
  const twice = forwarder(["reset", "reset", 200]);
  assert.equal((await twice.forward(incoming("GET"), pool, two, "/x", "a.test")).status, 502);
  assert.equal(twice.seen.length, 2);
  // A timeout is never retried.
  const f = forwarder(["timeout", 200]);
  const res = await f.forward(incoming("GET"), pool, two, "/x", "a.test");
  assert.equal(res.status, 503);
  assert.equal(f.seen.length, 1);
});

/**
 * One row per outcome of `outcome.ts`: the transport's script, then what the
 * forwarder must make of it: status, passive-health reports, attempts, b1's
 * counters [requests_total, backend_errors, backend_timeouts] and the global
 * ones [requests_total, requests_failure]; `clientLeaves`: the client aborts
 * when the script says `aborted`.
 */
type Row = [
  name: string,
  script: Step[],
  status: number,
  reports: string[],
  attempts: number,
  b1: [number, number, number],
  global: [number, number],
  clientLeaves?: boolean,
];

const ROWS: Row[] = [
  ["answered", [204], 204, ["b1:success"], 1, [1, 0, 0], [1, 0]],
  ["answered_5xx", [503], 503, ["b1:5xx"], 1, [1, 0, 0], [1, 1]],
  ["connect", ["connect"], 502, ["b1:connect"], 1, [1, 1, 0], [1, 1]],
  // An idempotent request is retried once after a reset or protocol error: both attempts count.
  ["reset", ["reset", "reset"], 502, ["b1:reset", "b1:reset"], 2, [1, 2, 0], [1, 1]],
  ["protocol", ["protocol", "protocol"], 502, ["b1:protocol", "b1:protocol"], 2, [1, 2, 0], [1, 1]],
  [
    "invalid_response (status 600)",
    [{ status: 600, headers: [], body: null }],
    502,
    ["b1:invalid_response"],
    1,
    [1, 1, 0],
    [1, 1],
  ],
  // A timeout counts against the backend in passive health (it was never reported before).
  ["timeout", ["timeout"], 503, ["b1:timeout"], 1, [1, 0, 1], [1, 1]],
  // A client that left is logged as 499 and never counted against the backend: the status is
  // the one sent (the sink counts and logs 499), b1's requests_total counts it (the access log
  // names b1), its backend_errors never do.
  ["client_gone", ["aborted"], 502, [], 1, [1, 0, 0], [1, 1], true],
  ["local", ["local"], 400, [], 1, [0, 0, 0], [1, 1]],
  ["internal", [new TypeError("bug")], 500, [], 1, [0, 0, 0], [1, 1]],
  ["shutdown (aborted, client still there)", ["aborted"], 503, [], 1, [0, 0, 0], [1, 1]],
];

for (const [name, script, status, reports, attempts, b1, global, clientLeaves] of ROWS) {
  Deno.test(`forward outcome ${name}: ${status}, passive health [${reports}]`, async () => {
    const f = forwarder([...script]);
    const client = new AbortController();
    abortClient = clientLeaves ? client : undefined;
    try {
      const res = await f.forward(incoming("GET", null, client.signal), pool, one, "/x", "a.test");
      assert.equal(res.status, status);
      assert.deepEqual(f.reports, reports);
      assert.equal(f.seen.length, attempts);
      // The request sink counts what the response describes.
      const logged: number[] = [];
      const sink = createRequestSink(f.metrics, {
        log: (r) => void logged.push(r.status),
        flush() {},
        close() {},
      });
      sink.finished({
        listener: "h3",
        streamId: 0,
        remote: { hostname: "127.0.0.1", port: 5000 },
        method: "GET",
        authority: "a.test",
        path: "/x",
        status: res.status,
        bytes: 0,
        durationMs: 1,
        backend: res.backend,
        failure: res.failure,
        outcome: clientLeaves ? "aborted" : "complete",
      });
      assert.deepEqual(logged, [clientLeaves ? 499 : status], "access log status");
      const b = f.metrics.backends().get("b1");
      assert.deepEqual(
        [
          b?.get("requests_total") ?? 0n,
          b?.get("backend_errors") ?? 0n,
          b?.get("backend_timeouts") ?? 0n,
        ],
        b1.map(BigInt),
      );
      assert.deepEqual(
        [f.metrics.global.get("requests_total"), f.metrics.global.get("requests_failure")],
        global.map(BigInt),
      );
    } finally {
      abortClient = undefined;
    }
  });
}

Deno.test("forward: a protocol error is not retried for POST; a reset GET is retried on the next candidate", async () => {
  const post = forwarder(["protocol", 200]);
  assert.equal(
    (await post.forward(incoming("POST", new Uint8Array(3)), pool, two, "/x", "a.test")).status,
    502,
  );
  assert.equal(post.seen.length, 1);
  const w = forwarder(["reset", 200]);
  assert.equal((await w.forward(incoming("GET"), pool, two, "/x", "a.test")).status, 200);
  assert.deepEqual(w.seen.map((r) => r.address), ["127.0.0.1:1", "127.0.0.1:2"]);
  assert.deepEqual(w.reports, ["b1:reset", "b2:success"]);
});

Deno.test("forward: RFC 9113 §8.2-8.3, RFC 9110 §15: an invalid backend response head is 502, its body cancelled", async () => {
  const cases: Array<[number, Array<[string, string]>]> = [
    [99, []],
    [600, []],
    [101, []],
    [100, []],
    [103, []],
    [200, [["connection", "close"]]],
    [200, [["transfer-encoding", "chunked"]]],
    [200, [["keep-alive", "timeout=5"]]],
    [200, [["upgrade", "h2c"]]],
    [200, [["proxy-connection", "close"]]],
    [200, [["X-Upper", "1"]]],
    [200, [["x-split", "a\r\nset-cookie: x=1"]]],
    [200, [["x evil", "1"]]],
    [200, [[":path", "/x"]]],
    [200, [["content-length", "2"], ["content-length", "3"]]],
  ];
  for (const [status, headers] of cases) {
    let cancelled = false;
    const body = new ReadableStream<Uint8Array>({ cancel: () => void (cancelled = true) });
    const f = forwarder([{ status, headers, body }]);
    const res = await f.forward(incoming("GET"), pool, one, "/x", "a.test");
    assert.equal(res.status, 502, `${status} ${JSON.stringify(headers)}`);
    assert.ok(cancelled, "the backend's body is cancelled");
    assert.deepEqual(f.reports, ["b1:invalid_response"]);
  }
  // Valid heads pass, including 599 and fields the proxy drops itself.
  for (
    const [status, headers] of [[599, []], [200, [["te", "trailers"], ["trailer", "x"]]]] as const
  ) {
    const f = forwarder([{ status, headers: headers.map(([n, v]) => [n, v]), body: null }]);
    assert.equal((await f.forward(incoming("GET"), pool, one, "/x", "a.test")).status, status);
  }
});

Deno.test("forward: RFC 9110 §9.3.2: a HEAD request's content is read and dropped, not forwarded (hyper would drop the whole session on its trailers)", async () => {
  const { forward, seen } = forwarder([200]);
  const req: IncomingRequest = {
    ...incoming("HEAD", new Uint8Array([1, 2, 3])),
    trailers: () => [["x-t", "1"]],
  };
  const res = await forward(req, pool, one, "/x", "a.test");
  assert.equal(res.status, 200);
  assert.equal(seen.length, 1);
  assert.equal(seen[0].body, null);
  assert.ok(!seen[0].headers.some(([n]) => n === "content-length"), "no content-length sent");
  assert.equal(seen[0].trailers, undefined, "no trailer section either");
  // The client's content was read to its end (nothing is left waiting on it).
  await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(await req.body!.getReader().read(), { done: true, value: undefined });
});

/** A failing step per outcome the transport can report (the rest are not failures of an attempt). */
const FAILURES: Array<[string, Step]> = [
  ["connect", "connect"],
  ["reset", "reset"],
  ["protocol", "protocol"],
  ["timeout", "timeout"],
  ["local", "local"],
  ["shutdown", "aborted"],
  ["internal", new TypeError("bug")],
];

for (const method of ["POST", "PATCH", "GET", "PUT"]) {
  Deno.test(`#35.1: forward follows the retry rule of outcome.ts for ${method}, every failing outcome, one and two candidates`, async () => {
    for (const [outcome, step] of FAILURES) {
      for (const candidates of [one, two]) {
        const f = forwarder([step, 200]);
        const body = method === "GET" ? null : new Uint8Array(3);
        const res = await f.forward(incoming(method, body), pool, candidates, "/x", "a.test");
        const again = maySendAgain(outcome as UpstreamOutcome, method) &&
          (OUTCOMES[outcome as UpstreamOutcome].retry === "idempotent" || candidates === two);
        const what = `${outcome}, ${candidates.length} candidate(s)`;
        assert.equal(f.seen.length, again ? 2 : 1, what);
        assert.equal(res.status, again ? 200 : OUTCOMES[outcome as UpstreamOutcome].status, what);
      }
    }
  });
}

Deno.test("#35.1: a POST whose backend processed it (protocol, reset) is never sent to the next candidate", async () => {
  for (const step of ["protocol", "reset"] as const) {
    const f = forwarder([step, 200]);
    const res = await f.forward(incoming("POST", new Uint8Array(3)), pool, two, "/x", "a.test");
    assert.equal(res.status, 502, step);
    assert.deepEqual(f.seen.map((r) => r.address), ["127.0.0.1:1"], step);
  }
});

Deno.test("#35.2: the pool's connect_timeout_ms goes with every exchange (a reloaded pool's with the next)", async () => {
  const f = forwarder([200]);
  await f.forward(incoming("GET"), pool, one, "/x", "a.test");
  assert.equal(f.seen[0].connectTimeoutMs, 10_000, "the default");
  const reloaded = poolWith({ connect_timeout_ms: 250 });
  const g = forwarder([200]);
  await g.forward(incoming("GET"), reloaded, one, "/x", "a.test");
  assert.equal(g.seen[0].connectTimeoutMs, 250);
});

Deno.test("#29.1: each exchange carries its backend's protocol (a mixed pool)", async () => {
  const mixed = [
    { id: "b1", address: "127.0.0.1:1", weight: 1, protocol: "http1" as const },
    { id: "b2", address: "127.0.0.1:2", weight: 1, protocol: "h2" as const },
  ];
  const f = forwarder(["connect", 200]);
  await f.forward(incoming("GET"), pool, mixed, "/x", "a.test");
  assert.deepEqual(f.seen.map((r) => r.protocol), ["http1", "h2"]);
});
