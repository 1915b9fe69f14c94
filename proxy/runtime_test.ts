/**
 * ProxyRuntime without sockets: backend clients and probes are fakes, the
 * configuration comes straight from the schema. Covers what the admin API and
 * reloads rely on; the request path itself is app_test.ts's.
 */
import assert from "node:assert/strict";
import { ConfigSchema } from "./config/schema.ts";
import type { Config } from "./config/types.ts";
import { ProxyRuntime } from "./runtime.ts";
import { UpstreamError, type UpstreamTransport } from "./upstream/transport.ts";
import type { IncomingRequest } from "./server/types.ts";

function config(extra: Record<string, unknown> = {}, upstream?: Record<string, unknown>): Config {
  return ConfigSchema.parse({
    version: 1,
    listen: { protocol: "http3", port: 9889, tls: { cert: "cert.pem", key: "key.pem" } },
    upstream: upstream ?? {
      api: {
        route: { path_prefix: "/api" },
        backends: [
          { id: "a1", address: "127.0.0.1:8001" },
          { id: "a2", address: "127.0.0.1:8002", weight: 50 },
        ],
      },
      web: { route: { path_prefix: "/" }, backends: [{ id: "w1", address: "127.0.0.1:9001" }] },
    },
    ...extra,
  });
}

/** A fake upstream transport: each backend answers 200 with its address; calls and releases counted. */
function fakes() {
  const calls: string[] = [];
  const closed: string[] = [];
  const transport: UpstreamTransport = {
    exchange(req) {
      calls.push(req.address);
      if (req.body instanceof ReadableStream) req.body.cancel();
      return Promise.resolve({
        status: 200,
        headers: [],
        body: new TextEncoder().encode(req.address),
      });
    },
    release: (address) => void closed.push(address),
    close: () => {
      closed.push("*");
      return Promise.resolve();
    },
  };
  const probeFetch = () => Promise.resolve(new Response(null, { status: 200 }));
  return { calls, closed, opts: { userAgent: "spooky/test", transport, probeFetch } };
}

function get(path: string): IncomingRequest {
  return {
    head: { method: "GET", scheme: "https", authority: "edge.example", path, fields: [] },
    body: null,
    remote: { hostname: "192.0.2.1", port: 40000 },
    signal: new AbortController().signal,
  };
}

Deno.test("ProxyRuntime: backends() lists every backend of every pool, healthy at first", () => {
  const runtime = new ProxyRuntime(config(), fakes().opts);
  assert.deepEqual(runtime.backends().map((b) => [b.pool, b.id, b.weight, b.health, b.enabled]), [
    ["api", "a1", 100, "healthy", true],
    ["api", "a2", 50, "healthy", true],
    ["web", "w1", 100, "healthy", true],
  ]);
  assert.ok(runtime.backends().every((b) => !b.ejected && b.configuredWeight === b.weight));
  assert.deepEqual(runtime.poolsWithoutHealthyBackend(), []);
});

Deno.test("ProxyRuntime: the handler routes through one pooled client per address and times requests", async () => {
  const { calls, opts } = fakes();
  const runtime = new ProxyRuntime(config(), opts);
  const res = await runtime.handler(get("/index.html"));
  assert.equal(res.status, 200);
  await runtime.handler(get("/about"));
  assert.deepEqual(calls, ["127.0.0.1:9001", "127.0.0.1:9001"]);
  assert.equal(runtime.metrics.latency.snapshot().count, 2);
  const view = runtime.metricsView({
    version: "t",
    uptimeSeconds: 1,
    startTimeSeconds: 0,
    residentBytes: 0,
  });
  assert.equal(view.backends.find((b) => b.id === "w1")?.picks, 2);
  assert.equal(view.backends.length, 3);
  await runtime.stop();
});

