/**
 * Reclaiming idle connections when the connection table is nearly full
 * (issue #25 item 7). A connection counts against `limits.max_connections`
 * until the QUIC stack reports it closed; a client whose CONNECTION_CLOSE was
 * lost (or that simply keeps a connection open with nothing to ask) holds its
 * slot until the idle timeout, 30 s by default. Once open connections reach
 * the threshold, a connection with no request in flight for `idleMs` is sent
 * away with GOAWAY (RFC 9114 §5.2), longest idle first, just enough of them to
 * get back under the threshold. That is safe for the client: a request it
 * sent meanwhile above the GOAWAY id is refused unprocessed and retried on a
 * new connection.
 *
 * Pure bookkeeping with an injected clock; the server calls
 * {@link IdleReclaimer.pick} from one periodic timer.
 *
 * @module
 */

/** When idle connections are reclaimed. */
export interface IdleReclaimOptions {
  /** Open connections at which reclaiming starts (e.g. 90% of `max_connections`). */
  threshold: number;
  /** A connection with no request in flight for this long may be sent away (ms). */
  idleMs: number;
}

/** What the reclaimer needs to know of a connection. */
export interface ReclaimableConnection {
  /** Requests in flight. */
  readonly activeStreams: number;
  /** Whether it has closed. */
  readonly closed: boolean;
}

/**
 * Tracks since when each connection has had no request in flight, sampled at
 * each {@link pick}.
 *
 * @example
 * ```ts
 * type Conn = { activeStreams: number; closed: boolean; goaway(): void };
 * declare const open: Set<Conn>;
 * const r = new IdleReclaimer<Conn>({ threshold: 3686, idleMs: 5000 }, () => performance.now());
 * for (const c of r.pick(open, open.size)) c.goaway();
 * ```
 */
export class IdleReclaimer<C extends ReclaimableConnection> {
  readonly #opts: IdleReclaimOptions;
  readonly #now: () => number;
  #idleSince = new Map<C, number>();

  constructor(opts: IdleReclaimOptions, now: () => number) {
    this.#opts = opts;
    this.#now = now;
  }

  /**
   * The connections to send away now, longest idle first: none while `count`
   * is below the threshold, else at most `count - threshold + 1` of those idle
   * for at least `idleMs`. A connection is picked once.
   */
  pick(connections: Iterable<C>, count: number): C[] {
    if (count < this.#opts.threshold) {
      this.#idleSince.clear();
      return [];
    }
    const now = this.#now();
    const next = new Map<C, number>();
    const due: [C, number][] = [];
    for (const c of connections) {
      if (c.closed || c.activeStreams > 0) continue;
      const since = this.#idleSince.get(c) ?? now;
      next.set(c, since);
      if (now - since >= this.#opts.idleMs) due.push([c, since]);
    }
    due.sort((a, b) => a[1] - b[1]);
    const picked = due.slice(0, count - this.#opts.threshold + 1).map(([c]) => c);
    for (const c of picked) next.delete(c);
    this.#idleSince = next;
    return picked;
  }
}
