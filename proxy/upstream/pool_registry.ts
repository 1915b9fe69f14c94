/**
 * The pools of a transport, one per backend address and TLS setting: what
 * the HTTP/2 and the HTTP/1.1 transports share about keeping them (the key,
 * creating on first use, forgetting an emptied pool, releasing an address
 * that left the configuration, closing them all).
 *
 * @module
 */

import type { UpstreamRequest } from "./transport.ts";

/** What a per-address pool offers the registry. */
export interface AddressPool {
  /** Its key in the registry ({@link poolKey}). */
  readonly key: string;
  /** The backend address it connects to. */
  readonly address: string;
  /** The address left the configuration: take no new work, close once idle. */
  retire(): void;
  /** Closes everything at once. */
  close(): void;
}

/**
 * The key of a request's pool: its address, and its TLS settings when it
 * has some (a client certificate by its fingerprint: a renewed one gets
 * new connections).
 */
export function poolKey(req: UpstreamRequest): string {
  const t = req.tls;
  return t === undefined
    ? req.address
    : `${req.address} tls ${t.ca ?? ""} ${t.server_name ?? ""} ${
      t.client_certificate?.fingerprint ?? ""
    }`;
}

/** Pools by {@link poolKey}, created on first use. */
export class PoolRegistry<P extends AddressPool> {
  readonly #pools = new Map<string, P>();
  readonly #create: (key: string, req: UpstreamRequest) => P;

  /** `create` makes the pool of a request the registry has none for. */
  constructor(create: (key: string, req: UpstreamRequest) => P) {
    this.#create = create;
  }

  /** The pools held now. */
  values(): IterableIterator<P> {
    return this.#pools.values();
  }

  /** The pool of `req`, created when there is none. */
  of(req: UpstreamRequest): P {
    const key = poolKey(req);
    let pool = this.#pools.get(key);
    if (pool === undefined) {
      pool = this.#create(key, req);
      this.#pools.set(key, pool);
    }
    return pool;
  }

  /** Forgets `pool` (it has emptied), unless a newer pool took its key. */
  forget(pool: P): void {
    if (this.#pools.get(pool.key) === pool) this.#pools.delete(pool.key);
  }

  /** Retires and forgets every pool of `address`. */
  release(address: string): void {
    for (const [key, pool] of [...this.#pools]) {
      if (pool.address !== address) continue;
      this.#pools.delete(key);
      pool.retire();
    }
  }

  /** Closes and forgets every pool. */
  closeAll(): void {
    for (const pool of [...this.#pools.values()]) pool.close();
    this.#pools.clear();
  }
}
