/**
 * The Alt-Svc fallback: the same proxy application served over TCP+TLS
 * (HTTP/2 and HTTP/1.1 via `Deno.serve`) on the same port number, with
 * `alt-svc: h3=":<port>"; ma=86400` on every response so that ordinary
 * clients get through and browsers discover HTTP/3 (RFC 7838, RFC 9114 §3.1.1).
 *
 * @module
 */

import { type RequestHead, responseHasNoBody } from "../h3/mod.ts";
import type { RequestHandler } from "./types.ts";

/**
 * Adapts the proxy handler to `Deno.serve`.
 *
 * @example
 * ```ts
 * Deno.serve({ port, cert, key }, tcpFallbackHandler(runtime.handler, port));
 * ```
 */
export function tcpFallbackHandler(
  handler: RequestHandler,
  h3Port: number,
): (req: Request, info: Deno.ServeHandlerInfo) => Promise<Response> {
  const altSvc = `h3=":${h3Port}"; ma=86400`;
  return async (req, info) => {
    const url = new URL(req.url);
    const fields: Array<[string, string]> = [];
    for (const [name, value] of req.headers) fields.push([name, value]);
    const declared = req.headers.get("content-length");
    const head: RequestHead = {
      method: req.method,
      scheme: "https",
      authority: req.headers.get("host") ?? url.host,
      path: url.pathname + url.search,
      fields,
      contentLength: declared !== null && /^\d+$/.test(declared) ? Number(declared) : undefined,
    };
    const addr = info.remoteAddr as Deno.NetAddr;
    const res = await handler({
      head,
      body: req.body,
      remote: { hostname: addr.hostname, port: addr.port },
      signal: req.signal,
    });
    const headers = new Headers();
    for (const [name, value] of res.headers) headers.append(name, value);
    headers.set("alt-svc", altSvc);
    let body: BodyInit | null = null;
    if (!responseHasNoBody(req.method, res.status)) {
      body = res.body as BodyInit | null;
    } else if (res.body instanceof ReadableStream) {
      res.body.cancel().catch(() => {});
    }
    return new Response(body, { status: res.status, headers });
  };
}
