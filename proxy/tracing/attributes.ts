/**
 * The attributes of the proxy's spans, named by the OpenTelemetry semantic
 * conventions for HTTP (`http.*`, `url.*`, `client.*`, `server.*`,
 * `network.*`, `user_agent.*`), and the proxy's own under `spooky.*`.
 *
 * @example
 * ```ts
 * import type { IncomingRequest } from "../server/types.ts";
 * declare const req: IncomingRequest;
 *
 * serverSpanAttributes(req)["url.path"]; // the path, query dropped, secrets redacted
 * protocolVersion(req); // "3" on HTTP/3
 * ```
 *
 * @module
 */

import type { Attributes, AttributeValue } from "@opentelemetry/api";
import { redactText } from "../../shared/logging.ts";
import { intAttribute } from "../../shared/telemetry.ts";
import type { BackendRef } from "../balancer/types.ts";
import type { IncomingRequest } from "../server/types.ts";
import type { UpstreamRequest } from "../upstream/transport.ts";

/** `n` as an integer attribute (see `shared/telemetry.ts`). */
export const int: (n: number) => AttributeValue = intAttribute;

/**
 * `network.protocol.version` of a request: `3` on HTTP/3; on the TCP
 * fallback `1.1` when it carries a `host` field, else `2`. `Deno.serve`
 * does not say which protocol a request came by: an HTTP/2 request's
 * authority is its `:authority`, which clients send instead of `host`
 * (RFC 9113 §8.3.1), while an HTTP/1.1 request must carry `host` (RFC 9112
 * §3.2).
 */
export function protocolVersion(req: IncomingRequest): "3" | "2" | "1.1" {
  if (req.listener !== "tcp") return "3";
  return req.head.fields.some(([name]) => name === "host") ? "1.1" : "2";
}

/** The path of `:path` without its query, redacted as the logs redact paths (`shared/logging.ts`). */
export function urlPath(path: string | undefined): string {
  const p = path ?? "/";
  const q = p.indexOf("?");
  return redactText(q === -1 ? p : p.slice(0, q));
}

/** The SERVER span's attributes known when the request arrives. */
export function serverSpanAttributes(req: IncomingRequest): Attributes {
  const head = req.head;
  const attrs: Attributes = {
    "http.request.method": head.method,
    "url.scheme": head.scheme ?? "https",
    "url.path": urlPath(head.path),
    "network.protocol.name": "http",
    "network.protocol.version": protocolVersion(req),
    "client.address": req.remote.hostname,
    "client.port": int(req.remote.port),
  };
  const agent = head.fields.find(([name]) => name === "user-agent")?.[1];
  if (agent !== undefined) attrs["user_agent.original"] = agent;
  return attrs;
}

/** Host and port of a backend's `host:port` address (IPv6 in brackets); port `undefined` when absent. */
export function hostAndPort(address: string): { host: string; port: number | undefined } {
  const colon = address.lastIndexOf(":");
  const close = address.lastIndexOf("]");
  if (colon === -1 || colon < close) {
    return { host: address.replace(/^\[|\]$/g, ""), port: undefined };
  }
  const port = Number(address.slice(colon + 1));
  return {
    host: address.slice(0, colon).replace(/^\[|\]$/g, ""),
    port: Number.isInteger(port) ? port : undefined,
  };
}

/** A CLIENT span's attributes: the backend and which attempt of the request this is (1 first). */
export function clientSpanAttributes(
  request: UpstreamRequest,
  backend: BackendRef,
  attempt: number,
): Attributes {
  const { host, port } = hostAndPort(backend.address);
  const attrs: Attributes = {
    "http.request.method": request.method,
    "server.address": host,
    "network.protocol.name": "http",
    "spooky.backend.id": backend.id,
    "spooky.attempt": int(attempt),
  };
  if (port !== undefined) attrs["server.port"] = int(port);
  if (attempt > 1) attrs["http.request.resend_count"] = int(attempt - 1);
  return attrs;
}
