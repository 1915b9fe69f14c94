/**
 * #31.1: traces through Deno's built-in OpenTelemetry, end to end. A real
 * proxy and a real payments service, both started with `OTEL_DENO=true`,
 * export to an OTLP/HTTP receiver started here (`otlp_receiver.ts`, which
 * decodes the protobuf with the OpenTelemetry definitions): one request
 * through the proxy into payments is one trace (the proxy's SERVER span,
 * its CLIENT attempt, payments' `Deno.serve` span and its KV commit, in
 * that order); an untrusted `traceparent` starts a new trace linked to it,
 * a trusted one is the parent; refusals are events; log lines carry the
 * ids. Started without `OTEL_DENO`, nothing is exported and the backend
 * gets the request as the client sent it.
 */
import assert from "node:assert/strict";
import { spawnServer } from "../payments/_server_process.ts";
import { startBackend } from "../support/backend.ts";
import { curlLocal } from "../support/curl.ts";
import { H3TestClient } from "../support/h3_client.ts";
import { OtlpReceiver, type ReceivedSpan } from "../support/otlp_receiver.ts";
import { adminReload, startProxy, testCerts } from "../support/proxy_process.ts";
import { pollUntil } from "../support/wait.ts";

const TOKEN = "tracing-e2e-token";
const CARD = { number: "4012888888881881", expMonth: 11, expYear: 2039, cvc: "987", name: "E2E" };
/** Upper bound for spans to arrive: the exporters batch every 50 ms here. */
const WAIT_MS = 20_000;

/** The `OTEL_*` environment of a process exporting to `receiver`. */
function otelEnv(receiver: OtlpReceiver, service: string): Record<string, string> {
  return {
    OTEL_DENO: "true",
    OTEL_SERVICE_NAME: service,
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf",
    OTEL_BSP_SCHEDULE_DELAY: "50",
    OTEL_DENO_CONSOLE: "ignore",
  };
}

function proxyConfig(
  certs: { certPath: string; keyPath: string },
  payments: string,
  echo: string,
  trusted: string,
): string {
  return `version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tcp_fallback: true, tls: {cert: "${certs.certPath}", key: "${certs.keyPath}"}}
trusted_proxies: [${trusted}]
rate_limits:
  - {name: tight, requests_per_second: 0.01, burst: 1, key: client}
upstream:
  payments: {route: {path_prefix: /vendor}, backends: [{id: payments-1, address: "${payments}"}]}
  mirror: {route: {path_prefix: /mirror}, backends: [{id: echo-1, address: "${echo}"}]}
  limited: {route: {path_prefix: /limited}, rate_limit: tight, backends: [{id: echo-2, address: "${echo}"}]}
admin: {port: 0}
`;
}

function head(
  method: string,
  path: string,
  port: number,
  fields: Array<[string, string]> = [],
): Array<[string, string]> {
  return [
    [":method", method],
    [":scheme", "https"],
    [":authority", `localhost:${port}`],
    [":path", path],
    ["user-agent", "tracing-e2e/1"],
    ...fields,
  ];
}

const spooky = (s: ReceivedSpan) => s.scope === "spooky";
const serverSpans = (spans: ReceivedSpan[]) =>
  spans.filter((s) => spooky(s) && s.kind === "server");
/** The proxy's SERVER spans received after the first `since`. */
const newServerSpans = (spans: ReceivedSpan[], since: number) => serverSpans(spans.slice(since));
const childOf = (spans: ReceivedSpan[], parent: ReceivedSpan) =>
  spans.filter((s) => s.traceId === parent.traceId && s.parentSpanId === parent.spanId);

/** A fresh W3C traceparent: random trace and parent ids, sampled. */
function traceparent(): { value: string; traceId: string; spanId: string } {
  const hex = (n: number) =>
    Array.from(crypto.getRandomValues(new Uint8Array(n)), (b) => b.toString(16).padStart(2, "0"))
      .join("");
  const traceId = hex(16);
  const spanId = hex(8);
  return { value: `00-${traceId}-${spanId}-01`, traceId, spanId };
}

/**
 * The proxy's CLIENT span whose id a backend saw in `traceparent`, and its
 * parent, the proxy's SERVER span.
 */
async function spansOfSent(
  receiver: OtlpReceiver,
  sent: string | undefined,
): Promise<{ server: ReceivedSpan; attempt: ReceivedSpan }> {
  const [, traceId, spanId] = (sent ?? "").split("-");
  const find = (spans: ReceivedSpan[]) => {
    const attempt = spans.find((s) => s.traceId === traceId && s.spanId === spanId);
    const server = spans.find((s) => s.spanId === attempt?.parentSpanId && s.kind === "server");
    return attempt && server ? { attempt, server } : undefined;
  };
  return find(await receiver.waitFor((spans) => find(spans) !== undefined, WAIT_MS))!;
}

