/**
 * The forwarder with a pool's `retries` policy and its gate (circuit
 * breaking, load): what is sent again, when, and what is refused. The
 * default rule (a pool without either) is `forward_test.ts`'s.
 */
import assert from "node:assert/strict";
import { ConfigSchema } from "../config/schema.ts";
import { ProxyMetrics } from "../metrics/metrics.ts";
import type { IncomingRequest, OutgoingResponse } from "../server/types.ts";
import {
  UpstreamError,
  type UpstreamRequest,
  type UpstreamResponse,
  type UpstreamTransport,
} from "../upstream/transport.ts";
import { whenFinished } from "../server/response_finished.ts";
import { createForwarder } from "./forward.ts";
import { buildPools, type PoolContext, PoolState } from "./pool.ts";

/** An answer (status), a failure kind, or a promise the test settles. */
type Step = number | "connect" | "reset" | "timeout" | Promise<UpstreamResponse>;

function scripted(script: Step[]) {
  const seen: UpstreamRequest[] = [];
  const transport: UpstreamTransport = {
    exchange(req) {
      seen.push(req);
      const next = script.shift() ?? 200;
      if (typeof next === "number") {
        return Promise.resolve({ status: next, headers: [], body: new Uint8Array([0x6f, 0x6b]) });
      }
      if (next instanceof Promise) return next;
      return Promise.reject(new UpstreamError(next, `scripted ${next}`));
    },
    release() {},
    close: () => Promise.resolve(),
  };
  return { transport, seen };
}

function incoming(method: string, signal = new AbortController().signal): IncomingRequest {
  const body = method === "GET" ? null : new Uint8Array(3);
  return {
    head: {
      method,
      scheme: "https",
      authority: "a.test",
      path: "/x",
      fields: body === null ? [] : [["content-length", "3"]],
      contentLength: body?.length,
    },
    body: body === null ? null : new Blob([body]).stream(),
    remote: { hostname: "127.0.0.1", port: 5000 },
    signal,
  };
}

/** Pool "p" with `keys` (and `backend` keys on each of b1, b2), its state kept in `state`. */
function poolWith(
  keys: Record<string, unknown>,
  backend: Record<string, unknown> = {},
  state = new PoolState(),
): PoolContext {
  return buildPools(
    ConfigSchema.parse({
      version: 1,
      listen: { protocol: "http3", port: 9889, tls: { cert: "c.pem", key: "k.pem" } },
      upstream: {
        p: {
          route: { path_prefix: "/" },
          ...keys,
          backends: [
            { id: "b1", address: "127.0.0.1:1", ...backend },
            { id: "b2", address: "127.0.0.1:2", ...backend },
          ],
        },
      },
    }),
    () => state,
  ).get("p")!;
}

const one = [{ id: "b1", address: "127.0.0.1:1", weight: 100 }];
const two = [...one, { id: "b2", address: "127.0.0.1:2", weight: 100 }];

function forwarder(script: Step[]) {
  const { transport, seen } = scripted(script);
  const reports: string[] = [];
  const forward = createForwarder({
    transport,
    health: { isAvailable: () => true, report: (id, o) => void reports.push(`${id}:${o}`) },
    metrics: new ProxyMetrics(),
  });
  return { forward, seen, reports };
}

const noBackoff = { backoff_base_ms: 0, backoff_max_ms: 0 };

/** What the server layer does once `res` is sent: tells its `finished` (a held slot is freed). */
function sent(res: OutgoingResponse): OutgoingResponse {
  res.finished?.({ status: res.status, bytes: 0, outcome: "complete" });
  return res;
}

Deno.test("#30.2: retry_on [503]: a GET answered 503 is sent again and the second answer is the client's; a POST gets its 503", async () => {
  const pool = poolWith({ retries: { retry_on: [503], ...noBackoff } });
  const get = forwarder([503, 200]);
  assert.equal((await get.forward(incoming("GET"), pool, two, "/x", "a.test")).status, 200);
  assert.deepEqual(get.seen.map((r) => r.address), ["127.0.0.1:1", "127.0.0.1:2"]);
  assert.deepEqual(get.reports, ["b1:5xx", "b2:success"], "the 503 still counts against b1");
  const post = forwarder([503, 200]);
  assert.equal((await post.forward(incoming("POST"), pool, two, "/x", "a.test")).status, 503);
  assert.equal(post.seen.length, 1, "a non-idempotent request the backend answered: never again");
  assert.deepEqual(pool.state.retryCounters.snapshot(["503"]), [["503", 1]]);
});

