/**
 * The proxy's TCP listeners, each on the same connection-limited server as
 * the payments API (`shared/serve_connections.ts`): a cap on open
 * connections (a newcomer at the cap sheds the oldest connection without a
 * request in flight, never one serving a request), a header timeout (TLS
 * handshake included), an idle timeout, and an accept loop that backs off
 * when the process is out of descriptors instead of dying.
 *
 * - the TCP fallback: HTTPS (h2 and HTTP/1.1 by ALPN) on the HTTP/3 port
 *   number; a client that never sends a ClientHello, or completes TLS and
 *   sends nothing, is closed at `limits.tcp_header_timeout_ms`; a renewed
 *   certificate serves new connections after a reload. Its TLS is served by
 *   a loopback listener it relays to; a connection made to that listener by
 *   another local process is refused unserved and counted (as open, and
 *   against `limits.tcp_max_connections`, until Deno can close it);
 * - the admin listener: HTTP/1.1 and h2c.
 *
 * A listener that cannot be bound is one {@link ListenerStartError} naming the
 * listener, the address and the configuration keys.
 *
 * @example
 * ```ts
 * declare const handler: Deno.ServeHandler<Deno.NetAddr>;
 * declare const cert: string;
 * declare const key: string;
 * declare const renewedCert: string;
 * declare const renewedKey: string;
 *
 * const fallback = startTcpFallback({ hostname: "0.0.0.0", port: 9889, tls: { cert, key },
 *   handler, limits: { maxConnections: 1024, headerTimeoutMs: 10_000, idleTimeoutMs: 60_000 } });
 * fallback.setCertificate(renewedCert, renewedKey);
 * ```
 *
 * @module
 */

import {
  type ConnectionLimits,
  type ConnectionServer,
  serveConnections,
  serveTlsConnections,
  type TlsConnectionServer,
  type TlsPair,
} from "../../shared/serve_connections.ts";
import type { TakeOver } from "../../shared/connection_takeover.ts";

/** A listener that could not be started, named for the operator. */
export class ListenerStartError extends Error {
  override name = "ListenerStartError";
  /**
   * @param listener what it is, e.g. `TCP fallback`
   * @param address `host:port` it was to bind
   * @param keys the configuration keys that set the address
   */
  constructor(
    readonly listener: string,
    readonly address: string,
    readonly keys: string,
    reason: string,
    options?: ErrorOptions,
  ) {
    super(`cannot start the ${listener} on ${address} (${keys}): ${reason}`, options);
  }
}

function hostPort(hostname: string, port: number): string {
  return hostname.includes(":") ? `[${hostname}]:${port}` : `${hostname}:${port}`;
}

/**
 * Maps a bind failure to a {@link ListenerStartError}: one line, no stack,
 * saying what the operating system refused.
 *
 * @example
 * ```ts
 * const err = new Deno.errors.AddrInUse("address already in use");
 * listenerStartError("admin listener", "127.0.0.1", 9890, "admin.address, admin.port", err).message;
 * // "cannot start the admin listener on 127.0.0.1:9890 (admin.address, admin.port): the address is already in use"
 * ```
 */
export function listenerStartError(
  listener: string,
  hostname: string,
  port: number,
  keys: string,
  err: unknown,
): ListenerStartError {
  let reason: string;
  if (err instanceof Deno.errors.AddrInUse) reason = "the address is already in use";
  else if (err instanceof Deno.errors.AddrNotAvailable) reason = "no such local address";
  else if (err instanceof Deno.errors.PermissionDenied) {
    reason = "permission denied (a port below 1024 needs CAP_NET_BIND_SERVICE)";
  } else {
    reason = (err instanceof Error ? err.message : String(err)).split("\n", 1)[0];
  }
  return new ListenerStartError(listener, hostPort(hostname, port), keys, reason, { cause: err });
}

