/**
 * One lookup of a host name's addresses: A and AAAA asked together, each
 * answer with its TTL, each family's failure kept apart (a name may have
 * only one family; a server may time out on one question and answer the
 * other).
 *
 * The default lookup asks through `node:dns`'s `Resolver`, not
 * `Deno.resolveDns`: measured on Deno 2.9.6, `Deno.resolveDns` returns the
 * addresses only (its options have no `ttl`, and an unknown `ttl: true` is
 * ignored), while `Resolver.resolve4(name, { ttl: true })` returns each
 * record's TTL, takes name servers with a port (`setServers`), a timeout
 * and a number of tries. With no servers given it asks the system's
 * (`/etc/resolv.conf`; `/etc/hosts` is read too). Deno reports a SERVFAIL
 * as `ENOTFOUND`, like a name that does not exist: both are `none` here.
 *
 * @example
 * ```ts
 * const lookup = systemDnsLookup();
 * const answer = await lookup("api.internal", { servers: ["10.0.0.2"], timeoutMs: 5000 });
 * if (answer.v4.kind === "addresses") answer.v4.addresses; // ["10.1.2.3"]
 * ```
 *
 * @module
 */

import { Resolver } from "node:dns/promises";

/** What one family's question (A or AAAA) got. */
export type FamilyAnswer =
  | {
    /** Records came: their addresses, and the shortest TTL among them (seconds). */
    readonly kind: "addresses";
    readonly addresses: readonly string[];
    readonly ttlSeconds: number;
  }
  | {
    /** The name has no record of this family, or does not exist (or the server failed: see the module doc). */
    readonly kind: "none";
    readonly message: string;
  }
  | {
    /** No answer: a timeout, a refusal, a network error. */
    readonly kind: "error";
    readonly message: string;
  };

/** The answers to a name's A and AAAA questions. */
export interface LookupAnswer {
  /** The A question's. */
  readonly v4: FamilyAnswer;
  /** The AAAA question's. */
  readonly v6: FamilyAnswer;
}

/** Where and how long to ask. */
export interface LookupOptions {
  /** Name servers (`ip`, `ip:port`, `[v6]:port`); empty: the system's. */
  readonly servers: readonly string[];
  /** How long the lookup may take, in milliseconds. */
  readonly timeoutMs: number;
}

/** Looks a host name up (tests inject their own). */
export type DnsLookup = (host: string, opts: LookupOptions) => Promise<LookupAnswer>;

/** Error codes of `node:dns` that mean "no such record", not "no answer". */
const NO_RECORD = new Set(["ENOTFOUND", "ENODATA", "NOTFOUND", "NODATA"]);

/**
 * The lookup through `node:dns`'s `Resolver` (see the module doc): one
 * resolver per set of servers and timeout, one try per question, and the
 * whole lookup bounded by `timeoutMs` whatever the resolver does.
 */
export function systemDnsLookup(): DnsLookup {
  const resolvers = new Map<string, Resolver>();
  const resolverFor = (opts: LookupOptions): Resolver => {
    const key = `${opts.timeoutMs} ${opts.servers.join(",")}`;
    let resolver = resolvers.get(key);
    if (resolver === undefined) {
      resolver = new Resolver({ timeout: opts.timeoutMs, tries: 1 });
      if (opts.servers.length > 0) resolver.setServers([...opts.servers]);
      resolvers.clear(); // the configuration changed: the old ones are not asked again
      resolvers.set(key, resolver);
    }
    return resolver;
  };
  return async (host, opts) => {
    const resolver = resolverFor(opts);
    const [v4, v6] = await Promise.all([
      ask(() => resolver.resolve4(host, { ttl: true }), opts.timeoutMs),
      ask(() => resolver.resolve6(host, { ttl: true }), opts.timeoutMs),
    ]);
    return { v4, v6 };
  };
}

/** One question, bounded by `timeoutMs`, its outcome as a {@link FamilyAnswer}. */
async function ask(
  question: () => Promise<Array<{ address: string; ttl: number }>>,
  timeoutMs: number,
): Promise<FamilyAnswer> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<FamilyAnswer>((resolve) => {
    timer = setTimeout(
      () => resolve({ kind: "error", message: `no answer within ${timeoutMs} ms` }),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([question().then(toAnswer, toFailure), expired]);
  } finally {
    clearTimeout(timer);
  }
}

function toAnswer(records: Array<{ address: string; ttl: number }>): FamilyAnswer {
  if (records.length === 0) return { kind: "none", message: "no records" };
  return {
    kind: "addresses",
    addresses: records.map((r) => r.address),
    ttlSeconds: Math.min(...records.map((r) => r.ttl)),
  };
}

function toFailure(err: unknown): FamilyAnswer {
  const code = (err as { code?: unknown })?.code;
  const message = err instanceof Error ? err.message : String(err);
  if (typeof code === "string" && NO_RECORD.has(code)) return { kind: "none", message };
  return { kind: "error", message };
}