Deno.test("#30.2: attempts: 3 retries on a single backend, each after its backoff; the deadline bounds it all", async () => {
  const pool = poolWith({
    retries: { attempts: 3, retry_on: ["connect"], backoff_base_ms: 5, backoff_max_ms: 20 },
    request_timeout_ms: 5000,
  });
  const f = forwarder(["connect", "connect", "connect", 200]);
  const res = await f.forward(incoming("POST"), pool, one, "/x", "a.test");
  assert.equal(res.status, 200, "connect is retried whatever the method");
  assert.equal(f.seen.length, 4);
  for (const r of f.seen) assert.ok(r.timeoutMs <= 5000 && r.timeoutMs > 0, `${r.timeoutMs}`);
});

Deno.test("#30.2: per_try_timeout_ms goes to the transport; a per-try timeout of a GET is retried", async () => {
  const pool = poolWith({
    retries: { per_try_timeout_ms: 200, ...noBackoff },
    request_timeout_ms: 5000,
  });
  const f = forwarder(["timeout", 200]);
  assert.equal((await f.forward(incoming("GET"), pool, two, "/x", "a.test")).status, 200);
  assert.deepEqual(f.seen.map((r) => r.timeoutMs), [200, 200]);
  const post = forwarder(["timeout", 200]);
  assert.equal((await post.forward(incoming("POST"), pool, two, "/x", "a.test")).status, 503);
  assert.equal(post.seen.length, 1);
});

Deno.test("#30.2: the retry budget: past budget_percent the failure is answered, not sent again", async () => {
  const state = new PoolState();
  const pool = poolWith(
    { retries: { retry_on: [503], budget_percent: 0, min_retries_per_second: 1, ...noBackoff } },
    {},
    state,
  );
  const first = forwarder([503, 200]);
  assert.equal((await first.forward(incoming("GET"), pool, two, "/x", "a.test")).status, 200);
  const second = forwarder([503, 200]);
  assert.equal((await second.forward(incoming("GET"), pool, two, "/x", "a.test")).status, 503);
  assert.equal(second.seen.length, 1);
  assert.equal(state.retryCounters.budgetExhausted, 1);
  assert.equal(state.retryBudget!.active + state.retryBudget!.retrying, 0, "shares given back");
});

Deno.test("#30.2: the client leaving during a backoff ends the request at once (client_gone)", async () => {
  const pool = poolWith({
    request_timeout_ms: 600_000,
    retries: { backoff_base_ms: 60_000, backoff_max_ms: 60_000 },
  });
  // The jitter draws a wait of at least 1 ms (below the deadline's 600 s).
  const client = new AbortController();
  const f = forwarder(["connect", 200]);
  const pending = f.forward(incoming("GET", client.signal), pool, two, "/x", "a.test");
  await new Promise((r) => setTimeout(r, 10));
  client.abort();
  const res = await pending;
  assert.equal(res.failure, "client_gone");
  assert.equal(f.seen.length, 1);
});

Deno.test("#30.2: max_inflight: a request finding every candidate full is 503 overloaded at once, in JSON, never sent", async () => {
  const state = new PoolState();
  const pool = poolWith({}, { max_inflight: 1 }, state);
  const hold = Promise.withResolvers<UpstreamResponse>();
  const f = forwarder([hold.promise, hold.promise, 200]);
  const a = f.forward(incoming("GET"), pool, two, "/x", "a.test");
  const b = f.forward(incoming("GET"), pool, two, "/x", "a.test");
  await new Promise((r) => setTimeout(r, 0));
  assert.deepEqual(f.seen.map((r) => r.address), ["127.0.0.1:1", "127.0.0.1:2"], "b1 full: b2");
  const refused = await f.forward(incoming("GET"), pool, two, "/x", "a.test");
  assert.equal(refused.status, 503);
  assert.equal(refused.backend, undefined, "no backend is blamed");
  const body = JSON.parse(new TextDecoder().decode(refused.body as Uint8Array));
  assert.equal(body.error, "overloaded");
  assert.equal(f.seen.length, 2);
  assert.deepEqual(state.gate!.refused("b1"), { max_inflight: 1, max_pending: 0 });
  hold.resolve({ status: 200, headers: [], body: null });
  const answers = [await a, await b];
  assert.deepEqual(answers.map((r) => r.status), [200, 200]);
  assert.deepEqual([state.gate!.inflight("b1"), state.gate!.inflight("b2")], [1, 1], "until sent");
  answers.forEach(sent);
  assert.deepEqual([state.gate!.inflight("b1"), state.gate!.inflight("b2")], [0, 0]);
});

