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
 * @example
 * ```ts
 * import { checkRequestTarget } from "./request_target.ts";
 * checkRequestTarget("/pub/a?x=1"); // null: fine
 * checkRequestTarget("/pub/../secret"); // "dot segment in the path (RFC 3986 §5.2.4)"
 * ```
 *
 * @module
 */

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
