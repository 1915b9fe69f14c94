/**
 * What a limit counts requests by (`rate_limits[].key`), compiled once per
 * configuration into a function of the request:
 *
 * - `client`: the client's address group (`quic/address_group.ts`, the
 *   prefixes of `limits.address_prefix_v4`/`_v6`, as admission groups
 *   addresses). From a trusted proxy (`trusted_proxies`) the address is the
 *   last one of its `x-forwarded-for` (the one that proxy appended).
 * - `header:<name>`: the field's value (repeated fields joined with `, `).
 * - `bearer`: a SHA-256 digest of the `Authorization: Bearer` token; the
 *   token itself is never kept, logged or counted by.
 * - `route`: one key, so one bucket for the whole pool.
 *
 * Requests without the header or token share one key (`-`): leaving it out
 * does not escape the limit.
 *
 * @example
 * ```ts
 * import type { IncomingRequest } from "../server/types.ts";
 * declare const req: IncomingRequest;
 * const keyOf = compileKey("bearer", { trusted: () => false, prefix: { v4: 32, v6: 64 } });
 * keyOf(req); // "b:1Y2t…" (a digest), or "-" without a token
 * ```
 *
 * @module
 */

import { createHash } from "node:crypto";
import { addressGroup, type PrefixLengths } from "../quic/address_group.ts";
import type { IncomingRequest } from "../server/types.ts";

/** The key of requests that do not carry what the limit counts by. */
export const MISSING_KEY = "-";

/** Address groups remembered per `client` key (most traffic repeats a few addresses). */
export const GROUP_CACHE_SIZE = 4096;

/** What the `client` key needs to know. */
export interface ClientKeyContext {
  /** Whether an address is in `trusted_proxies`. */
  trusted: (ip: string) => boolean;
  /** Prefix lengths of an address group. */
  prefix: PrefixLengths;
  /** The remembered address groups (at most {@link GROUP_CACHE_SIZE}); default a new map. */
  groupCache?: Map<string, string>;
}

/** A compiled key: the request's key for the limit. */
export type KeyFunction = (req: IncomingRequest) => string;

/** Compiles `key` (validated by the configuration schema). */
export function compileKey(key: string, client: ClientKeyContext): KeyFunction {
  if (key === "route") return () => "";
  if (key === "bearer") return (req) => bearerKey(fieldValue(req, "authorization"));
  if (key.startsWith("header:")) {
    const name = key.slice("header:".length).toLowerCase();
    return (req) => fieldValue(req, name) ?? MISSING_KEY;
  }
  // Parsing an address costs microseconds: remember the last few thousand
  // (cleared when full, so a flood of addresses cannot grow it).
  const groups = client.groupCache ?? new Map<string, string>();
  return (req) => {
    const address = clientAddress(req, client.trusted);
    let group = groups.get(address);
    if (group === undefined) {
      group = addressGroup(address, client.prefix);
      if (groups.size >= GROUP_CACHE_SIZE) groups.clear();
      groups.set(address, group);
    }
    return group;
  };
}

/** The value of field `name` (lowercase), repeated fields joined; `undefined` when absent. */
function fieldValue(req: IncomingRequest, name: string): string | undefined {
  let value: string | undefined;
  for (const [n, v] of req.head.fields) {
    if (n === name) value = value === undefined ? v : `${value}, ${v}`;
  }
  return value;
}

/** The client's address: the peer's, or from a trusted proxy the last `x-forwarded-for` hop. */
export function clientAddress(req: IncomingRequest, trusted: (ip: string) => boolean): string {
  const peer = req.remote.hostname;
  if (!trusted(peer)) return peer;
  const xff = fieldValue(req, "x-forwarded-for");
  if (xff === undefined) return peer;
  const last = xff.slice(xff.lastIndexOf(",") + 1).trim();
  return last === "" ? peer : last;
}

/**
 * The key of an `Authorization` value: `b:` and the base64url SHA-256 of
 * its bearer token, {@link MISSING_KEY} without one. Only the digest is
 * returned, so the token is never stored in the key table.
 */
export function bearerKey(authorization: string | undefined): string {
  if (authorization === undefined) return MISSING_KEY;
  const space = authorization.indexOf(" ");
  if (space === -1 || authorization.slice(0, space).toLowerCase() !== "bearer") return MISSING_KEY;
  const token = authorization.slice(space + 1).trim();
  if (token === "") return MISSING_KEY;
  return "b:" + createHash("sha256").update(token).digest("base64url");
}
