/**
 * The `Host` a backend's health probes send: its own `health_check.host`,
 * else its pool's `headers.request.set.host` (a probe must ask for what
 * real requests ask for, or it passes while they fail), else none (the
 * checker then names the backend's address).
 *
 * @example
 * ```ts
 * import type { Config } from "../config/mod.ts";
 * declare const config: Config;
 *
 * const backends = backendsWithProbeHost(config.upstream); // for `new HealthChecker({ backends, ... })`
 * ```
 *
 * @module
 */

import type { BackendConfig, UpstreamConfig } from "../config/types.ts";
import type { UpstreamTransport } from "../upstream/transport.ts";
import type { ProbeExchange } from "./health_checker.ts";

/** Every backend of every pool, each `health_check` given the `host` its probes send. */
export function backendsWithProbeHost(
  upstream: Readonly<Record<string, UpstreamConfig>>,
): BackendConfig[] {
  const out: BackendConfig[] = [];
  for (const pool of Object.values(upstream)) {
    const poolHost = pool.headers?.request?.set.host;
    for (const b of pool.backends) {
      const hc = b.health_check;
      const inherits = hc !== undefined && hc.host === undefined && poolHost !== undefined;
      out.push(inherits ? { ...b, health_check: { ...hc, host: poolHost } } : b);
    }
  }
  return out;
}

/**
 * Probes over the proxy's own upstream client (`transport`), for backends
 * over TLS with a probe host and for backends not spoken to over HTTP/2
 * (`protocol: http1` or `auto`): the probe goes out as real requests do (the
 * same protocol, SNI and certificate check), with the host as `:authority`.
 */
export function probeExchangeOf(transport: UpstreamTransport): ProbeExchange {
  return async (probe) => {
    const res = await transport.exchange({
      address: probe.address,
      tls: probe.tls,
      protocol: probe.protocol,
      method: probe.method,
      path: probe.path,
      authority: probe.authority,
      // The authority goes once, as each protocol sends it (never a `host` field too).
      headers: [["user-agent", probe.userAgent]],
      body: null,
      timeoutMs: probe.timeoutMs,
      connectTimeoutMs: probe.timeoutMs,
      signal: probe.signal,
    });
    if (res.body instanceof ReadableStream) res.body.cancel().catch(() => {});
    return res.status;
  };
}
