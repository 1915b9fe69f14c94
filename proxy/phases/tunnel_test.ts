import assert from "node:assert/strict";
import { parseConfigText } from "../config/load.ts";
import { createProxyApp } from "../app.ts";
import { ProxyMetrics } from "../metrics/metrics.ts";
import type { IncomingRequest } from "../server/types.ts";
import {
  UpstreamError,
  type UpstreamRequest,
  type UpstreamResponse,
  type UpstreamTransport,
  WebSocketUnsupported,
} from "../upstream/transport.ts";

function appOf(websocket: UpstreamTransport["websocket"], extra = "") {
  const r = parseConfigText(
    `version: 1
listen: {protocol: http3, tls: {cert: c.pem, key: k.pem}}
upstream:
  chat:
    route: {path_prefix: /chat, methods: [GET]}
    backends: [{id: c1, address: "10.0.0.1:80"}, {id: c2, address: "10.0.0.2:80"}]
    load_balancing: {type: round-robin}
${extra}`,
    { checkFiles: false },
  );
  if (!r.ok) throw new Error(JSON.stringify(r));
  const metrics = new ProxyMetrics();
  const reports: string[] = [];
  const transport: UpstreamTransport = {
    exchange: () => Promise.reject(new Error("no exchange expected")),
    websocket,
    release() {},
    close: () => Promise.resolve(),
  };
  const app = createProxyApp({
    config: r.config,
    transport,
    metrics,
    health: { isAvailable: () => true, report: (id, o) => reports.push(`${id}:${o}`) },
  });
  return { app, metrics, reports };
}

function wsRequest(path: string, protocol = "websocket", body = new ReadableStream<Uint8Array>()) {
  return {
    head: {
      method: "CONNECT",
      protocol,
      scheme: "https",
      authority: "example.test",
      path,
      fields: [["sec-websocket-version", "13"], ["connection", "x"]],
    },
    body,
    remote: { hostname: "192.0.2.7", port: 5000 },
    signal: new AbortController().signal,
  } as IncomingRequest;
}

/** A backend side that says `hello` and ends once the client's side ended. */
function switched(req: UpstreamRequest): UpstreamResponse {
  const client = req.body as ReadableStream<Uint8Array>;
  return {
    status: 200,
    headers: [["sec-websocket-protocol", "chat"]],
    body: new ReadableStream<Uint8Array>({
      async start(c) {
        c.enqueue(new TextEncoder().encode("hello"));
        for await (const _ of client) { /* drained */ }
        c.close();
      },
    }),
  };
}

Deno.test("#29.2: a WebSocket is routed as a GET, sent through the transport's websocket, relayed, counted", async () => {
  const seen: UpstreamRequest[] = [];
  const { app, metrics } = appOf((req) => {
    seen.push(req);
    return Promise.resolve(switched(req));
  });
  let send!: ReadableStreamDefaultController<Uint8Array>;
  const body = new ReadableStream<Uint8Array>({ start: (c) => void (send = c) });
  const res = await app(wsRequest("/chat/room", "websocket", body));
  assert.equal(res.status, 200);
  assert.deepEqual(
    [seen[0].method, seen[0].path, seen[0].address],
    ["CONNECT", "/chat/room", "10.0.0.1:80"],
  );
  assert.ok(seen[0].headers.some(([n]) => n === "sec-websocket-version"));
  assert.ok(!seen[0].headers.some(([n]) => n === "connection"), "hop-by-hop fields dropped");
  assert.ok([...res.headers].some(([n, v]) => n === "sec-websocket-protocol" && v === "chat"));
  assert.equal(metrics.websockets.snapshot(["chat"])[0].open, 1);
  send.close();
  const text = await new Response(res.body as ReadableStream).text();
  assert.equal(text, "hello");
  const view = metrics.websockets.snapshot(["chat"])[0];
  assert.equal(view.open, 0);
  assert.deepEqual(view.outcomes.find(([o]) => o === "closed"), ["closed", 1]);
});

Deno.test("#29.2: extended CONNECT for another protocol is 501; WebSockets off in a pool are 501", async () => {
  let calls = 0;
  const { app } = appOf(() => {
    calls++;
    return Promise.reject(new Error("unexpected"));
  }, "    websocket: {enabled: false}");
  assert.equal((await app(wsRequest("/chat/x", "webtransport"))).status, 501);
  const off = await app(wsRequest("/chat/x"));
  assert.equal(off.status, 501);
  assert.match(new TextDecoder().decode(off.body as Uint8Array), /websocket_disabled/);
  assert.equal(calls, 0);
});

Deno.test("#29.2: a handshake that reached nothing goes to the next candidate; an HTTP/2 backend without extended CONNECT is 502, not blamed", async () => {
  const tried: string[] = [];
  const { app, reports } = appOf((req) => {
    tried.push(req.address);
    if (req.address === "10.0.0.1:80") {
      return Promise.reject(new UpstreamError("connect", "refused"));
    }
    return Promise.resolve(switched(req));
  });
  const res = await app(wsRequest("/chat/a"));
  assert.equal(res.status, 200);
  assert.deepEqual(tried, ["10.0.0.1:80", "10.0.0.2:80"]);
  await (res.body as ReadableStream).cancel();

  const none = appOf((req) => Promise.reject(new WebSocketUnsupported(req.address)));
  const refused = await none.app(wsRequest("/chat/b"));
  assert.equal(refused.status, 502);
  assert.deepEqual(none.reports, [], "not counted against the backend");
  assert.deepEqual(reports.filter((r) => r.endsWith(":connect")), ["c1:connect"]);
});
