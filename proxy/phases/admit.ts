/**
 * Phase 1, admit: the proxy's own rules on a decoded request before it is
 * routed (pingora's `request_filter`): methods it never forwards, the
 * scheme, an ambiguous request target, an authority no origin can have.
 * A refused request is answered here and reaches no backend.
 *
 * @example
 * ```ts
 * import type { RequestHead } from "../http/mod.ts";
 * declare const head: RequestHead;
 *
 * const path = head.path ?? "/";
 * const refused = admit(head, path, requestAuthority(head));
 * if (refused !== null) refused.status; // 400, 501
 * ```
 *
 * @module
 */

import { type RequestHead, WEBSOCKET_PROTOCOL } from "../http/mod.ts";
import { checkAuthority, checkRequestTarget } from "../router/request_target.ts";

/** Why the proxy answers a request itself: the status, the JSON body's `error`, and a message. */
export interface Refusal {
  /** Status sent. */
  readonly status: number;
  /** `error` of the JSON body. */
  readonly error: string;
  /** `message` of the JSON body. */
  readonly message: string;
}

/**
 * Methods the proxy answers itself, never forwarding them: TRACE and TRACK
 * would echo the request, cookies and credentials included, back to a page
 * (cross-site tracing), and CONNECT asks for a tunnel to any address, which
 * the proxy does not offer. 501: not supported here (RFC 9110 §15.6.2). The
 * one CONNECT it forwards is the extended CONNECT of a WebSocket (`:protocol
 * websocket`, RFC 8441 / RFC 9220), routed like a GET of its `:path`.
 */
const NOT_FORWARDED = new Set(["TRACE", "TRACK", "CONNECT"]);

/** `:authority`, or the `host` field when there is none. */
export function requestAuthority(head: RequestHead): string | undefined {
  return head.authority ?? head.fields.find(([n]) => n === "host")?.[1];
}

/**
 * Why the request is refused, or `null` to route it. `path` is `:path`
 * (`/` when absent), `authority` what {@link requestAuthority} found.
 */
export function admit(
  head: RequestHead,
  path: string,
  authority: string | undefined,
): Refusal | null {
  if (NOT_FORWARDED.has(head.method.toUpperCase())) {
    if (head.protocol === WEBSOCKET_PROTOCOL && head.method === "CONNECT") {
      // a WebSocket: the rules below hold for it as for any request
    } else if (head.protocol !== undefined) {
      return refusal(
        501,
        "not_implemented",
        `the proxy does not forward extended CONNECT for ${JSON.stringify(head.protocol)}`,
      );
    } else {
      return refusal(501, "not_implemented", `the proxy does not forward ${head.method} requests`);
    }
  }
  // HTTP/3 carries https URIs here: the proxy is their origin's front
  // (RFC 9114 §3.1); anything else would be forwarded under a false scheme.
  if (head.scheme !== "https") {
    return refusal(400, "bad_request", `unsupported :scheme ${JSON.stringify(head.scheme)}`);
  }
  const ambiguous = checkRequestTarget(path);
  if (ambiguous !== null) return refusal(400, "bad_request", ambiguous);
  // An authority no origin can have (port 99999) would fail at the backend
  // and be counted against it: the client's fault, answered here.
  const badAuthority = authority === undefined ? null : checkAuthority(authority);
  if (badAuthority !== null) return refusal(400, "bad_request", badAuthority);
  return null;
}

/** A {@link Refusal}. */
export function refusal(status: number, error: string, message: string): Refusal {
  return { status, error, message };
}
