/**
 * Chooses the upstream transport from `limits.upstream_workers` and
 * `limits.upstream_client`: `auto` workers is one per core but the one the
 * QUIC thread runs on (at least one); `0` keeps the HTTP/2 exchanges on the
 * QUIC thread. The client is the proxy's own HTTP/2 client (`spooky`,
 * `h2_transport.ts`) or Deno's `node:http2` (`node`, `http2_transport.ts`).
 *
 * @example
 * ```ts
 * const { transport, workers } = createUpstreamTransport("auto", "spooky");
 * ```
 *
 * @module
 */

import { createH2Transport } from "./h2_transport.ts";
import { createHttp2Transport } from "./http2_transport.ts";
import type { UpstreamTransport } from "./transport.ts";
import { createWorkerTransport } from "./worker_transport.ts";

/** Which HTTP/2 client carries the exchanges (`limits.upstream_client`). */
export type UpstreamClient = "spooky" | "node";

/** How many workers `auto` means on this machine. */
export function autoWorkers(cores: number = navigator.hardwareConcurrency ?? 1): number {
  return Math.max(1, cores - 1);
}

/** The in-process transport of a client. */
export function createClientTransport(client: UpstreamClient): UpstreamTransport {
  return client === "node" ? createHttp2Transport() : createH2Transport();
}

/** The worker entry for a client (the worker reads `client` from its own URL). */
export function upstreamWorkerUrl(client: UpstreamClient): URL {
  return new URL(`./upstream_worker.ts?client=${client}`, import.meta.url);
}

/** The transport for a `limits.upstream_workers` value and client, and the worker count it runs. */
export function createUpstreamTransport(
  setting: "auto" | number,
  client: UpstreamClient = "spooky",
): { transport: UpstreamTransport; workers: number } {
  const workers = setting === "auto" ? autoWorkers() : setting;
  if (workers === 0) return { transport: createClientTransport(client), workers };
  return {
    transport: createWorkerTransport({ workers, workerUrl: upstreamWorkerUrl(client) }),
    workers,
  };
}