Deno.test("ProxyRuntime: a disabled backend gets no traffic; a pool with none left answers 503", async () => {
  const { calls, opts } = fakes();
  const runtime = new ProxyRuntime(config(), opts);
  assert.equal(runtime.setEnabled("nope", false), false);
  assert.equal(runtime.setEnabled("a1", false), true);
  for (let i = 0; i < 4; i++) assert.equal((await runtime.handler(get("/api/x"))).status, 200);
  assert.deepEqual(new Set(calls), new Set(["127.0.0.1:8002"]));
  runtime.setEnabled("a2", false);
  assert.deepEqual(runtime.poolsWithoutHealthyBackend(), ["api"]);
  assert.equal((await runtime.handler(get("/api/x"))).status, 503);
  runtime.setEnabled("a1", true);
  assert.deepEqual(runtime.poolsWithoutHealthyBackend(), []);
  assert.equal(runtime.backends().find((b) => b.id === "a2")?.enabled, false);
});

Deno.test("ProxyRuntime: setWeight overrides the configured weight; 0 drains the backend", async () => {
  const { calls, opts } = fakes();
  const runtime = new ProxyRuntime(config(), opts);
  assert.equal(runtime.setWeight("nope", 1), false);
  assert.equal(runtime.setWeight("a1", 0), true);
  const a1 = runtime.backends().find((b) => b.id === "a1")!;
  assert.deepEqual([a1.weight, a1.configuredWeight], [0, 100]);
  for (let i = 0; i < 4; i++) await runtime.handler(get("/api/x"));
  assert.deepEqual(new Set(calls), new Set(["127.0.0.1:8002"]));
  runtime.setWeight("a2", 0);
  assert.deepEqual(runtime.poolsWithoutHealthyBackend(), ["api"]);
});

Deno.test("ProxyRuntime: reload swaps routes, names restart-only changes, drops stale overrides", async () => {
  const { calls, closed, opts } = fakes();
  const runtime = new ProxyRuntime(config(), opts);
  runtime.setWeight("a1", 7);
  runtime.setEnabled("w1", false);
  await runtime.handler(get("/api/x"));
  const next = config({ limits: { drain_timeout_ms: 1 } }, {
    api: { route: { path_prefix: "/" }, backends: [{ id: "a1", address: "127.0.0.1:8003" }] },
  });
  // drain_timeout_ms is read at shutdown: nothing to restart for.
  assert.deepEqual(await runtime.reload(next), []);
  assert.equal(runtime.config, next);
  assert.deepEqual(runtime.backends().map((b) => [b.id, b.weight, b.enabled]), [["a1", 7, true]]);
  calls.length = 0;
  assert.equal((await runtime.handler(get("/api/x"))).status, 200);
  assert.deepEqual(calls, ["127.0.0.1:8003"]);
  // Clients of addresses the new configuration no longer uses close once idle.
  await new Promise((r) => setTimeout(r, 0));
  // #32.3: every dropped address is released, once each (9001 of the removed pool "web"
  // included), and the kept one is not: fails if any one of them is skipped.
  assert.deepEqual(
    [...closed].sort(),
    ["127.0.0.1:8001", "127.0.0.1:8002", "127.0.0.1:9001"],
  );
  await runtime.stop();
  assert.equal(closed.at(-1), "*", "stop() closes the transport, and with it every connection");
});

Deno.test("ProxyRuntime: listener, limits and admin changes need a restart, listed against what runs", async () => {
  const runtime = new ProxyRuntime(config(), fakes().opts);
  const moved = config({
    listen: { protocol: "http3", port: 9999, tls: { cert: "cert.pem", key: "key.pem" } },
    limits: { max_connections: 10, drain_timeout_ms: 5 },
    admin: { port: 9890 },
    passive_health: { enabled: false },
  });
  assert.deepEqual(await runtime.reload(moved), [
    "listen.port",
    "limits.max_connections",
    "admin",
  ]);
  // Reverting before a restart: nothing is pending any more (the listeners
  // never changed), though the previous reload's file differed.
  assert.deepEqual(await runtime.reload(config()), []);
  await runtime.stop();
});

