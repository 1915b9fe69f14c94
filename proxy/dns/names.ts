/**
 * Which backend addresses the proxy looks up itself: those whose host is a
 * name (`api.internal:8080`), except `localhost` and `*.localhost`, which
 * always mean this machine (RFC 6761 §6.3) and are connected to by name as
 * before. An IP address is used as it is.
 *
 * @example
 * ```ts
 * resolvedName("api.internal:8080"); // { host: "api.internal", port: 8080 }
 * resolvedName("10.0.0.1:8080"); // null
 * resolvedName("localhost:8080"); // null
 * ```
 *
 * @module
 */

import { isIPv4, isIPv6, parseHostPort } from "../config/schema.ts";
import type { Config } from "../config/types.ts";

/** A backend address that names a host: the name (lowercase, no trailing dot) and the port. */
export interface ResolvedName {
  /** The host name asked for. */
  readonly host: string;
  /** The port every address it resolves to is connected on. */
  readonly port: number;
}

/** The name and port of `address` when the proxy looks it up, else `null`. */
export function resolvedName(address: string): ResolvedName | null {
  const hp = parseHostPort(address);
  if (hp === null || isIPv4(hp.host) || isIPv6(hp.host)) return null;
  const host = hp.host.toLowerCase().replace(/\.$/, "");
  if (host === "localhost" || host.endsWith(".localhost")) return null;
  return { host, port: hp.port };
}

/** A name some backends use: how often to look it up, and where the configuration says it. */
export interface NamedAddress {
  /** The backend address (`api.internal:8080`), the key everything else uses. */
  readonly address: string;
  /** Its name and port. */
  readonly name: ResolvedName;
  /** The shortest `dns_refresh_ms` of the pools using it. */
  readonly refreshMs: number;
  /** Key paths of the backends using it (`["upstream", "api", "backends", 0, "address"]`). */
  readonly paths: ReadonlyArray<readonly (string | number)[]>;
}

/** Every address of `config` the proxy looks up, and the addresses used as they are. */
export function namedAddresses(
  config: Config,
): { named: Map<string, NamedAddress>; literal: Set<string> } {
  const named = new Map<string, NamedAddress>();
  const literal = new Set<string>();
  for (const [pool, u] of Object.entries(config.upstream)) {
    u.backends.forEach((b, index) => {
      const name = resolvedName(b.address);
      if (name === null) {
        literal.add(b.address);
        return;
      }
      const path = ["upstream", pool, "backends", index, "address"] as const;
      const seen = named.get(b.address);
      named.set(b.address, {
        address: b.address,
        name,
        refreshMs: Math.min(seen?.refreshMs ?? Infinity, u.dns_refresh_ms),
        paths: [...(seen?.paths ?? []), path],
      });
    });
  }
  return { named, literal };
}