/** The request fields the echo backend saw (`/headers` answers them as JSON). */
function echoed(body: Uint8Array): Record<string, string> {
  return JSON.parse(new TextDecoder().decode(body));
}

Deno.test({
  name:
    "#31.1: traces: proxy → payments is one trace (server, client attempt, payments' server, KV commit, replay); untrusted traceparent: new trace + link; trusted: parent; refusals are events; logs carry ids",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const receiver = await OtlpReceiver.start();
    const certs = await testCerts();
    const echo = startBackend("echo");
    const payments = await spawnServer(
      ["--token", TOKEN, "--kv", ":memory:", "--port", "0"],
      otelEnv(receiver, "payments-e2e"),
    );
    const paymentsAddress = new URL(payments.url).host;
    const config = (trusted: string) => proxyConfig(certs, paymentsAddress, echo.address, trusted);
    const proxy = await startProxy(config(""), {
      ...otelEnv(receiver, "spooky-e2e"),
      RUST_LOG: "info,proxy::upstream=debug",
    });
    const client = await H3TestClient.connect(proxy.port, await Deno.readTextFile(certs.caPath));
    try {
      // 1. A charge through the proxy into payments: one trace, four spans in order.
      const body = new TextEncoder().encode(
        JSON.stringify({ amount: "20.00", currency: "USD", card: CARD }),
      );
      const charge = () =>
        client.request({
          head: head("POST", "/vendor/v4/payments/charges", proxy.port, [
            ["authorization", `Bearer ${TOKEN}`],
            ["content-type", "application/json"],
            ["content-length", String(body.length)],
            ["request-id", "tracing-e2e-0001"],
          ]),
          body,
        });
      assert.equal((await charge()).status, 201);
      const traceOf = (s: ReceivedSpan) => (spans: ReceivedSpan[]) =>
        spans.filter((x) => x.traceId === s.traceId);
      const [server] = (await receiver.waitFor((spans) => serverSpans(spans).length >= 1, WAIT_MS))
        .filter((s) => spooky(s) && s.kind === "server");
      // Each process exports in its own batches, a span when it ends: wait
      // for all four (payments' server span may come after its KV commit's).
      const full = await receiver.waitFor((spans) => {
        const trace = traceOf(server)(spans);
        return trace.some((s) => s.name === "kv commit") &&
          trace.some((s) => s.service === "payments-e2e" && s.kind === "server") &&
          trace.some((s) => spooky(s) && s.kind === "client");
      }, WAIT_MS);
      assert.equal(server.parentSpanId, undefined, "no traceparent came: a new trace");
      assert.equal(server.service, "spooky-e2e");
      assert.equal(server.name, "POST payments");
      assert.deepEqual(
        {
          method: server.attributes["http.request.method"],
          path: server.attributes["url.path"],
          route: server.attributes["http.route"],
          status: server.attributes["http.response.status_code"],
          version: server.attributes["network.protocol.version"],
          client: server.attributes["client.address"],
          agent: server.attributes["user_agent.original"],
        },
        {
          method: "POST",
          path: "/vendor/v4/payments/charges",
          route: "payments",
          status: 201n,
          version: "3",
          client: "127.0.0.1",
          agent: "tracing-e2e/1",
        },
      );
      const [attempt] = childOf(full, server);
      assert.ok(attempt, "the proxy's CLIENT span is the child of its SERVER span");
      assert.equal(attempt.kind, "client");
      assert.equal(attempt.scope, "spooky");
      assert.deepEqual(
        {
          backend: attempt.attributes["spooky.backend.id"],
          address: attempt.attributes["server.address"],
          port: attempt.attributes["server.port"],
          attempt: attempt.attributes["spooky.attempt"],
          outcome: attempt.attributes["spooky.outcome"],
          status: attempt.attributes["http.response.status_code"],
        },
        {
          backend: "payments-1",
          address: "127.0.0.1",
          port: BigInt(new URL(payments.url).port),
          attempt: 1n,
          outcome: "answered",
          status: 201n,
        },
      );
      const [paymentsServer] = childOf(full, attempt);
      assert.ok(paymentsServer, "payments' Deno.serve span is the child of the proxy's attempt");
      assert.equal(paymentsServer.service, "payments-e2e");
      assert.equal(paymentsServer.kind, "server");
      const commit = childOf(full, paymentsServer).find((s) => s.name === "kv commit");
      assert.ok(commit, "the KV commit is the child of payments' server span");
      assert.equal(commit.attributes["payments.commit.committed"], true);
      assert.equal(commit.attributes["db.system.name"], "deno_kv");
      const order = [server, attempt, paymentsServer, commit];
      for (let i = 1; i < order.length; i++) {
        assert.ok(order[i - 1].start <= order[i].start, `${order[i].name} starts after its parent`);
        assert.ok(order[i].end <= order[i - 1].end, `${order[i].name} ends before its parent`);
      }
      // The proxy's log lines written under the span carry its ids.
      await pollUntil(() => proxy.stderr.some((l) => l.includes("routing to backend payments-1")));
      const routed = proxy.stderr.find((l) => l.includes("routing to backend payments-1"))!;
      assert.ok(
        routed.endsWith(` trace_id=${server.traceId} span_id=${server.spanId}`),
        routed,
      );

      // 2. The same request again: payments' commit fails its check and replays.
      let since = receiver.spans.length;
      const replayed = await charge();
      assert.equal(replayed.status, 201);
      const spans2 = await receiver.waitFor(
        (spans) => spans.slice(since).some((s) => s.name === "idempotent replay"),
        WAIT_MS,
      );
      const replay = spans2.slice(since).find((s) => s.name === "idempotent replay")!;
      assert.equal(replay.attributes["payments.replayed"], true);
      assert.equal(replay.service, "payments-e2e");

      // 3. An untrusted client's traceparent: a new trace, linked to the client's.
      const untrusted = traceparent();
      const r3 = await client.request({
        head: head("GET", "/mirror/headers", proxy.port, [
          ["traceparent", untrusted.value],
          ["tracestate", "vendor=evil"],
        ]),
      });
      assert.equal(r3.status, 200);
      const sent3 = echoed(r3.body);
      const { server: s3, attempt: c3 } = await spansOfSent(receiver, sent3["traceparent"]);
      assert.notEqual(s3.traceId, untrusted.traceId);
      assert.equal(s3.parentSpanId, undefined);
      assert.deepEqual(s3.links.map((l) => [l.traceId, l.spanId, l.attributes]), [[
        untrusted.traceId,
        untrusted.spanId,
        { "spooky.link.reason": "untrusted_parent" },
      ]]);
      assert.equal(sent3["traceparent"], `00-${s3.traceId}-${c3.spanId}-01`);
      assert.equal(sent3["tracestate"], undefined, "an untrusted tracestate is not forwarded");

      // 4. Refusals are events: no route, and a rate limit.
      since = receiver.spans.length;
      assert.equal(
        (await client.request({ head: head("GET", "/nowhere", proxy.port) })).status,
        404,
      );
      assert.equal(
        (await client.request({ head: head("GET", "/limited/a", proxy.port) })).status,
        200,
      );
      assert.equal(
        (await client.request({ head: head("GET", "/limited/b", proxy.port) })).status,
        429,
      );
      const refusals = newServerSpans(
        await receiver.waitFor((s) => newServerSpans(s, since).length >= 3, WAIT_MS),
        since,
      );
      const eventOf = (path: string) =>
        refusals.find((s) => s.attributes["url.path"] === path)?.events.map((e) => [
          e.name,
          e.attributes["spooky.refusal"],
          e.attributes["spooky.rate_limit"],
        ]);
      assert.deepEqual(eventOf("/nowhere"), [["spooky.refused", "not_found", undefined]]);
      assert.deepEqual(eventOf("/limited/a"), []);
      assert.deepEqual(eventOf("/limited/b"), [["spooky.rate_limited", "rate_limited", "tight"]]);

      // 5. A trusted proxy's traceparent is the parent; its tracestate passes on.
      const reload = await Deno.writeTextFile(proxy.configPath, config('"127.0.0.0/8"'))
        .then(() => adminReload(proxy.adminPort!));
      assert.deepEqual(reload, { reloaded: true, restart_required: [] });
      const trusted = traceparent();
      const r5 = await client.request({
        head: head("GET", "/mirror/headers", proxy.port, [
          ["traceparent", trusted.value],
          ["tracestate", "vendor=ok"],
        ]),
      });
      assert.equal(r5.status, 200);
      const sent5 = echoed(r5.body);
      const { server: s5, attempt: c5 } = await spansOfSent(receiver, sent5["traceparent"]);
      assert.equal(s5.traceId, trusted.traceId);
      assert.equal(s5.parentSpanId, trusted.spanId);
      assert.deepEqual(s5.links, []);
      assert.equal(sent5["traceparent"], `00-${trusted.traceId}-${c5.spanId}-01`);
      assert.equal(sent5["tracestate"], "vendor=ok");

      // 6. The TCP fallback: the same spans, with the protocol it came by.
      since = receiver.spans.length;
      for (const [version, dir] of [["--http2", "h2"], ["--http1.1", "h1"]]) {
        const r = await curlLocal(proxy.port, [
          "-s",
          "--cacert",
          certs.caPath,
          version,
          "-H",
          `traceparent: ${traceparent().value}`,
          "-o",
          "/dev/null",
          "-w",
          "%{http_code}",
          `https://localhost:${proxy.port}/mirror/${dir}/headers`,
        ]);
        assert.equal(r.stdout, "200", r.stderr);
      }
      const tcp = newServerSpans(
        await receiver.waitFor((s) => newServerSpans(s, since).length >= 2, WAIT_MS),
        since,
      );
      const versionOf = (dir: string) =>
        tcp.find((s) => s.attributes["url.path"] === `/mirror/${dir}/headers`)?.attributes[
          "network.protocol.version"
        ];
      assert.equal(versionOf("h2"), "2");
      assert.equal(versionOf("h1"), "1.1");

      // Nothing was ever recorded in an untrusted client's trace.
      assert.ok(!receiver.spans.some((s) => s.traceId === untrusted.traceId));
      assert.deepEqual(receiver.errors, []);
    } finally {
      await client.close();
      await proxy.stop();
      await payments.stop();
      await echo.close();
      await receiver.close();
    }
  },
});

