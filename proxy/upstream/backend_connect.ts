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

import type { BackendTlsSetting, ClientCertificate } from "./client_certificate.ts";
import { UpstreamError } from "./transport.ts";

/** TLS towards one backend (`tls` of a backend in the configuration). */
export interface BackendTls {
  /** PEM CA certificates to trust instead of the system's roots. */
  readonly caCerts?: readonly string[];
  /** A PEM file of CA certificates, read at each new session (so a replaced file applies). */
  readonly caFile?: string;
  /** Server name for SNI and certificate checking; default the address's host. */
  readonly serverName?: string;
  /** The client certificate presented to the backend (mutual TLS); absent: none. */
  readonly clientCertificate?: ClientCertificate;
}

/** The connector's TLS of a backend's `tls` setting (absent: h2c). */
export function backendTlsOf(t: BackendTlsSetting | undefined): BackendTls | undefined {
  return t === undefined
    ? undefined
    : { caFile: t.ca, serverName: t.server_name, clientCertificate: t.client_certificate };
}

/**
 * Deno's name for the server name of `Deno.connectTls` when it differs
 * from the address connected to (its own `node:tls` uses it).
 */
const SERVER_NAME = Symbol.for("unstableServerName");

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

  /**
   * TLS with a client certificate: `Deno.startTls` cannot present one, so
   * `Deno.connectTls` makes the TCP connection too. It takes no signal: an
   * attempt given up before it connects is left to end on its own, counted
   * against the address like a stalled handshake, and closed then.
   */
  const connectTlsWithCertificate = async (
    address: string,
    tls: BackendTls,
    client: ClientCertificate,
    caCerts: string[] | undefined,
    offered: readonly string[],
    signal: AbortSignal,
  ): Promise<Deno.TlsConn> => {
    const { hostname, port } = hostPort(address);
    const options = {
      hostname,
      port,
      caCerts,
      alpnProtocols: [...offered],
      cert: client.cert,
      key: client.key,
      // SNI and the certificate check name `serverName`; the connection
      // still goes to the address itself.
      [SERVER_NAME]: tls.serverName ?? hostname,
    };
    const connecting = Deno.connectTls(options);
    try {
      return await untilAborted(connecting, signal);
    } catch (err) {
      if (signal.aborted) abandonConnect(address, connecting);
      throw err;
    }
  };

  /** Counts one attempt given up against `address`; the function returned uncounts it. */
  const hold = (address: string): () => void => {
    stalled.set(address, (stalled.get(address) ?? 0) + 1);
    return () => {
      const n = (stalled.get(address) ?? 1) - 1;
      if (n === 0) stalled.delete(address);
      else stalled.set(address, n);
    };
  };

  /** Counts an unfinished `connectTls` against its address until it ends, then closes it. */
  const abandonConnect = (address: string, connecting: Promise<Deno.TlsConn>) => {
    const release = hold(address);
    connecting.then((conn) => {
      release();
      closeQuietly(conn);
    }, release);
  };

  /** Leaves a handshake given up to end on its own, counted until it does, then closes it. */
  const abandon = (address: string, conn: Deno.TlsConn, handshake: Promise<unknown>) => {
    const release = hold(address);
    const done = () => {
      release();
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
    const conn = tls.clientCertificate === undefined
      ? await startTls(hostname, port, tls, caCerts, alpn, signal)
      : await connectTlsWithCertificate(address, tls, tls.clientCertificate, caCerts, alpn, signal);
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

/**
 * TCP to the address itself, then TLS naming `serverName` (SNI and the
 * certificate check), so a server name never changes where we connect.
 */
async function startTls(
  hostname: string,
  port: number,
  tls: BackendTls,
  caCerts: string[] | undefined,
  offered: readonly string[],
  signal: AbortSignal,
): Promise<Deno.TlsConn> {
  const tcp = await Deno.connect({ hostname, port, signal });
  tcp.setNoDelay(true);
  return await Deno.startTls(tcp, {
    hostname: tls.serverName ?? hostname,
    caCerts,
    alpnProtocols: [...offered],
  });
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
