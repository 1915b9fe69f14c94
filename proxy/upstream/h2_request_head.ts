/**
 * The HEADERS an HTTP/2 exchange opens its stream with: a request's head
 * exactly as given, or a WebSocket's extended CONNECT (RFC 8441 §4-5:
 * `:method CONNECT`, `:protocol websocket`, `:scheme`, `:authority`, `:path`,
 * without the HTTP/1.1 handshake's `Sec-WebSocket-Key`).
 *
 * @example
 * ```ts
 * import type { UpstreamRequest } from "./transport.ts";
 * declare const req: UpstreamRequest;
 * requestFields(req, "http"); // [[":method", "GET"], [":scheme", "http"], …]
 * h2WebSocketFields(req, "http"); // [[":method", "CONNECT"], [":protocol", "websocket"], …]
 * ```
 *
 * @module
 */

import { H1_HANDSHAKE_FIELDS, WEBSOCKET_PROTOCOL } from "../http/mod.ts";
import type { UpstreamRequest } from "./transport.ts";

/**
 * The request head as sent: the method, path, authority and fields exactly
 * as given (nothing added or dropped). With no authority at all (neither
 * `:authority` nor `host`) the backend's address is sent as `:authority`, as
 * node:http2 does (servers reject a request with neither).
 */
export function requestFields(
  req: UpstreamRequest,
  scheme: "http" | "https",
): Array<[string, string]> {
  const fields: Array<[string, string]> = [[":method", req.method], [":scheme", scheme]];
  if (req.authority !== undefined) fields.push([":authority", req.authority]);
  else if (!req.headers.some((f) => f[0] === "host")) fields.push([":authority", req.address]);
  fields.push([":path", req.path]);
  for (const f of req.headers) fields.push([f[0], f[1]]);
  return fields;
}

/**
 * The extended CONNECT head of a WebSocket (RFC 8441 §4-5). `:authority` is
 * required there: the request's, else its `host` field (then not sent
 * twice), else the backend's address.
 */
export function h2WebSocketFields(
  req: UpstreamRequest,
  scheme: "http" | "https",
): Array<[string, string]> {
  const authority = req.authority ?? req.headers.find(([n]) => n === "host")?.[1] ??
    req.address;
  const fields: Array<[string, string]> = [
    [":method", "CONNECT"],
    [":protocol", WEBSOCKET_PROTOCOL],
    [":scheme", scheme],
    [":authority", authority],
    [":path", req.path],
  ];
  for (const [name, value] of req.headers) {
    if (name === "host" || H1_HANDSHAKE_FIELDS.has(name)) continue;
    fields.push([name, value]);
  }
  return fields;
}