Deno.test("ProxyRuntime: every top-level key is applied on reload or named", async () => {
  const base = config();
  const changes: Record<string, [Record<string, unknown>, string[]]> = {
    listen: [{
      listen: {
        protocol: "http3",
        address: "127.0.0.2",
        port: 9889,
        max_streams: 5,
        idle_timeout_ms: 60000,
        tcp_fallback: true,
        tls: { cert: "other.pem", key: "other.key" },
      },
    }, [
      "listen.address",
      "listen.max_streams",
      "listen.idle_timeout_ms",
      "listen.tcp_fallback",
    ]],
    load_balancing: [{ load_balancing: { type: "random" } }, []],
    log: [{ log: { level: "debug", access: { format: "json" } } }, []], // main.ts applies it
    limits: [{
      limits: {
        max_header_list_size: 1000,
        max_request_body_bytes: 1,
        drain_timeout_ms: 1,
        request_idle_timeout_ms: 1000,
        handshake_timeout_ms: 1000,
        max_handshakes: 1,
        max_connections: 1,
        max_connections_per_address: 1,
        udp_receive_buffer: 0, // the socket is sized once, at startup
      },
    }, [
      "limits.max_header_list_size",
      "limits.max_request_body_bytes",
      "limits.request_idle_timeout_ms",
      "limits.handshake_timeout_ms",
      "limits.max_handshakes",
      "limits.max_connections",
      "limits.max_connections_per_address",
      "limits.udp_receive_buffer",
    ]],
    admin: [{ admin: { port: 1234 } }, ["admin"]],
    passive_health: [{ passive_health: { consecutive_failures: 1 } }, []],
    trusted_proxies: [{ trusted_proxies: ["10.0.0.0/8"] }, []], // the app is rebuilt with it
    rate_limits: [{
      rate_limits: [{ name: "l", requests_per_second: 1, burst: 1, key: "client" }],
    }, []], // the app is rebuilt with them (#30.1)
    upstream: [{}, []], // see "reload swaps routes" above
    dns: [{ dns: { servers: ["10.0.0.53"], timeout_ms: 1000 } }, []], // the resolver's (#30.5)
  };
  // A top-level key added to the schema must be classified here: applied, or named.
  assert.deepEqual(
    Object.keys(ConfigSchema.shape).filter((k) => k !== "version").sort(),
    Object.keys(changes).sort(),
  );
  for (const [key, [extra, expected]] of Object.entries(changes)) {
    const runtime = new ProxyRuntime(base, fakes().opts);
    const next = config(extra);
    assert.deepEqual(await runtime.reload(next), expected, key);
    assert.equal(runtime.config, next, key);
    await runtime.stop();
  }
});

Deno.test("ProxyRuntime: a passive_health change is applied at reload (new thresholds, no ejection kept)", async () => {
  const { opts } = fakes();
  const runtime = new ProxyRuntime(config({ passive_health: { enabled: false } }), opts);
  // Passive health off: a failing backend is never ejected.
  assert.equal(runtime.backends().some((b) => b.ejected), false);
  await runtime.reload(config({ passive_health: { consecutive_failures: 1, eject_ms: 60000 } }));
  // On now: one failure reported through the app's health ejects.
  const failing = new ProxyRuntime(config({ passive_health: { enabled: false } }), {
    ...opts,
    transport: {
      ...opts.transport,
      exchange: () => Promise.resolve({ status: 500, headers: [], body: null }),
    },
  });
  await failing.handler(get("/"));
  assert.equal(failing.backends().find((b) => b.id === "w1")!.ejected, false, "off: not ejected");
  await failing.reload(config({ passive_health: { consecutive_failures: 1, eject_ms: 60000 } }));
  await failing.handler(get("/"));
  assert.equal(failing.backends().find((b) => b.id === "w1")!.ejected, true, "on after reload");
  await runtime.stop();
  await failing.stop();
});

