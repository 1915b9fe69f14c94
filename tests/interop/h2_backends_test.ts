/**
 * Interop of the proxy's own HTTP/2 client (`proxy/h2/` through
 * `proxy/upstream/h2_transport.ts`) with servers nobody here wrote: nghttpd
 * (nghttp2), Node's own `http2` server (run by `node`), Caddy (h2c and TLS
 * with ALPN h2), `Deno.serve` (h2c), and the payments service. Each server
 * gets the same exchanges: small and 1 MiB files byte for byte, HEAD, 404,
 * 32 concurrent downloads, and (where it echoes) 256 KiB and streamed uploads.
 *
 * @module
 */

import assert from "node:assert/strict";
import { createH2Transport } from "../../proxy/upstream/h2_transport.ts";
import type {
  UpstreamRequest,
  UpstreamResponse,
  UpstreamTransport,
} from "../../proxy/upstream/transport.ts";
import { testCerts } from "../support/proxy_process.ts";
import {
  type Server,
  startCaddy,
  startDenoServe,
  startNghttpd,
  startNodeServer,
  startPayments,
  testSite,
} from "./_servers.ts";

async function bytes(res: UpstreamResponse): Promise<Uint8Array> {
  if (res.body === null) return new Uint8Array(0);
  if (res.body instanceof Uint8Array) return res.body;
  return new Uint8Array(await new Response(res.body).arrayBuffer());
}

function req(address: string, over: Partial<UpstreamRequest> = {}): UpstreamRequest {
  return {
    address,
    method: "GET",
    path: "/small.txt",
    authority: "127.0.0.1",
    headers: [["user-agent", "spooky-interop"]],
    body: null,
    timeoutMs: 20_000,
    ...over,
  };
}

/** A streamed body of `total` bytes in 10 KiB chunks. */
function streamed(total: number): { body: ReadableStream<Uint8Array>; sent: Uint8Array } {
  const sent = new Uint8Array(total);
  for (let i = 0; i < total; i++) sent[i] = (i * 13) & 0xff;
  let at = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(c) {
      if (at >= total) return c.close();
      c.enqueue(sent.slice(at, at + 10_240));
      at += 10_240;
    },
  }, { highWaterMark: 0 });
  return { body, sent };
}

/** The common exchanges against one server. */
async function exercise(t: UpstreamTransport, address: string, echo: boolean): Promise<void> {
  const site = await testSite();
  const small = await t.exchange(req(address));
  assert.equal(small.status, 200);
  assert.deepEqual(await bytes(small), site.small);

  const big = await t.exchange(req(address, { path: "/big.bin" }));
  assert.equal(big.status, 200);
  assert.ok(big.body instanceof ReadableStream, "1 MiB streams");
  assert.deepEqual(await bytes(big), site.big);

  const head = await t.exchange(req(address, { method: "HEAD" }));
  assert.equal(head.status, 200);
  assert.equal(head.body, null);

  const missing = await t.exchange(req(address, { path: "/nothing-here.txt" }));
  assert.equal(missing.status, 404);
  await bytes(missing);

  const many = await Promise.all(
    Array.from(
      { length: 32 },
      (_, i) =>
        t.exchange(req(address, { path: i % 4 === 0 ? "/big.bin" : "/small.txt" })).then(bytes),
    ),
  );
  many.forEach((b, i) => assert.deepEqual(b, i % 4 === 0 ? site.big : site.small, `#${i}`));

  if (!echo) return;
  const up = new Uint8Array(256 * 1024).map((_, i) => i & 0xff);
  const echoed = await t.exchange(req(address, { method: "POST", path: "/echo", body: up }));
  assert.equal(echoed.status, 200);
  assert.deepEqual(await bytes(echoed), up);
  const s = streamed(300 * 1024);
  const echoed2 = await t.exchange(req(address, { method: "PUT", path: "/echo", body: s.body }));
  assert.equal(echoed2.status, 200);
  assert.deepEqual(await bytes(echoed2), s.sent);
}

async function against(
  start: () => Promise<Server>,
  echo: boolean,
  tls?: (address: string) => { caCerts?: string[] } | undefined,
): Promise<void> {
  const server = await start();
  const t = createH2Transport({ tlsFor: tls });
  try {
    await exercise(t, server.address, echo);
  } finally {
    await t.close();
    await server.close();
  }
}

const test = (name: string, fn: () => Promise<void>) =>
  Deno.test({ name: `interop: ${name}`, sanitizeOps: false, sanitizeResources: false, fn });

