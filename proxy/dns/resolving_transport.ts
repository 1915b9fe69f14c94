/**
 * The upstream transport for backends configured by name: an exchange to
 * `api.internal:8080` goes to one of the name's endpoints
 * (`BackendResolver.endpointFor`: each in turn), so every endpoint has its
 * own pooled connections in the transport underneath, which keys them by
 * address. Over TLS the name stays the server name (SNI and the
 * certificate check) unless `tls.server_name` says otherwise. A connection
 * that fails (`connect`) marks its endpoint down for a while, so the next
 * requests, and a retry, go to the others. An endpoint that leaves the
 * name's answer is released: its connections take no new request and close
 * once their requests are done.
 *
 * With no name configured an exchange costs one size check; an address
 * used as it is (an IP), one map lookup.
 *
 * @example
 * ```ts
 * import { createDispatchTransport } from "../upstream/dispatch_transport.ts";
 * import { BackendResolver } from "./backend_resolver.ts";
 * import { systemDnsLookup } from "./lookup.ts";
 *
 * const resolver = new BackendResolver({ lookup: systemDnsLookup() });
 * const transport = new ResolvingTransport(createDispatchTransport(), resolver);
 * ```
 *
 * @module
 */

import {
  UpstreamError,
  type UpstreamRequest,
  type UpstreamResponse,
  type UpstreamTransport,
} from "../upstream/transport.ts";
import type { BackendResolver } from "./backend_resolver.ts";

/** See the module doc. */
export class ResolvingTransport implements UpstreamTransport {
  readonly #inner: UpstreamTransport;
  readonly #resolver: BackendResolver;

  /** Sends through `inner`; `resolver`'s removed endpoints are released on `inner`. */
  constructor(inner: UpstreamTransport, resolver: BackendResolver) {
    this.#inner = inner;
    this.#resolver = resolver;
    resolver.onRemoved = (endpoints) => {
      for (const ep of endpoints) inner.release(ep);
    };
  }

  /** Sends `req` to an endpoint of its address when that names a host, else as it is. */
  exchange(req: UpstreamRequest): Promise<UpstreamResponse> {
    if (this.#resolver.size === 0) return this.#inner.exchange(req);
    return this.#toEndpoint(req, (r) => this.#inner.exchange(r));
  }

  /** Opens a WebSocket to an endpoint of its address, as {@link exchange} sends a request. */
  websocket(req: UpstreamRequest): Promise<UpstreamResponse> {
    const inner = this.#inner;
    if (inner.websocket === undefined) {
      return Promise.reject(new UpstreamError("local", "this transport cannot open WebSockets"));
    }
    if (this.#resolver.size === 0) return inner.websocket(req);
    return this.#toEndpoint(req, (r) => inner.websocket!(r));
  }

  /** The connection counters of the transport underneath (by endpoint address), when it keeps them. */
  connections(): ReturnType<NonNullable<UpstreamTransport["connections"]>> {
    return this.#inner.connections?.() ?? [];
  }

  /**
   * `send` of `req` to the next endpoint of its address (a connection that
   * fails marks that endpoint down), or of `req` as it is when its address
   * has no endpoint.
   */
  #toEndpoint(
    req: UpstreamRequest,
    send: (req: UpstreamRequest) => Promise<UpstreamResponse>,
  ): Promise<UpstreamResponse> {
    const endpoint = this.#resolver.endpointFor(req.address);
    if (endpoint === null) return send(req);
    const sent = send(toEndpoint(req, endpoint, this.#resolver.nameOf(req.address)!));
    return sent.catch((err) => {
      if (err instanceof UpstreamError && err.kind === "connect") this.#resolver.markDown(endpoint);
      throw err;
    });
  }

  /**
   * Releases an address no longer configured: a name, its endpoints nothing
   * else uses; an address used as it is, unless a name resolves to it.
   */
  release(address: string): void {
    const name = this.#resolver.nameOf(address);
    if (name !== undefined) {
      for (const ep of this.#resolver.forget(address)) this.#inner.release(ep);
      return;
    }
    if (!this.#resolver.inUse(address)) this.#inner.release(address);
  }

  /** Closes the transport underneath (the resolver is stopped by its owner). */
  close(): Promise<void> {
    return this.#inner.close();
  }
}

/** `req` sent to `endpoint`, the name `host` kept as the TLS server name. */
function toEndpoint(req: UpstreamRequest, endpoint: string, host: string): UpstreamRequest {
  const tls = req.tls === undefined
    ? undefined
    : { ...req.tls, server_name: req.tls.server_name ?? host };
  return { ...req, address: endpoint, tls };
}