Deno.test({
  name:
    "#31.1: traces off (no OTEL_DENO): nothing exported, the backend gets the client's trace fields unchanged, no ids in log lines",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    assert.equal(
      Deno.env.get("OTEL_DENO"),
      undefined,
      "the test's own environment has no OTEL_DENO",
    );
    const receiver = await OtlpReceiver.start();
    const certs = await testCerts();
    const echo = startBackend("echo");
    const { OTEL_DENO: _, ...off } = otelEnv(receiver, "spooky-off");
    const proxy = await startProxy(proxyConfig(certs, echo.address, echo.address, ""), {
      ...off,
      RUST_LOG: "info,proxy::upstream=debug",
    });
    const client = await H3TestClient.connect(proxy.port, await Deno.readTextFile(certs.caPath));
    try {
      const sent = traceparent();
      const res = await client.request({
        head: head("GET", "/mirror/headers", proxy.port, [
          ["traceparent", sent.value],
          ["tracestate", "vendor=x"],
        ]),
      });
      assert.equal(res.status, 200);
      const seen = echoed(res.body);
      assert.equal(seen["traceparent"], sent.value, "the proxy takes no part: forwarded as sent");
      assert.equal(seen["tracestate"], "vendor=x");
      assert.ok(!res.headers.some(([n]) => n === "traceparent" || n === "tracestate"));
      await pollUntil(() => proxy.stderr.some((l) => l.includes("routing to backend echo-1")));
      assert.ok(!proxy.stderr.some((l) => l.includes("trace_id=")), proxy.stderr.join("\n"));
    } finally {
      await client.close();
      // A process that had spans would flush them as it exits.
      await proxy.stop();
      await echo.close();
    }
    assert.equal(receiver.traceRequests, 0, "nothing exported");
    await receiver.close();
  },
});