/** Descriptors left for the QUIC socket, files, workers and backends when `auto` sizes the fallback. */
export const DESCRIPTORS_KEPT_FREE = 128;
/** Descriptors one TCP fallback connection holds: the client's and both ends of its loopback relay. */
export const FALLBACK_DESCRIPTORS_PER_CONNECTION = 3;
/** Most TCP fallback connections `auto` allows. */
export const FALLBACK_MAX_CONNECTIONS = 4096;

/**
 * `limits.tcp_max_connections: auto`: as many TCP fallback connections as the
 * soft open-files limit (`Max open files` in `/proc/self/limits`, given as
 * `limitsText`) holds after {@link DESCRIPTORS_KEPT_FREE} and the admin
 * listener's cap, at three descriptors each; at most 4,096, at least 16.
 *
 * @example
 * ```ts
 * fallbackMaxConnections("Max open files  1024  4096  files", 64); // 277
 * ```
 */
export function fallbackMaxConnections(limitsText: string | undefined, adminMax = 0): number {
  const m = limitsText === undefined ? null : /^Max open files\s+(\d+)/m.exec(limitsText);
  if (!m) return FALLBACK_MAX_CONNECTIONS;
  const room = Math.floor(
    (Number(m[1]) - DESCRIPTORS_KEPT_FREE - adminMax) / FALLBACK_DESCRIPTORS_PER_CONNECTION,
  );
  return Math.max(16, Math.min(FALLBACK_MAX_CONNECTIONS, room));
}

/** `/proc/self/limits`, or undefined where there is none. */
export function readProcessLimits(): string | undefined {
  try {
    return Deno.readTextFileSync("/proc/self/limits");
  } catch {
    return undefined;
  }
}

/** Options of {@link startTcpFallback}. */
export interface TcpFallbackListenOptions {
  hostname: string;
  port: number;
  tls: TlsPair;
  handler: Deno.ServeHandler<Deno.NetAddr>;
  limits: ConnectionLimits;
  /**
   * Takes over the HTTP/1.1 connections whose first request it wants (the
   * WebSocket upgrades, `tcp_websocket.ts`); absent: none is.
   */
  takeOver?: TakeOver;
}

/**
 * Starts the TCP fallback.
 *
 * @throws {ListenerStartError} when its address cannot be bound.
 */
export function startTcpFallback(opts: TcpFallbackListenOptions): TlsConnectionServer {
  const keys = "listen.address, listen.port";
  let listener: Deno.TcpListener;
  try {
    listener = Deno.listen({ hostname: opts.hostname, port: opts.port });
  } catch (err) {
    throw listenerStartError("TCP fallback", opts.hostname, opts.port, keys, err);
  }
  try {
    return serveTlsConnections(listener, opts.tls, opts.handler, {
      limits: opts.limits,
      name: "TCP fallback",
      maxConnectionsSetting: "limits.tcp_max_connections",
      logCategory: ["proxy", "tcp_fallback"],
      takeOver: opts.takeOver,
    });
  } catch (err) {
    listener.close();
    throw listenerStartError("TCP fallback", opts.hostname, opts.port, keys, err);
  }
}

/** Options of {@link startAdminListener}. */
export interface AdminListenOptions {
  hostname: string;
  port: number;
  handler: Deno.ServeHandler<Deno.NetAddr>;
  limits: ConnectionLimits;
}

/**
 * Starts the admin listener (HTTP/1.1 and h2c).
 *
 * @throws {ListenerStartError} when its address cannot be bound.
 */
export function startAdminListener(opts: AdminListenOptions): ConnectionServer {
  const keys = "admin.address, admin.port";
  let listener: Deno.TcpListener;
  try {
    listener = Deno.listen({ hostname: opts.hostname, port: opts.port });
  } catch (err) {
    throw listenerStartError("admin listener", opts.hostname, opts.port, keys, err);
  }
  try {
    return serveConnections(listener, opts.handler, {
      limits: opts.limits,
      name: "admin listener",
      maxConnectionsSetting: "admin.max_connections",
      logCategory: ["proxy", "admin"],
    });
  } catch (err) {
    listener.close();
    throw listenerStartError("admin listener", opts.hostname, opts.port, keys, err);
  }
}
