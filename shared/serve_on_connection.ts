/**
 * The runtime's HTTP server for one connection we accepted: the function
 * `Deno.serve` itself is built on, which Deno 2.9 exposes only among its
 * internals (`serveHttpOnConnection`). It speaks HTTP/1.1 and h2c with prior
 * knowledge on plain TCP and negotiates h2 or HTTP/1.1 by ALPN on TLS,
 * exactly like `Deno.serve`. Used by `serve_connections.ts` only.
 *
 * @module
 */

/** The runtime's HTTP server for one accepted connection. */
export interface ConnectionHttp {
  /** Settles once the connection is closed. */
  finished: Promise<void>;
  /** Closes the connection gracefully (HTTP/1.1: after its response; HTTP/2: GOAWAY). */
  shutdown(): Promise<void>;
}

/**
 * What `serveHttpOnConnection` does with its second argument: it registers a
 * listener for `abort` that cancels the connection at once. We take that
 * listener instead of passing an `AbortSignal`, so that cancelling can be
 * called in a `try` (once the connection is gone, it throws `BadResource`,
 * which from an `AbortSignal` listener would be an uncaught error).
 */
export interface CancelHook {
  /** Called once by the runtime with the listener that cancels the connection. */
  addEventListener(type: string, listener: () => void, options?: unknown): void;
}

/** The signature of Deno 2.9's internal `serveHttpOnConnection`. */
export type ServeOnConnection = (
  conn: Deno.Conn,
  cancel: CancelHook,
  handler: Deno.ServeHandler<Deno.NetAddr>,
  onError: (error: unknown) => Response | Promise<Response>,
  onListen: (scheme: string) => void,
) => ConnectionHttp;

function findServeOnConnection(): ServeOnConnection | undefined {
  const internalKey = (Deno as unknown as { internal?: symbol }).internal;
  if (typeof internalKey !== "symbol") return undefined;
  const internals = (Deno as unknown as Record<symbol, Record<string, unknown> | undefined>)[
    internalKey
  ];
  const fn = internals?.serveHttpOnConnection;
  return typeof fn === "function" && fn.length === 5 ? fn as ServeOnConnection : undefined;
}

/** The running Deno's per-connection HTTP server; undefined when it has none. */
export const serveOnConnection: ServeOnConnection | undefined = findServeOnConnection();

/** Closes a connection or listener, ignoring one already closed. */
export function closeQuietly(conn: Deno.Conn | Deno.Listener | undefined): void {
  try {
    conn?.close();
  } catch {
    // already closed
  }
}

/**
 * Once per interval: how many times something happened, logged as one
 * warning (`report`, given the count since the last one and what the
 * latest event said).
 */
export class WarnOnce<T = void> {
  #count = 0;
  #last = -Infinity;
  readonly #everyMs: number;
  readonly #report: (count: number, latest: T) => void;

  /** Reports at most once per `everyMs`. */
  constructor(everyMs: number, report: (count: number, latest: T) => void) {
    this.#everyMs = everyMs;
    this.#report = report;
  }

  /** Counts one event; reports the count if a warning is due now. */
  note(latest: T): void {
    this.#count++;
    const now = performance.now();
    if (now - this.#last < this.#everyMs) return;
    this.#last = now;
    const n = this.#count;
    this.#count = 0;
    this.#report(n, latest);
  }
}
