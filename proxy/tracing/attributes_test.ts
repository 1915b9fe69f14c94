import assert from "node:assert/strict";
import type { IncomingRequest } from "../server/types.ts";
import type { UpstreamRequest } from "../upstream/transport.ts";
import {
  clientSpanAttributes,
  hostAndPort,
  protocolVersion,
  serverSpanAttributes,
  urlPath,
} from "./attributes.ts";

function request(fields: Array<[string, string]>, listener?: "h3" | "tcp"): IncomingRequest {
  return {
    head: { method: "GET", scheme: "https", path: "/a/b?c=d", fields },
    body: null,
    remote: { hostname: "192.0.2.7", port: 50000 },
    listener,
    signal: new AbortController().signal,
  };
}

Deno.test("#31.1: protocolVersion: 3 on HTTP/3; on the TCP fallback 1.1 with a host field, else 2", () => {
  assert.equal(protocolVersion(request([["host", "x"]])), "3");
  assert.equal(protocolVersion(request([["host", "x"]], "tcp")), "1.1");
  assert.equal(protocolVersion(request([["accept", "*/*"]], "tcp")), "2");
});

Deno.test("#31.1: urlPath: no query, secrets redacted as in the logs", () => {
  assert.equal(urlPath("/a/b?token=x"), "/a/b");
  assert.equal(urlPath(undefined), "/");
  assert.equal(urlPath("/payments/tokens/tok_abcdefgh1234"), "/payments/tokens/[REDACTED]");
});

Deno.test("#31.1: serverSpanAttributes: the semantic conventions' names; ints are ints", () => {
  assert.deepEqual(serverSpanAttributes(request([["user-agent", "ua/1"]], "tcp")), {
    "http.request.method": "GET",
    "url.scheme": "https",
    "url.path": "/a/b",
    "network.protocol.name": "http",
    "network.protocol.version": "2",
    "client.address": "192.0.2.7",
    "client.port": 50000n,
    "user_agent.original": "ua/1",
  });
});

Deno.test("#31.1: clientSpanAttributes: backend, address, port and attempt; resend_count from the second", () => {
  const req = { method: "POST" } as UpstreamRequest;
  const backend = { id: "b1", address: "[::1]:8443", weight: 1 };
  assert.deepEqual(clientSpanAttributes(req, backend, 2), {
    "http.request.method": "POST",
    "server.address": "::1",
    "network.protocol.name": "http",
    "spooky.backend.id": "b1",
    "spooky.attempt": 2n,
    "server.port": 8443n,
    "http.request.resend_count": 1n,
  });
  assert.deepEqual(hostAndPort("backend.internal:80"), { host: "backend.internal", port: 80 });
});
