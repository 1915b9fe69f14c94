/**
 * The dispatching transport: `protocol` picks HTTP/2 or HTTP/1.1; `auto`
 * (TLS) follows the backend's ALPN choice, against real TLS servers on
 * loopback (`Deno.serve`, offering h2 and http/1.1; a raw TLS listener
 * offering only http/1.1).
 *
 * @module
 */

import assert from "node:assert/strict";
import { testCerts } from "../../tests/support/proxy_process.ts";
import { createDispatchTransport } from "./dispatch_transport.ts";
import { failure, text } from "./_test_util.ts";
import type { UpstreamRequest } from "./transport.ts";

const enc = new TextEncoder();

/** A TLS listener offering only ALPN http/1.1 that answers every request with its ALPN and a keep-alive 200. */
async function h1OnlyTls(): Promise<{ address: string; close(): void }> {
  const certs = await testCerts();
  const listener = Deno.listenTls({
    hostname: "127.0.0.1",
    port: 0,
    cert: await Deno.readTextFile(certs.certPath),
    key: await Deno.readTextFile(certs.keyPath),
    alpnProtocols: ["http/1.1"],
  });
  const conns: Deno.Conn[] = [];
  (async () => {
    for await (const conn of listener) {
      conns.push(conn);
      (async () => {
        const buf = new Uint8Array(16384);
        let got = "";
        for (;;) {
          const n = await conn.read(buf);
          if (n === null) return;
          got += new TextDecoder().decode(buf.subarray(0, n));
          while (got.includes("\r\n\r\n")) {
            got = got.slice(got.indexOf("\r\n\r\n") + 4);
            await conn.write(enc.encode("HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhttp1"));
          }
        }
      })().catch(() => {});
    }
  })().catch(() => {});
  return {
    address: `127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    close() {
      listener.close();
      for (const c of conns) {
        try {
          c.close();
        } catch { /* closed */ }
      }
    },
  };
}

function req(address: string, over: Partial<UpstreamRequest>): UpstreamRequest {
  return {
    address,
    method: "GET",
    path: "/",
    authority: "localhost",
    headers: [],
    body: null,
    timeoutMs: 10_000,
    ...over,
  };
}

Deno.test({
  name: "#29.1: auto follows ALPN (h2 or http/1.1); http1 and h2 over TLS as configured",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const certs = await testCerts();
    const tls = { ca: certs.caPath, server_name: "localhost" };
    // Deno.serve offers h2 and http/1.1: every protocol setting gets through.
    const both = Deno.serve({
      hostname: "127.0.0.1",
      port: 0,
      cert: await Deno.readTextFile(certs.certPath),
      key: await Deno.readTextFile(certs.keyPath),
      onListen() {},
    }, () => new Response("served"));
    const h1only = await h1OnlyTls();
    const t = createDispatchTransport();
    try {
      const bothAddr = `127.0.0.1:${both.addr.port}`;
      for (const protocol of ["auto", "h2", "http1"] as const) {
        const res = await t.exchange(req(bothAddr, { tls, protocol }));
        assert.equal(res.status, 200, protocol);
        assert.equal(await text(res), "served", protocol);
      }
      const auto = await t.exchange(req(h1only.address, { tls, protocol: "auto" }));
      assert.equal(await text(auto), "http1", "an http/1.1-only backend: auto speaks HTTP/1.1");
      const h1 = await t.exchange(req(h1only.address, { tls, protocol: "http1" }));
      assert.equal(await text(h1), "http1");
      // Asked for h2, it refuses: nothing was sent (`connect`).
      const err = await failure(t.exchange(req(h1only.address, { tls, protocol: "h2" })));
      assert.equal(err.kind, "connect");
      assert.match(err.message, /ALPN|NoApplicationProtocol/);
    } finally {
      await t.close();
      h1only.close();
      await both.shutdown();
    }
  },
});
