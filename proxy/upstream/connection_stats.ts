/**
 * What the upstream transports count about their connections, per backend
 * address and protocol: established, failed to establish, reused, open, and
 * closed by reason (`UPSTREAM_CLOSE_REASONS`). `/metrics` shows them as the
 * `spooky_upstream_connections_*` families, labelled `address` and
 * `protocol` (`h2`, `http1`), so an operator tells a backend's HTTP/1.1
 * connections from its HTTP/2 ones.
 *
 * A pool takes its address's {@link AddressConnections} once, when it is
 * created, and counts into it with field increments: nothing is looked up
 * per request. The counters outlive the pools (a pool emptied and created
 * again counts on), one entry per address and protocol ever used.
 *
 * @example
 * ```ts
 * const stats = new ConnectionStats("http1");
 * const counts = stats.of("127.0.0.1:8080");
 * counts.established();
 * counts.closed("idle");
 * stats.snapshot(); // [{ address: "127.0.0.1:8080", protocol: "http1", opened: 1, … }]
 * ```
 *
 * @module
 */

import {
  UPSTREAM_CLOSE_REASONS,
  type UpstreamCloseReason,
  type UpstreamConnectionsView,
} from "../metrics/views.ts";

import type { UpstreamFailureKind } from "./transport.ts";

export type { UpstreamCloseReason } from "../metrics/views.ts";

/** Why a connection that failed closed, by the failure's kind: the same for both protocols. */
export const CLOSE_REASON_OF_FAILURE: Readonly<Record<UpstreamFailureKind, UpstreamCloseReason>> = {
  connect: "error",
  reset: "peer_closed",
  protocol: "protocol_error",
  invalid_response: "protocol_error",
  timeout: "timeout",
  aborted: "cancelled",
  local: "cancelled",
};

/** The counters of one address's connections. */
export class AddressConnections {
  /** Connections established. */
  opened = 0;
  /** Attempts that established none. */
  connectFailures = 0;
  /** Requests sent on a connection that had carried one before. */
  reused = 0;
  /** Connections open now. */
  open = 0;
  readonly #closed = new Float64Array(UPSTREAM_CLOSE_REASONS.length);

  /** A connection was established. */
  established(): void {
    this.opened++;
    this.open++;
  }

  /** An established connection closed, for `reason`. */
  closed(reason: UpstreamCloseReason): void {
    this.open--;
    this.#closed[UPSTREAM_CLOSE_REASONS.indexOf(reason)]++;
  }

  /** Closed connections, by reason. */
  closedByReason(): Record<UpstreamCloseReason, number> {
    const out = {} as Record<UpstreamCloseReason, number>;
    UPSTREAM_CLOSE_REASONS.forEach((r, i) => out[r] = this.#closed[i]);
    return out;
  }
}

/** The connection counters of one transport, by address. */
export class ConnectionStats {
  readonly #protocol: "h2" | "http1";
  readonly #byAddress = new Map<string, AddressConnections>();

  /** Counters of the connections of a transport speaking `protocol`. */
  constructor(protocol: "h2" | "http1") {
    this.#protocol = protocol;
  }

  /** The counters of `address` (created on first use). */
  of(address: string): AddressConnections {
    let counts = this.#byAddress.get(address);
    if (counts === undefined) {
      counts = new AddressConnections();
      this.#byAddress.set(address, counts);
    }
    return counts;
  }

  /** Every address's counters, as `/metrics` shows them. */
  snapshot(): UpstreamConnectionsView[] {
    return [...this.#byAddress].map(([address, c]) => ({
      address,
      protocol: this.#protocol,
      opened: c.opened,
      connectFailures: c.connectFailures,
      reused: c.reused,
      open: c.open,
      closed: c.closedByReason(),
    }));
  }
}
