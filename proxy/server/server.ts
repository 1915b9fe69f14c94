/**
 * The HTTP/3 server: accepts QUIC connections from a transport and serves each
 * with an {@link H3Connection}; graceful shutdown with GOAWAY and a drain bound.
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import { settledWithin } from "../../shared/deadline.ts";
import { H3Code } from "../h3/mod.ts";
import type { QuicServerTransport } from "../quic/transport.ts";
import { H3Connection } from "./connection.ts";
import { IdleReclaimer, type IdleReclaimOptions } from "./idle_reclaim.ts";
import type { ConnectionOptions } from "./types.ts";

const log = getLogger(["proxy", "server"]);

/** Longest wait for connections to wind down once closed at the end of a shutdown (ms). */
const SHUTDOWN_GRACE_MS = 2000;

/** Options of {@link H3Server}: the per-connection ones plus connection hooks. */
export interface H3ServerOptions extends ConnectionOptions {
  /** Called when a connection is accepted (for the open-connections gauge). */
  onConnectionOpened?(): void;
  /** Called once when an accepted connection has closed. */
  onConnectionClosed?(): void;
  /**
   * Send idle connections away with GOAWAY once this many are open (see
   * `idle_reclaim.ts`); off when absent.
   */
  idleReclaim?: IdleReclaimOptions;
  /** Called for each connection sent away by `idleReclaim` (metrics). */
  onIdleReclaimed?(): void;
}

/** A snapshot of one connection for the admin API. */
export interface ConnectionInfo {
  /** The client's address, `host:port`. */
  remote: string;
  /** Request streams open on the connection. */
  activeStreams: number;
}

/**
 * Serves HTTP/3 on a transport until {@link H3Server.shutdown}.
 *
 * @example
 * ```ts
 * import { listenQuic } from "../quic/mod.ts";
 * declare const opts: H3ServerOptions;
 * declare const cert: string;
 * declare const key: string;
 *
 * const server = new H3Server(listenQuic({ hostname: "::", port: 9889, cert, key }), opts);
 * server.start();
 * await server.shutdown(10_000);
 * ```
 */
export class H3Server {
  readonly #transport: QuicServerTransport;
  readonly #opts: H3ServerOptions;
  readonly #connections = new Map<H3Connection, Promise<void>>();
  #acceptLoop?: Promise<void>;
  #stopping = false;
  #reclaimTimer?: ReturnType<typeof setInterval>;

  /**
   * Prepares a server; nothing is accepted before {@link H3Server.start}.
   *
   * @param transport where QUIC connections come from.
   * @param opts the request handler, limits and hooks.
   */
  constructor(transport: QuicServerTransport, opts: H3ServerOptions) {
    this.#transport = transport;
    this.#opts = opts;
  }

  /** The bound address. */
  get addr(): { hostname: string; port: number } {
    return this.#transport.addr;
  }

  /** Open connections. */
  connections(): ConnectionInfo[] {
    return [...this.#connections.keys()].map((c) => ({
      remote: `${c.remote.hostname}:${c.remote.port}`,
      activeStreams: c.activeStreams,
    }));
  }

  /** Starts accepting connections. */
  start(): void {
    this.#acceptLoop ??= this.#accept();
    const reclaim = this.#opts.idleReclaim;
    if (reclaim && this.#reclaimTimer === undefined) {
      const reclaimer = new IdleReclaimer<H3Connection>(reclaim, () => performance.now());
      this.#reclaimTimer = setInterval(() => {
        const open = this.#connections;
        for (const c of reclaimer.pick(open.keys(), open.size)) {
          log.debug("idle connection sent away: {count} open", { count: open.size });
          this.#opts.onIdleReclaimed?.();
          c.goaway();
        }
      }, Math.max(50, Math.min(1000, reclaim.idleMs / 2)));
      Deno.unrefTimer(this.#reclaimTimer);
    }
  }

  async #accept(): Promise<void> {
    for (;;) {
      let conn;
      try {
        conn = await this.#transport.accept();
      } catch (err) {
        if (this.#stopping) return;
        log.error("accept failed: {error}", { error: String(err) });
        continue;
      }
      if (conn === null) return;
      const h3 = new H3Connection(conn, this.#opts);
      log.trace("connection from {host}:{port}, {count} active", {
        host: conn.remoteAddr.hostname,
        port: conn.remoteAddr.port,
        count: this.#connections.size + 1,
      });
      this.#opts.onConnectionOpened?.();
      const served = h3.serve().finally(() => {
        this.#connections.delete(h3);
        this.#opts.onConnectionClosed?.();
      });
      this.#connections.set(h3, served);
    }
  }

  /**
   * Stops accepting, sends GOAWAY on every connection, waits for in-flight
   * requests up to `drainMs`, then closes the endpoint.
   */
  async shutdown(drainMs: number): Promise<void> {
    this.#stopping = true;
    clearInterval(this.#reclaimTimer);
    this.#transport.stop();
    const drained = Promise.allSettled([...this.#connections.keys()].map((c) => c.goaway()));
    if (!await settledWithin(drained, drainMs)) {
      log.warn("drain timeout after {ms} ms: closing {count} connections", {
        ms: drainMs,
        count: this.#connections.size,
      });
      // Closing aborts every request on the connection (they end as
      // `shutdown`): backend exchanges are cancelled and bodies being
      // streamed are cut.
      for (const c of this.#connections.keys()) c.close(H3Code.NO_ERROR, "shutdown", "shutdown");
    }
    this.#transport.close({ closeCode: H3Code.NO_ERROR, reason: "shutdown" });
    const rest = Promise.allSettled([this.#acceptLoop, ...this.#connections.values()]);
    if (!await settledWithin(rest, SHUTDOWN_GRACE_MS)) {
      // Nothing should still be running; if something is, shutdown must not hang on it.
      log.error("{count} connections still busy {ms} ms after they were closed", {
        count: this.#connections.size,
        ms: SHUTDOWN_GRACE_MS,
      });
    }
  }
}