test("nghttpd (h2c)", () => against(() => startNghttpd(), true));

test("nghttpd with 2 concurrent streams and 1 KiB windows: limits and flow control of a real peer", async () => {
  const server = await startNghttpd({ maxConcurrentStreams: 2, windowBits: 10 });
  const t = createH2Transport({ maxSessionsPerAddress: 1 });
  try {
    await exercise(t, server.address, true);
  } finally {
    await t.close();
    await server.close();
  }
});

test("nghttpd over TLS (ALPN h2)", async () => {
  const certs = await testCerts();
  const ca = await Deno.readTextFile(certs.caPath);
  await against(() => startNghttpd({ tls: certs }), true, () => ({ caCerts: [ca] }));
});

test("Node's http2 server (node), with response trailers", async () => {
  const server = await startNodeServer();
  const t = createH2Transport();
  try {
    await exercise(t, server.address, true);
    // The request's fields reach Node exactly, nothing added.
    const res = await t.exchange(req(server.address, {
      path: "/headers",
      headers: [["x-a", "1"], ["x-b", "two"]],
    }));
    const seen = JSON.parse(new TextDecoder().decode(await bytes(res)));
    assert.deepEqual(
      Object.keys(seen).filter((k) => !k.startsWith(":")).sort(),
      ["x-a", "x-b"],
    );
    // `/echo` ends with a trailer section: exposed once the body has ended.
    const echo = await t.exchange(req(server.address, {
      method: "POST",
      path: "/echo",
      body: new TextEncoder().encode("trailers"),
    }));
    assert.equal(new TextDecoder().decode(await bytes(echo)), "trailers");
    assert.deepEqual(echo.trailers, [["x-trailer", "done"]]);
  } finally {
    await t.close();
    await server.close();
  }
});

test("Caddy (h2c)", () => against(() => startCaddy(), false));

test("Caddy over TLS (ALPN h2)", async () => {
  const certs = await testCerts();
  const ca = await Deno.readTextFile(certs.caPath);
  await against(() => startCaddy(certs), false, () => ({ caCerts: [ca] }));
});

test("a TLS backend whose certificate the CA does not sign fails `connect`", async () => {
  const certs = await testCerts();
  const server = await startCaddy(certs);
  const t = createH2Transport({ tlsFor: () => ({}) }); // system roots only
  try {
    await assert.rejects(t.exchange(req(server.address)), (e: Error & { kind?: string }) => {
      assert.equal(e.kind, "connect", e.message);
      return true;
    });
  } finally {
    await t.close();
    await server.close();
  }
});

test("Deno.serve (h2c)", () => against(() => startDenoServe(), true));

test("the payments service: token, a charge, its capture, idempotent replay", async () => {
  const token = "interop-token";
  const server = await startPayments(token);
  const t = createH2Transport();
  const call = async (
    method: string,
    path: string,
    body?: unknown,
    extra: [string, string][] = [],
  ) => {
    const res = await t.exchange(req(server.address, {
      method,
      path: `/vendor/v4${path}`,
      headers: [
        ["authorization", `Bearer ${token}`],
        ["content-type", "application/json"],
        ...extra,
      ],
      body: body === undefined ? null : new TextEncoder().encode(JSON.stringify(body)),
    }));
    const text = new TextDecoder().decode(await bytes(res));
    return { status: res.status, json: text ? JSON.parse(text) : null };
  };
  try {
    const card = { number: "4012888888881881", expMonth: 11, expYear: 2039, cvc: "987", name: "I" };
    const charge = await call("POST", "/payments/charges", {
      amount: "12.34",
      currency: "USD",
      card,
    }, [["request-id", "interop-1"]]);
    assert.equal(charge.status, 201, JSON.stringify(charge.json));
    const again = await call("POST", "/payments/charges", {
      amount: "12.34",
      currency: "USD",
      card,
    }, [["request-id", "interop-1"]]);
    assert.equal(again.json.id, charge.json.id, "the Request-Id replay returns the same charge");
    const cap = await call("POST", `/payments/charges/${charge.json.id}/capture`, {});
    assert.equal(cap.json.status, "CAPTURED");
    const unauth = await t.exchange(
      req(server.address, { path: `/vendor/v4/payments/charges/${charge.json.id}` }),
    );
    assert.equal(unauth.status, 401);
    await bytes(unauth);
  } finally {
    await t.close();
    await server.close();
  }
});
