/**
 * The WebSockets of each pool: how many are open now, and how each attempt
 * ended, by outcome. Kept by `ProxyMetrics`, so the counts survive reloads.
 *
 * @example
 * ```ts
 * const ws = new WebSocketCounters();
 * ws.opened("chat");
 * ws.ended("chat", "idle_timeout");
 * ws.snapshot(["chat"]); // [{ pool: "chat", open: 0, outcomes: [["closed", 0], …, ["idle_timeout", 1], …] }]
 * ```
 *
 * @module
 */

/**
 * How a WebSocket attempt ended: the tunnel was open and the backend ended
 * it (`closed`), the client's side went away, reset or stopped reading
 * (`client_gone`), the backend's side failed mid-tunnel (`backend_error`),
 * it carried nothing for `websocket.idle_timeout_ms` (`idle_timeout`), it
 * reached `websocket.max_duration_ms` (`max_duration`), the proxy's drain
 * deadline closed it (`shutdown`); or it never opened: the backend
 * answered without switching (`refused`), failed or could not carry it
 * (`failed`), or the pool has WebSockets off (`disabled`).
 */
export const WEBSOCKET_OUTCOMES = [
  "closed",
  "client_gone",
  "backend_error",
  "idle_timeout",
  "max_duration",
  "shutdown",
  "refused",
  "failed",
  "disabled",
] as const;

/** One of {@link WEBSOCKET_OUTCOMES}. */
export type WebSocketOutcome = typeof WEBSOCKET_OUTCOMES[number];

/** One pool's WebSockets, as `/metrics` shows them. */
export interface WebSocketPoolView {
  /** The pool's name. */
  readonly pool: string;
  /** WebSockets open now. */
  readonly open: number;
  /** Attempts by outcome, every outcome listed. */
  readonly outcomes: ReadonlyArray<readonly [WebSocketOutcome, number]>;
}

/** The counts of one pool. */
class PoolCounts {
  open = 0;
  readonly ended = new Map<WebSocketOutcome, number>();
}

/** WebSockets per pool; see the module docs. */
export class WebSocketCounters {
  readonly #pools = new Map<string, PoolCounts>();

  #of(pool: string): PoolCounts {
    let c = this.#pools.get(pool);
    if (c === undefined) {
      c = new PoolCounts();
      this.#pools.set(pool, c);
    }
    return c;
  }

  /** A tunnel of `pool` opened. */
  opened(pool: string): void {
    this.#of(pool).open++;
  }

  /** An attempt of `pool` ended with `outcome` (one that had opened leaves the open count). */
  ended(pool: string, outcome: WebSocketOutcome, wasOpen = false): void {
    const c = this.#of(pool);
    if (wasOpen) c.open--;
    c.ended.set(outcome, (c.ended.get(outcome) ?? 0) + 1);
  }

  /** WebSockets open now, all pools together. */
  get open(): number {
    let n = 0;
    for (const c of this.#pools.values()) n += c.open;
    return n;
  }

  /**
   * The `pools` given (the configured ones), then any other with WebSockets
   * still open (a pool a reload removed), each with every outcome.
   */
  snapshot(pools: readonly string[]): WebSocketPoolView[] {
    const names = [...pools];
    for (const [name, c] of this.#pools) if (c.open > 0 && !names.includes(name)) names.push(name);
    return names.map((pool) => {
      const c = this.#pools.get(pool);
      return {
        pool,
        open: c?.open ?? 0,
        outcomes: WEBSOCKET_OUTCOMES.map((o) => [o, c?.ended.get(o) ?? 0] as const),
      };
    });
  }
}