Deno.test("ProxyRuntime: load_balancing and trusted_proxies changed by a reload are in effect at once", async () => {
  const headersSeen: Array<ReadonlyArray<readonly [string, string]>> = [];
  const { calls, opts } = fakes();
  const inner = opts.transport;
  const transport: UpstreamTransport = {
    ...inner,
    exchange(req) {
      headersSeen.push(req.headers);
      return inner.exchange(req);
    },
  };
  const runtime = new ProxyRuntime(config(), { ...opts, transport });
  // round-robin (weights 100:50) spreads one path over both api backends.
  for (let i = 0; i < 6; i++) await runtime.handler(get("/api/same"));
  assert.equal(new Set(calls).size, 2);
  await runtime.reload(config({ load_balancing: { type: "consistent-hash", key: "path" } }));
  calls.length = 0;
  for (let i = 0; i < 6; i++) await runtime.handler(get("/api/same"));
  assert.equal(new Set(calls).size, 1, "consistent-hash on path: one backend for one path");

  // A client's own x-forwarded-for is replaced until its address is trusted.
  const fromProxy = (): IncomingRequest => ({
    ...get("/api/x"),
    head: { ...get("/api/x").head, fields: [["x-forwarded-for", "198.51.100.9"]] },
  });
  const xff = () => headersSeen.at(-1)!.find(([n]) => n === "x-forwarded-for")?.[1];
  await runtime.handler(fromProxy());
  assert.equal(xff(), "192.0.2.1");
  await runtime.reload(config({ trusted_proxies: ["192.0.2.0/24"] }));
  await runtime.handler(fromProxy());
  assert.equal(xff(), "198.51.100.9, 192.0.2.1");
  await runtime.stop();
});

Deno.test("ProxyRuntime: a pool's state survives an admin weight change and a reload; a removed pool's does not", async () => {
  const { opts } = fakes();
  // a1 refuses connections: one failure ejects it (passive health), and the
  // pool, left without an available backend, asks it anyway (panic mode).
  const transport: UpstreamTransport = {
    ...opts.transport,
    exchange: (req) =>
      req.address === "127.0.0.1:8001"
        ? Promise.reject(new UpstreamError("connect", "refused"))
        : opts.transport.exchange(req),
  };
  const upstream = (weight: number, pool = "api") => ({
    [pool]: {
      route: { path_prefix: "/api" },
      backends: [{ id: "a1", address: "127.0.0.1:8001", weight }],
    },
    web: { route: { path_prefix: "/" }, backends: [{ id: "w1", address: "127.0.0.1:9001" }] },
  });
  const passive = { passive_health: { consecutive_failures: 1, eject_ms: 60_000 } };
  const runtime = new ProxyRuntime(config(passive, upstream(100)), { ...opts, transport });
  const state = runtime.poolState("api");
  assert.equal((await runtime.handler(get("/api/x"))).status, 502); // a1 ejected
  assert.equal(state.panic, false);
  assert.equal((await runtime.handler(get("/api/x"))).status, 502); // asked in panic mode
  assert.equal(state.panic, true, "the handler's pool context carries the runtime's state");

  // The weight change rebuilds the handler: the state is the same object.
  assert.ok(runtime.setWeight("a1", 7));
  assert.equal(runtime.poolState("api"), state);
  assert.equal((await runtime.handler(get("/api/x"))).status, 502);
  assert.equal(state.panic, true);
  // So does a reload that keeps the pool.
  await runtime.reload(config(passive, upstream(40)));
  assert.equal(runtime.poolState("api"), state);
  assert.equal(state.panic, true);
  // A reload that removes the pool drops its state; the other pool's stays.
  const web = runtime.poolState("web");
  await runtime.reload(config(passive, upstream(40, "api2")));
  assert.notEqual(runtime.poolState("api"), state);
  assert.equal(runtime.poolState("web"), web);
  await runtime.stop();
});

Deno.test("#31.3: admin.token, admin.tokens and admin.allow apply on reload; the listener's keys still need a restart", async () => {
  const admin = { port: 9890, token: "t-0123456789abcdef" };
  const runtime = new ProxyRuntime(config({ admin }), fakes().opts);
  const callers = {
    admin: {
      ...admin,
      token: "t-fedcba9876543210",
      tokens: [{ token_file: "/etc/spooky/ops.token", role: "operator" }],
      allow: ["10.0.0.0/8"],
    },
  };
  assert.deepEqual(await runtime.reload(config(callers)), []);
  assert.deepEqual(await runtime.reload(config({ admin: { ...admin, audit_log: "/tmp/a" } })), [
    "admin",
  ]);
  await runtime.stop();
});
