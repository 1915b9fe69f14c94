/**
 * #30.5: ResolvingTransport: an exchange to a name goes to its endpoints in
 * turn (the name kept as TLS server name), an address used as it is passes
 * unchanged, a connect failure sends the next ones elsewhere, and endpoints
 * that left the answer, or a name that left the configuration, are
 * released on the transport underneath.
 */
import assert from "node:assert/strict";
import { ConfigSchema } from "../config/schema.ts";
import {
  UpstreamError,
  type UpstreamRequest,
  type UpstreamTransport,
} from "../upstream/transport.ts";
import { BackendResolver } from "./backend_resolver.ts";
import type { LookupAnswer } from "./lookup.ts";
import { ResolvingTransport } from "./resolving_transport.ts";

const configOf = (...addresses: string[]) =>
  ConfigSchema.parse({
    version: 1,
    listen: { protocol: "http3", tls: { cert: "c", key: "k" } },
    upstream: {
      p: {
        route: { path_prefix: "/" },
        backends: addresses.map((address, i) => ({ id: `b${i}`, address })),
      },
    },
  });

function setup(failing = new Set<string>()) {
  const answers = new Map<string, string[]>();
  const timers: Array<() => void> = [];
  const resolver = new BackendResolver({
    lookup: (host) => {
      const a = answers.get(host) ?? [];
      return Promise.resolve<LookupAnswer>({
        v4: a.length > 0
          ? { kind: "addresses", addresses: a, ttlSeconds: 60 }
          : { kind: "none", message: "no record" },
        v6: { kind: "none", message: "no record" },
      });
    },
    setTimeout: (fn) => timers.push(fn),
    clearTimeout: () => {},
  });
  const sent: UpstreamRequest[] = [];
  const released: string[] = [];
  const inner: UpstreamTransport = {
    exchange(req) {
      sent.push(req);
      if (failing.has(req.address)) {
        return Promise.reject(new UpstreamError("connect", "connection refused"));
      }
      return Promise.resolve({ status: 200, headers: [], body: null });
    },
    release: (address) => void released.push(address),
    close: () => Promise.resolve(),
  };
  const refresh = async () => {
    for (const fn of timers.splice(0)) fn();
    for (let i = 0; i < 5; i++) await Promise.resolve();
  };
  return {
    resolver,
    transport: new ResolvingTransport(inner, resolver),
    answers,
    sent,
    released,
    refresh,
  };
}

const request = (address: string, tls?: UpstreamRequest["tls"]): UpstreamRequest => ({
  address,
  tls,
  method: "GET",
  path: "/",
  authority: "site.test",
  headers: [],
  body: null,
  timeoutMs: 1000,
});

Deno.test("#30.5: resolving transport: a name's exchanges go to its endpoints in turn; an IP passes as it is", async () => {
  const t = setup();
  t.answers.set("api.internal", ["10.0.0.1", "10.0.0.2"]);
  await t.resolver.update(configOf("api.internal:8443", "10.9.9.9:80"));
  for (let i = 0; i < 3; i++) await t.transport.exchange(request("api.internal:8443", {}));
  await t.transport.exchange(request("10.9.9.9:80"));
  assert.deepEqual(t.sent.map((r) => r.address), [
    "10.0.0.1:8443",
    "10.0.0.2:8443",
    "10.0.0.1:8443",
    "10.9.9.9:80",
  ]);
  assert.deepEqual(t.sent[0].tls, { server_name: "api.internal" }, "the name stays the SNI");
  const own = await t.transport.exchange(request("api.internal:8443", { server_name: "x.test" }))
    .then(() => t.sent.at(-1)!.tls);
  assert.deepEqual(own, { server_name: "x.test" }, "a configured server_name wins");
  assert.equal(t.sent[3].tls, undefined);
  t.resolver.stop();
});

Deno.test("#30.5: resolving transport: an endpoint whose connection failed is passed over by the next requests", async () => {
  const t = setup(new Set(["10.0.0.1:80"]));
  t.answers.set("api.internal", ["10.0.0.1", "10.0.0.2"]);
  await t.resolver.update(configOf("api.internal:80"));
  await assert.rejects(t.transport.exchange(request("api.internal:80")), UpstreamError);
  for (let i = 0; i < 3; i++) await t.transport.exchange(request("api.internal:80"));
  assert.deepEqual(t.sent.map((r) => r.address), [
    "10.0.0.1:80",
    "10.0.0.2:80",
    "10.0.0.2:80",
    "10.0.0.2:80",
  ]);
  t.resolver.stop();
});

Deno.test("#30.5: resolving transport: endpoints that left the answer and names that left the configuration are released", async () => {
  const t = setup();
  t.answers.set("api.internal", ["10.0.0.1", "10.0.0.2"]);
  await t.resolver.update(configOf("api.internal:80", "10.0.0.7:80"));
  t.answers.set("api.internal", ["10.0.0.2", "10.0.0.3"]);
  await t.refresh();
  assert.deepEqual(t.released, ["10.0.0.1:80"], "the endpoint that left drains");
  await t.transport.exchange(request("api.internal:80"));
  assert.notEqual(t.sent.at(-1)!.address, "10.0.0.1:80");
  // The name leaves the configuration; the runtime releases it once its requests are done.
  await t.resolver.update(configOf("10.0.0.7:80", "10.0.0.3:80"));
  t.transport.release("api.internal:80");
  assert.deepEqual(
    t.released,
    ["10.0.0.1:80", "10.0.0.2:80"],
    "10.0.0.3 is a backend's own address",
  );
  t.transport.release("10.0.0.9:80");
  assert.deepEqual(
    t.released.at(-1),
    "10.0.0.9:80",
    "an address used as it is is released as it is",
  );
  t.resolver.stop();
});

Deno.test("#30.5: resolving transport: WebSocket tunnels go to the endpoints too; connection counters pass through", async () => {
  const t = setup();
  t.answers.set("ws.internal", ["10.0.0.5"]);
  await t.resolver.update(configOf("ws.internal:80"));
  const tunnels: string[] = [];
  const inner: UpstreamTransport = {
    exchange: () => Promise.reject(new Error("not used")),
    websocket: (req) => {
      tunnels.push(req.address);
      return Promise.resolve({ status: 200, headers: [], body: null });
    },
    release: () => {},
    close: () => Promise.resolve(),
  };
  const transport = new ResolvingTransport(inner, t.resolver);
  await transport.websocket(request("ws.internal:80"));
  assert.deepEqual(tunnels, ["10.0.0.5:80"]);
  assert.deepEqual(transport.connections(), [], "none kept underneath: none");
  t.resolver.stop();
});
