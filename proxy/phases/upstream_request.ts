/**
 * Phase 4, upstream request: what the backend is sent for a routed request
 * (pingora's `upstream_request_filter`): the client's fields translated
 * for HTTP/2 with the forwarding fields (`upstream/headers.ts`), and the
 * body, read whole when it is small and of declared length (so that it
 * keeps its `content-length` and can be sent again on a retry), else
 * streamed.
 *
 * @example
 * ```ts
 * import type { IncomingRequest } from "../server/types.ts";
 * declare const req: IncomingRequest;
 *
 * const headers = upstreamHeaders(req, "example.com", () => false);
 * const body = await upstreamBody(req, headers); // bytes, a stream, or null
 * ```
 *
 * @module
 */

import { readUpTo } from "../../shared/bytes.ts";
import type { IncomingRequest } from "../server/types.ts";
import { upstreamRequestHeaderList } from "../upstream/headers.ts";
import { applyHeaderRules, type HeaderRules } from "./header_rules.ts";

/** Bodies up to this size with a declared length are read whole, so they keep their content-length and can be retried. */
export const BUFFER_BODY_LIMIT = 64 * 1024;

/** The body sent upstream: whole bytes, a stream, or none. */
export type UpstreamBody = Uint8Array | ReadableStream<Uint8Array> | null;

/**
 * The fields sent to the backend. `isTrustedProxy` says whether the
 * client's address is in `trusted_proxies` (its forwarding fields are then
 * kept and ours appended; otherwise they are replaced). The pool's
 * `headers.request` rules (`rules`, `null` for none) apply last, to the
 * forwarding fields too; `set.host` replaces `host`, while
 * `x-forwarded-host` and `forwarded` keep the client's authority.
 */
export function upstreamHeaders(
  req: IncomingRequest,
  authority: string | undefined,
  isTrustedProxy: ((ip: string) => boolean) | undefined,
  rules: HeaderRules | null = null,
): Array<[string, string]> {
  const ip = req.remote.hostname;
  const trusted = isTrustedProxy?.(ip) ?? false;
  const fields = upstreamRequestHeaderList(req.head.fields, { ip, authority, trusted });
  return rules === null ? fields : applyHeaderRules(fields, rules);
}

/**
 * The authority the backend is sent (`:authority`): the pool's
 * `headers.request.set.host` when set, else the client's.
 */
export function upstreamAuthority(
  authority: string | undefined,
  rules: HeaderRules | null,
): string | undefined {
  return rules?.host ?? authority;
}

/**
 * The body sent to the backend, and its `content-length` pushed onto
 * `headers` when it is known: a promise only when a small body is read
 * whole (it rejects when the client sends more than it declared).
 */
export function upstreamBody(
  req: IncomingRequest,
  headers: Array<[string, string]>,
): UpstreamBody | Promise<UpstreamBody> {
  const body = req.body;
  if (req.head.method === "HEAD") {
    // HEAD content has no meaning (RFC 9110 §9.3.2) and is not forwarded.
    // A backend answers a HEAD at once and closes the stream, so content
    // still in flight hits a closed stream; hyper's h2 forgets closed
    // streams past ten, and then ends the whole connection, every other
    // request on it included, on a trailer section (PROTOCOL_ERROR). The
    // client's content is read and dropped.
    if (body !== null) body.pipeTo(new WritableStream()).catch(() => {});
    return null;
  }
  const declared = req.head.contentLength;
  if (body === null || declared === undefined) return body;
  if (declared <= BUFFER_BODY_LIMIT) return readWhole(body, declared, headers);
  headers.push(["content-length", String(declared)]);
  return body;
}

async function readWhole(
  body: ReadableStream<Uint8Array>,
  declared: number,
  headers: Array<[string, string]>,
): Promise<Uint8Array> {
  const bytes = await readUpTo(body, declared);
  if (bytes === null) throw new Error("body larger than declared");
  headers.push(["content-length", String(bytes.length)]);
  return bytes;
}
