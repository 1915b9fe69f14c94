import assert from "node:assert/strict";
import { ProxyMetrics } from "../metrics/metrics.ts";
import type { IncomingRequest } from "../server/types.ts";
import { createForwarder } from "./forward.ts";
import {
  UpstreamError,
  type UpstreamFailureKind,
  type UpstreamRequest,
  type UpstreamResponse,
  type UpstreamTransport,
} from "./transport.ts";

/** A transport that answers each exchange from a script: a failure kind, or a status. */
function scripted(script: Array<UpstreamFailureKind | number>) {
  const seen: UpstreamRequest[] = [];
  const transport: UpstreamTransport = {
    exchange(req): Promise<UpstreamResponse> {
      seen.push(req);
      const next = script.shift() ?? 200;
      if (typeof next === "number") {
        return Promise.resolve({ status: next, headers: [], body: new Uint8Array([0x6f, 0x6b]) });
      }
      return Promise.reject(new UpstreamError(next, `scripted ${next}`));
    },
    release() {},
    close: () => Promise.resolve(),
  };
  return { transport, seen };
}

function incoming(method: string, body: Uint8Array<ArrayBuffer> | null = null): IncomingRequest {
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
    signal: new AbortController().signal,
  };
}

const pool = { name: "p", timeoutMs: 1000 };
const one = [{ id: "b1", address: "127.0.0.1:1", weight: 1 }];
const two = [...one, { id: "b2", address: "127.0.0.1:2", weight: 1 }];

function forwarder(script: Array<UpstreamFailureKind | number>) {
  const { transport, seen } = scripted(script);
  const reports: string[] = [];
  const forward = createForwarder({
    transport,
    health: { isAvailable: () => true, report: (id, o) => void reports.push(`${id}:${o}`) },
    metrics: new ProxyMetrics(),
  });
  return { forward, seen, reports };
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
    assert.deepEqual(f.reports, ["b1:5xx", "b1:success"], method);
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
  // A timeout or protocol error is never retried.
  for (const kind of ["timeout", "protocol"] as const) {
    const f = forwarder([kind, 200]);
    const res = await f.forward(incoming("GET"), pool, two, "/x", "a.test");
    assert.equal(res.status, kind === "timeout" ? 503 : 502);
    assert.equal(f.seen.length, 1);
  }
});
