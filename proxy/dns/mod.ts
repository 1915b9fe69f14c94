/**
 * Backends configured by name (`address: api.internal:8080`): the lookups
 * (A and AAAA, `dns.servers`, each pool's `dns_refresh_ms` and the answer's
 * TTL), the live endpoints of each name with the last good answer kept when
 * a lookup fails, and the transport that sends each exchange to one of them
 * and drains the connections of an endpoint that left the answer.
 *
 * @example
 * ```ts
 * import { BackendResolver, ResolvingTransport, systemDnsLookup } from "./mod.ts";
 * import { createDispatchTransport } from "../upstream/dispatch_transport.ts";
 *
 * const resolver = new BackendResolver({ lookup: systemDnsLookup() });
 * const transport = new ResolvingTransport(createDispatchTransport(), resolver);
 * ```
 *
 * @module
 */

export {
  BackendResolver,
  type BackendResolverOptions,
  ENDPOINT_DOWN_MS,
  FAILED_RETRY_MS,
  type LookupFailure,
  MIN_TTL_REFRESH_MS,
  type NameStats,
} from "./backend_resolver.ts";
export {
  type DnsLookup,
  type FamilyAnswer,
  type LookupAnswer,
  type LookupOptions,
  systemDnsLookup,
} from "./lookup.ts";
export { type NamedAddress, namedAddresses, type ResolvedName, resolvedName } from "./names.ts";
export { ResolvingTransport } from "./resolving_transport.ts";
// Types of other packages that the signatures above use: the configuration's and the transport's.
export type * from "../mod.ts";
