/**
 * The transport the proxy uses: each exchange goes to the HTTP/2 or the
 * HTTP/1.1 transport by its backend's `protocol` (`h2` when absent), so a
 * pool may mix both. A backend with `protocol: auto` (always with `tls`)
 * follows ALPN: the first exchange to it opens a TLS connection offering
 * `h2` and `http/1.1` and closes it once the backend has picked; the choice
 * is kept for the address until an exchange to it fails `connect` (the
 * backend may have changed), when it is asked again.
 *
 * @module
 */

import {
  type BackendTls,
  backendTlsOf,
  type Connector,
  createConnector,
} from "./backend_connect.ts";
import type { UpstreamConnectionsView } from "../metrics/views.ts";
import { createH1Transport } from "./h1_transport.ts";
import { createH2Transport } from "./h2_transport.ts";
import { UpstreamError, type UpstreamRequest, type UpstreamResponse } from "./transport.ts";
import type { UpstreamTransport } from "./transport.ts";

/** A protocol the proxy speaks to a backend. */
export type WireProtocol = "h2" | "http1";

/** Finds which protocol a TLS backend picks by ALPN (tests inject one). */
export type AlpnProbe = (
  address: string,
  tls: BackendTls,
  timeoutMs: number,
) => Promise<WireProtocol>;

/** The default {@link AlpnProbe}: a TLS handshake offering `h2` then `http/1.1`, then closed. */
export function alpnProbe(connect: Connector = createConnector({
  maxStalledHandshakes: 8,
  alpn: ["h2", "http/1.1"],
})): AlpnProbe {
  return async (address, tls, timeoutMs) => {
    const conn = await connect(address, tls, AbortSignal.timeout(timeoutMs)) as Deno.TlsConn;
    try {
      const hs = await conn.handshake();
      return hs.alpnProtocol === "h2" ? "h2" : "http1";
    } finally {
      try {
        conn.close();
      } catch { /* closed */ }
    }
  };
}

/** Dispatches exchanges by protocol; see the module docs. */
class DispatchTransport implements UpstreamTransport {
  readonly #h2: UpstreamTransport;
  readonly #h1: UpstreamTransport;
  readonly #probe: AlpnProbe;
  readonly #chosen = new Map<string, Promise<WireProtocol>>();

  constructor(h2: UpstreamTransport, h1: UpstreamTransport, probe: AlpnProbe) {
    this.#h2 = h2;
    this.#h1 = h1;
    this.#probe = probe;
  }

  exchange(req: UpstreamRequest): Promise<UpstreamResponse> {
    // The common cases first, with no closure and no extra async frame.
    const protocol = req.protocol ?? "h2";
    if (protocol === "h2") return this.#h2.exchange(req);
    if (protocol === "http1") return this.#h1.exchange(req);
    return this.#dispatch(req, (t) => t.exchange(req));
  }

  /** A WebSocket on the backend's protocol (a transport without WebSockets: `local`). */
  websocket(req: UpstreamRequest): Promise<UpstreamResponse> {
    return this.#dispatch(req, (t) =>
      t.websocket?.(req) ??
        Promise.reject(new UpstreamError("local", "this transport cannot open WebSockets")));
  }

  async #dispatch(
    req: UpstreamRequest,
    send: (t: UpstreamTransport) => Promise<UpstreamResponse>,
  ): Promise<UpstreamResponse> {
    const protocol = req.protocol ?? "h2";
    if (protocol === "h2") return send(this.#h2);
    if (protocol === "http1") return send(this.#h1);
    const key = keyOf(req);
    const wire = await this.#resolve(key, req);
    try {
      return await send(wire === "h2" ? this.#h2 : this.#h1);
    } catch (err) {
      if (err instanceof UpstreamError && err.kind === "connect") this.#chosen.delete(key);
      throw err;
    }
  }

  /** The protocol the backend picked by ALPN (asked once per address and TLS setting). */
  async #resolve(key: string, req: UpstreamRequest): Promise<WireProtocol> {
    let chosen = this.#chosen.get(key);
    if (chosen === undefined) {
      chosen = this.#probe(
        req.address,
        backendTlsOf(req.tls ?? {})!,
        req.connectTimeoutMs ?? 10_000,
      );
      this.#chosen.set(key, chosen);
    }
    try {
      return await chosen;
    } catch (err) {
      this.#chosen.delete(key);
      if (err instanceof UpstreamError) throw err;
      throw new UpstreamError(
        "connect",
        `backend ${req.address}: ALPN negotiation failed: ${(err as Error).message}`,
        { cause: err },
      );
    }
  }

  release(address: string): void {
    for (const key of [...this.#chosen.keys()]) {
      if (key.startsWith(`${address} `)) this.#chosen.delete(key);
    }
    this.#h2.release(address);
    this.#h1.release(address);
  }

  connections(): UpstreamConnectionsView[] {
    return [...(this.#h2.connections?.() ?? []), ...(this.#h1.connections?.() ?? [])];
  }

  async close(): Promise<void> {
    this.#chosen.clear();
    await Promise.all([this.#h2.close(), this.#h1.close()]);
  }
}

function keyOf(req: UpstreamRequest): string {
  const t = req.tls;
  return `${req.address} ${t?.ca ?? ""} ${t?.server_name ?? ""} ${
    t?.client_certificate?.fingerprint ?? ""
  }`;
}

/**
 * The transport choosing, per exchange, `h2` or `h1` by the request's
 * `protocol` (`auto`: by ALPN, found with `probe`).
 *
 * @example
 * ```ts
 * import { createH2Transport } from "./h2_transport.ts";
 * import { createH1Transport } from "./h1_transport.ts";
 * const upstream = createDispatchTransport(createH2Transport(), createH1Transport());
 * ```
 */
export function createDispatchTransport(
  h2: UpstreamTransport = createH2Transport(),
  h1: UpstreamTransport = createH1Transport(),
  probe: AlpnProbe = alpnProbe(),
): UpstreamTransport {
  return new DispatchTransport(h2, h1, probe);
}
