/**
 * The HTTP/1.1 connections of one backend address (and TLS setting): idle
 * ones kept for reuse (the most recently used first), at most
 * {@link H1PoolOptions.maxConnections} open at once, and past that a
 * bounded queue of exchanges waiting for one (past its bound an exchange
 * fails `connect`: nothing reached the backend). A connection comes back
 * reusable only when its response ended cleanly, the backend let it persist
 * and sent nothing outside the response; any other is closed, and its place
 * goes to the first exchange waiting.
 *
 * @module
 */

import type { BackendTls, Connector } from "./backend_connect.ts";
import type { AddressConnections, UpstreamCloseReason } from "./connection_stats.ts";
import { H1Connection } from "./h1_connection.ts";
import { UpstreamError } from "./transport.ts";

/** Settings shared by the pools of one transport. */
export interface H1PoolOptions {
  /** Opens the byte stream to a backend. */
  readonly connect: Connector;
  /** Connections open per address at most (in use, idle or connecting). */
  readonly maxConnections: number;
  /** Exchanges waiting for a connection per address at most. */
  readonly maxQueued: number;
  /** An idle connection is closed after this long (ms). */
  readonly idleMs: number;
  /** The pool holds nothing any more (no connection, nobody waiting). */
  readonly empty: (pool: H1Pool) => void;
}

/** A connection handed to an exchange; `reused` when it carried one before. */
export interface Lease {
  readonly conn: H1Connection;
  readonly reused: boolean;
}

/** Someone waiting for a connection: given one, or `null` when a place freed up (connect then). */
interface Waiter {
  readonly give: (conn: H1Connection | null) => void;
}

/** The connections of one address; see the module docs. */
export class H1Pool {
  /** The pool's key in its transport. */
  readonly key: string;
  /** The backend's `host:port`. */
  readonly address: string;
  readonly #tls: BackendTls | undefined;
  readonly #opts: H1PoolOptions;
  /** The address's connection counters (`/metrics`). */
  readonly #counts: AddressConnections;
  readonly #idle: H1Connection[] = [];
  readonly #waiting: Waiter[] = [];
  /** Connections open or being opened. */
  #open = 0;
  /** Retired (its address is no longer configured): connections are not kept idle. */
  #retired = false;
  #closed = false;

  constructor(
    key: string,
    address: string,
    tls: BackendTls | undefined,
    opts: H1PoolOptions,
    counts: AddressConnections,
  ) {
    this.key = key;
    this.address = address;
    this.#tls = tls;
    this.#opts = opts;
    this.#counts = counts;
  }

  /** Connections open or being opened (tests, metrics). */
  get open(): number {
    return this.#open;
  }

  /** Idle connections kept for reuse (tests). */
  get idle(): number {
    return this.#idle.length;
  }

  /**
   * A connection for one exchange: an idle one, a new one (within
   * `connectTimeoutMs`), or the first to come free. Rejects with an
   * {@link UpstreamError} `connect` (nothing reached the backend), or with
   * `signal`'s reason once it aborts.
   */
  async acquire(connectTimeoutMs: number, signal: AbortSignal): Promise<Lease> {
    for (;;) {
      if (this.#closed) throw new UpstreamError("aborted", "upstream transport closed");
      const idle = this.#idle.pop();
      if (idle !== undefined) {
        idle.unpark();
        this.#counts.reused++;
        return { conn: idle, reused: true };
      }
      if (this.#open < this.#opts.maxConnections) {
        return { conn: await this.#connect(connectTimeoutMs, signal), reused: false };
      }
      const given = await this.#wait(signal);
      if (given !== null) {
        this.#counts.reused++;
        return { conn: given, reused: true };
      }
    }
  }

  async #connect(connectTimeoutMs: number, signal: AbortSignal): Promise<H1Connection> {
    this.#open++;
    const deadline = AbortSignal.any([signal, AbortSignal.timeout(connectTimeoutMs)]);
    try {
      const conn = new H1Connection(await this.#opts.connect(this.address, this.#tls, deadline));
      this.#counts.established();
      return conn;
    } catch (err) {
      this.#counts.connectFailures++;
      this.#dropped();
      if (signal.aborted) throw signal.reason;
      if (err instanceof UpstreamError) throw err;
      const why = deadline.aborted
        ? `no connection within ${connectTimeoutMs} ms`
        : (err as Error).message;
      throw new UpstreamError("connect", `backend ${this.address}: ${why}`, { cause: err });
    }
  }

  #wait(signal: AbortSignal): Promise<H1Connection | null> {
    if (this.#waiting.length >= this.#opts.maxQueued) {
      return Promise.reject(
        new UpstreamError(
          "connect",
          `backend ${this.address}: ${this.#waiting.length} requests already wait for a connection`,
        ),
      );
    }
    if (signal.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        const i = this.#waiting.indexOf(waiter);
        if (i >= 0) this.#waiting.splice(i, 1);
        reject(signal.reason);
      };
      const waiter: Waiter = {
        give: (conn) => {
          signal.removeEventListener("abort", onAbort);
          resolve(conn);
        },
      };
      signal.addEventListener("abort", onAbort, { once: true });
      this.#waiting.push(waiter);
    });
  }

  /**
   * An exchange is done with `conn`: kept (given to the first waiting, else
   * parked idle) when `reusable`, else closed (`why`, for the counters).
   */
  release(conn: H1Connection, reusable: boolean, why: UpstreamCloseReason = "cancelled"): void {
    conn.uses++;
    if (!reusable || this.#closed || conn.closed) {
      return this.#closeConn(conn, this.#closed ? "shutdown" : conn.closed ? "error" : why);
    }
    const waiter = this.#waiting.shift();
    if (waiter !== undefined) return waiter.give(conn);
    if (this.#retired) return this.#closeConn(conn, "retired");
    this.#idle.push(conn);
    conn.park(this.#opts.idleMs, (dead) => this.#forget(conn, dead));
  }

  /** An idle connection died or idled out: closed, forgotten. */
  #forget(conn: H1Connection, why: UpstreamCloseReason): void {
    const i = this.#idle.indexOf(conn);
    if (i < 0) return;
    this.#idle.splice(i, 1);
    this.#closeConn(conn, why);
  }

  /** Closes `conn` (counted with `why`); its place goes to the first waiting. */
  #closeConn(conn: H1Connection, why: UpstreamCloseReason): void {
    if (!conn.closed) this.#counts.closed(why);
    conn.close();
    this.#dropped();
  }

  /** A connection is gone: its place goes to the first waiting. */
  #dropped(): void {
    this.#open--;
    const waiter = this.#waiting.shift();
    if (waiter !== undefined) return waiter.give(null);
    if (this.#open === 0) this.#opts.empty(this);
  }

  /**
   * The address left the configuration: closes the idle connections; those
   * in use close when their exchange ends (or serve the exchanges already
   * waiting first).
   */
  retire(): void {
    this.#retired = true;
    this.#closeIdle("retired");
  }

  /** Closes everything; waiting exchanges fail `aborted`. */
  close(): void {
    this.#closed = true;
    this.#retired = true;
    this.#closeIdle("shutdown");
    for (const w of this.#waiting.splice(0)) w.give(null);
  }

  #closeIdle(why: UpstreamCloseReason): void {
    for (const conn of this.#idle.splice(0)) {
      if (!conn.closed) this.#counts.closed(why);
      conn.close();
      this.#open--;
    }
  }
}
