/**
 * Opens the byte stream of a new HTTP/2 session to a backend: h2c with prior
 * knowledge over `Deno.connect`, or TLS with ALPN `h2` over `Deno.startTls`
 * for backends configured with `tls`. The caller's signal gives the attempt
 * up at the session's connect deadline (`connect_timeout_ms`).
 *
 * Deno cannot close a socket under a TLS handshake that is still going on:
 * closing the `TlsConn` cancels the handshake, but the task that drives it
 * keeps the TCP socket until the backend answers or closes
 * (rustls-tokio-stream finishes a handshake before it shuts a stream down).
 * A handshake given up is therefore left to end on its own, and closed then;
 * until it ends it is counted against its address. With
 * {@link ConnectorOptions.maxStalledHandshakes} of them unanswered no new
 * connection is attempted to that address: the attempt fails `connect` at
 * once, so a backend that never answers a ClientHello holds a bounded number
 * of sockets.
 *
 * @example
 * ```ts
 * const connect = createConnector({ maxStalledHandshakes: 8 });
 * const ac = new AbortController();
 * setTimeout(() => ac.abort(), 10_000);
 * const conn = await connect("127.0.0.1:8443", { serverName: "api.internal" }, ac.signal);
 * ```
 *
 * @module
 */

import { UpstreamError } from "./transport.ts";

/** TLS towards one backend (`tls` of a backend in the configuration). */
export interface BackendTls {
  /** PEM CA certificates to trust instead of the system's roots. */
  readonly caCerts?: readonly string[];
  /** A PEM file of CA certificates, read at each new session (so a replaced file applies). */
  readonly caFile?: string;
  /** Server name for SNI and certificate checking; default the address's host. */
  readonly serverName?: string;
}

/**
 * Opens the byte stream to a backend; `signal` aborts the attempt (the
 * session's connect deadline passed).
 */
export type Connector = (
  address: string,
  tls: BackendTls | undefined,
  signal: AbortSignal,
) => Promise<Deno.Conn>;

/** Options of {@link createConnector}. */
export interface ConnectorOptions {
  /**
   * TLS handshakes given up and still unanswered per address past which no
   * new connection is attempted to it.
   */
  readonly maxStalledHandshakes: number;
  /**
   * ALPN protocols offered over TLS, in order of preference (default
   * `["h2"]`). The backend must pick one of them; a backend that picks none
   * is accepted only when `http/1.1` is offered (HTTP/1.1 needs no ALPN).
   */
  readonly alpn?: readonly string[];
}

/** Splits `host:port` (IPv6 in brackets). */
export function hostPort(address: string): { hostname: string; port: number } {
  const colon = address.lastIndexOf(":");
  let hostname = address.slice(0, colon);
  if (hostname.startsWith("[")) hostname = hostname.slice(1, -1);
  return { hostname, port: Number(address.slice(colon + 1)) };
}

/** The connector of one transport: its count of stalled handshakes is its own. */
export function createConnector(opts: ConnectorOptions): Connector {
  const stalled = new Map<string, number>();
  const alpn = opts.alpn ?? ["h2"];

  /** Leaves a handshake given up to end on its own, counted until it does, then closes it. */
  const abandon = (address: string, conn: Deno.TlsConn, handshake: Promise<unknown>) => {
    stalled.set(address, (stalled.get(address) ?? 0) + 1);
    const done = () => {
      const n = (stalled.get(address) ?? 1) - 1;
      if (n === 0) stalled.delete(address);
      else stalled.set(address, n);
      closeQuietly(conn);
    };
    handshake.then(done, done);
  };

  return async (address, tls, signal) => {
    const { hostname, port } = hostPort(address);
    if (tls === undefined) {
      const conn = await Deno.connect({ hostname, port, signal });
      conn.setNoDelay(true);
      return conn;
    }
    const held = stalled.get(address) ?? 0;
    if (held >= opts.maxStalledHandshakes) {
      throw new UpstreamError(
        "connect",
        `backend ${address}: ${held} TLS handshakes given up are still unanswered; no new connection until one ends`,
      );
    }
    const caCerts = await caCertsOf(tls);
    // TCP to the address itself, then TLS naming `serverName` (SNI and the
    // certificate check), so a server name never changes where we connect.
    const tcp = await Deno.connect({ hostname, port, signal });
    tcp.setNoDelay(true);
    const conn = await Deno.startTls(tcp, {
      hostname: tls.serverName ?? hostname,
      caCerts,
      alpnProtocols: [...alpn],
    });
    const handshake = conn.handshake();
    let hs: Deno.TlsHandshakeInfo;
    try {
      hs = await untilAborted(handshake, signal);
    } catch (err) {
      if (signal.aborted) abandon(address, conn, handshake);
      else closeQuietly(conn);
      throw err;
    }
    if (!agreed(alpn, hs.alpnProtocol)) {
      closeQuietly(conn);
      throw new UpstreamError(
        "connect",
        `backend did not agree to ALPN ${alpn.join(" or ")} (got ${hs.alpnProtocol})`,
      );
    }
    return conn;
  };
}

/** Whether the backend's ALPN choice is one offered (none: only when `http/1.1` was offered). */
function agreed(offered: readonly string[], got: string | null): boolean {
  return got === null ? offered.includes("http/1.1") : offered.includes(got);
}

/** The CA certificates to trust: the given ones and the `ca` file, read now. */
async function caCertsOf(tls: BackendTls): Promise<string[] | undefined> {
  const caCerts = tls.caCerts ? [...tls.caCerts] : undefined;
  if (tls.caFile === undefined) return caCerts;
  try {
    return [...(caCerts ?? []), await Deno.readTextFile(tls.caFile)];
  } catch (err) {
    throw new UpstreamError(
      "connect",
      `cannot read tls.ca ${tls.caFile}: ${(err as Error).message}`,
    );
  }
}

/** `p`, or a rejection with the signal's reason once it aborts (`p` goes on). */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

function closeQuietly(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch { /* closed */ }
}
