/**
 * Which request targets the proxy routes. The proxy routes on `:path` and
 * forwards that same `:path` byte for byte, so a path must mean one thing to
 * every party: a target that a backend (or another proxy) could read as a
 * different path than the router did is refused with 400 rather than
 * normalized. Refused, with the rule that applies:
 *
 * - dot segments, `.` and `..`, also percent-encoded (`%2e%2e`, `.%2E`):
 *   RFC 3986 §5.2.4 removes them, so `/pub/../secret` means `/secret`;
 * - an encoded slash or backslash in the path (`%2F`, `%5C`) and a raw
 *   backslash: servers differ on whether they separate segments;
 * - `#`: a fragment is never sent (RFC 9110 §7.1), so it cannot be part of a target;
 * - spaces, control characters, non-ASCII octets and the printable
 *   characters a URI never holds (`"`, `<`, `>`, `^`, the backtick, `{`, `|`,
 *   `}`): not allowed in a URI
 *   (RFC 3986 §2), rewritten or refused differently by different stacks (an
 *   HTTP/2 backend may even answer them with a stream error);
 * - a `%` not followed by two hex digits (RFC 3986 §2.1).
 *
 * The authority (`:authority`, or `host` without it) is checked too
 * ({@link checkAuthority}): one that names no reachable origin, such as port
 * 99999, would otherwise be forwarded and fail at the backend, which the
 * proxy would then count against a healthy backend.
 *
 * @example
 * ```ts
 * import { checkRequestTarget } from "./request_target.ts";
 * checkRequestTarget("/pub/a?x=1"); // null: fine
 * checkRequestTarget("/pub/../secret"); // "dot segment in the path (RFC 3986 §5.2.4)"
 * checkAuthority("localhost:99999"); // "port 99999 is not in 0-65535 (RFC 3986 §3.2.3)"
 * ```
 *
 * @module
 */

import { isIPv6 } from "node:net";

/** Anything that needs a closer look; most paths have none of it. */
const SUSPICIOUS = /[^A-Za-z0-9\-._~!$&'()*+,;=:@/?]|\/\.|\.(?:\/|$|\?)/;
const PERCENT = /%(?![0-9A-Fa-f]{2})/;
// deno-lint-ignore no-control-regex
const NOT_URI_CHAR = /[\x00-\x20\x7f-\uffff"<>^`{|}]/;
const ENCODED_SEPARATOR = /%(?:2f|5c)/i;

/** Why `path` (`:path`, query included) is refused, or `null` when it is routed as it is. */
export function checkRequestTarget(path: string): string | null {
  if (!SUSPICIOUS.test(path)) return null;
  if (NOT_URI_CHAR.test(path)) {
    return "space, control, non-ASCII or other character not allowed in a URI (RFC 3986 §2)";
  }
  if (path.includes("#")) return "fragment (#) in the request target (RFC 9110 §7.1)";
  if (PERCENT.test(path)) return "% not followed by two hex digits (RFC 3986 §2.1)";
  const q = path.indexOf("?");
  const p = q === -1 ? path : path.slice(0, q);
  if (p.includes("\\")) return "backslash in the path";
  if (ENCODED_SEPARATOR.test(p)) return "encoded slash or backslash (%2F, %5C) in the path";
  for (const segment of p.split("/")) {
    const s = segment.length <= 6 ? segment.replace(/%2e/gi, ".") : segment;
    if (s === "." || s === "..") return "dot segment in the path (RFC 3986 §5.2.4)";
  }
  return null;
}

/**
 * `host [":" port]` (RFC 3986 §3.2): an IP literal in brackets, or a
 * registered name or IPv4 address of unreserved characters and
 * percent-encoded octets. Sub-delimiters, which RFC 3986 allows in a
 * registered name, are refused as HTTP/3 `:authority` is (`h3/message.ts`):
 * a backend's HTTP/2 stack may fail the whole connection on them.
 */
const AUTHORITY = /^(?:\[([^\]]*)\]|(?:[A-Za-z0-9._~-]|%[0-9A-Fa-f]{2})+)(?::([0-9]*))?$/;

/**
 * Why `authority` (`:authority`, or the `host` field) is refused, or `null`
 * when it can be forwarded: userinfo (RFC 9110 §4.2.4), an empty host
 * (RFC 9110 §4.2.2), a bracketed literal that is not an IPv6 address
 * (RFC 3986 §3.2.2; IPvFuture included, which no backend can reach), a
 * character outside the grammar, percent-encoding in a host name, or a port
 * above 65535 or of more than five digits (RFC 3986 §3.2.3 allows any
 * digits; no transport has such a port).
 *
 * @example
 * ```ts
 * checkAuthority("example.com:8443"); // null
 * checkAuthority("localhost:99999"); // "port 99999 is not in 0-65535 (RFC 3986 §3.2.3)"
 * ```
 */
export function checkAuthority(authority: string): string | null {
  const m = AUTHORITY.exec(authority);
  if (m === null) {
    if (authority.includes("@")) return "userinfo in the authority (RFC 9110 §4.2.4)";
    if (authority.length === 0 || authority.startsWith(":")) {
      return "empty host in the authority (RFC 9110 §4.2.2)";
    }
    return "not a host[:port] authority (RFC 3986 §3.2)";
  }
  const literal = m[1];
  if (literal === undefined && authority.includes("%")) {
    // RFC 3986 allows it, but no client sends it (a name outside ASCII goes
    // as punycode) and HTTP/2 backends refuse it: hyper (Deno.serve) resets
    // such a stream with PROTOCOL_ERROR, which would count against the
    // backend. Found by the frame fuzz test.
    return "percent-encoding in the host (a host name is sent as ASCII or punycode)";
  }
  if (literal !== undefined && !isIPv6(literal)) {
    return `[${literal}] is not an IPv6 address (RFC 3986 §3.2.2)`;
  }
  const port = m[2];
  if (port !== undefined && (port.length > 5 || Number(port) > 65535)) {
    return `port ${port} is not in 0-65535 (RFC 3986 §3.2.3)`;
  }
  return null;
}