Deno.test({
  name:
    "#31.1: traces: each health probe is a trace of its own (Deno's fetch leaves its span active after the await; probes run outside any trace)",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const receiver = await OtlpReceiver.start();
    const certs = await testCerts();
    const echo = startBackend("echo");
    const proxy = await startProxy(
      `version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tls: {cert: "${certs.certPath}", key: "${certs.keyPath}"}}
upstream:
  root:
    route: {path_prefix: /}
    backends: [{id: echo-1, address: "${echo.address}", health_check: {path: /probe, interval: 100}}]
`,
      otelEnv(receiver, "spooky-probes"),
    );
    try {
      const probes = (spans: ReceivedSpan[]) =>
        spans.filter((s) =>
          s.service === "spooky-probes" && String(s.attributes["url.full"] ?? "").endsWith("/probe")
        );
      const seen = probes(await receiver.waitFor((spans) => probes(spans).length >= 4, WAIT_MS));
      // Mutation: without `untraced` in the health checker every probe after
      // the first is a child of the one before (one endless trace).
      assert.deepEqual(seen.map((s) => s.parentSpanId), seen.map(() => undefined));
      assert.equal(new Set(seen.map((s) => s.traceId)).size, seen.length);
    } finally {
      await proxy.stop();
      await echo.close();
      await receiver.close();
    }
  },
});