Deno.test("#30.2: max_pending: a request waits for a slot and is sent when one frees", async () => {
  const state = new PoolState();
  const pool = poolWith({ max_pending: 1 }, { max_inflight: 1 }, state);
  const hold = Promise.withResolvers<UpstreamResponse>();
  const f = forwarder([hold.promise, hold.promise, 204]);
  const held = [0, 1].map(() => f.forward(incoming("GET"), pool, two, "/x", "a.test"));
  const waiting = f.forward(incoming("GET"), pool, two, "/x", "a.test");
  await new Promise((r) => setTimeout(r, 0));
  assert.equal(state.gate!.pending, 1);
  const over = await f.forward(incoming("GET"), pool, two, "/x", "a.test");
  assert.equal(over.status, 503, "the queue is full");
  assert.deepEqual(state.gate!.refused("b1"), { max_inflight: 0, max_pending: 1 });
  hold.resolve({ status: 200, headers: [], body: null });
  // The slots free as the answers are sent, not as their heads arrive.
  for (const r of held) assert.equal(sent(await r).status, 200);
  assert.equal(sent(await waiting).status, 204);
  assert.equal(f.seen.length, 3);
});

Deno.test("#30.2: slots are given back after a failure too, so a failing backend does not fill up", async () => {
  const state = new PoolState();
  const pool = poolWith({}, { max_inflight: 1 }, state);
  for (let i = 0; i < 5; i++) {
    const f = forwarder(["reset", "reset"]);
    assert.equal((await f.forward(incoming("GET"), pool, one, "/x", "a.test")).status, 502);
  }
  assert.equal(state.gate!.inflight("b1"), 0);
  assert.deepEqual(state.gate!.refused("b1"), { max_inflight: 0, max_pending: 0 });
});

Deno.test("#30.3: least-request: forward feeds the load: a backend with a request in flight is passed over", async () => {
  const state = new PoolState();
  const pool = poolWith({ load_balancing: { type: "least-request" } }, {}, state);
  const hold = Promise.withResolvers<UpstreamResponse>();
  const f = forwarder([hold.promise]);
  const first = pool.balancer.candidates({ path: "/", header: () => null }, () => true);
  const pending = f.forward(incoming("GET"), pool, first, "/x", "a.test");
  await new Promise((r) => setTimeout(r, 0));
  const busy = first[0].id;
  for (let i = 0; i < 20; i++) {
    const next = pool.balancer.candidates({ path: "/", header: () => null }, () => true);
    assert.notEqual(next[0].id, busy);
  }
  hold.resolve({ status: 200, headers: [], body: null });
  sent(await pending);
  assert.equal(state.gate!.inflight(busy), 0);
});

Deno.test("#30.2: the answer the client gets holds its slot until it is finished; one with nothing to hold has no finished", async () => {
  const state = new PoolState();
  const pool = poolWith({}, { max_inflight: 1 }, state);
  const f = forwarder([200, 200]);
  const answer = await f.forward(incoming("GET"), pool, one, "/x", "a.test");
  assert.equal(state.gate!.inflight("b1"), 1, "its body is still to be sent");
  assert.equal((await f.forward(incoming("GET"), pool, one, "/x", "a.test")).status, 503);
  // A listener added before (the tracing's span) and one that throws do not keep the slot.
  const told: string[] = [];
  const slot = answer.finished!;
  answer.finished = (record) => {
    told.push(record.outcome);
    throw new Error("a listener failed");
  };
  whenFinished(answer, slot);
  assert.throws(() => sent(answer), /a listener failed/);
  assert.deepEqual(told, ["complete"]);
  assert.equal(state.gate!.inflight("b1"), 0, "freed at the end of the response");
  assert.throws(() => sent(answer), /a listener failed/);
  assert.equal(state.gate!.inflight("b1"), 0, "once only");
  assert.equal(sent(await f.forward(incoming("GET"), pool, one, "/x", "a.test")).status, 200);
  const plain = await forwarder([200]).forward(incoming("GET"), poolWith({}), one, "/x", "a.test");
  assert.equal(plain.finished, undefined, "a pool without a gate: nothing per request");
});

Deno.test("#30.2: an answer not handed to the client (invalid, or retried) gives its slot back at once", async () => {
  const state = new PoolState();
  const pool = poolWith({ retries: { retry_on: [503], ...noBackoff } }, { max_inflight: 1 }, state);
  const invalid = Promise.resolve({ status: 200, headers: [["connection", "x"]], body: null });
  const f = forwarder([invalid as Promise<UpstreamResponse>, 503, 200]);
  assert.equal((await f.forward(incoming("GET"), pool, one, "/x", "a.test")).status, 502);
  assert.equal(state.gate!.inflight("b1"), 0, "an invalid answer's slot");
  const retried = await f.forward(incoming("GET"), pool, one, "/x", "a.test");
  assert.equal(retried.status, 200, "the 503's slot was free for the retry on the same backend");
  assert.equal(f.seen.length, 3);
  assert.equal(state.gate!.inflight("b1"), 1);
  sent(retried);
  assert.equal(state.gate!.inflight("b1"), 0);
});
