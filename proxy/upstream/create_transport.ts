/**
 * Chooses the upstream transport from `limits.upstream_workers`: `auto` is
 * one worker per core but the one the QUIC thread runs on (at least one);
 * `0` keeps the HTTP/2 exchanges on the QUIC thread.
 *
 * @example
 * ```ts
 * const { transport, workers } = createUpstreamTransport("auto");
 * ```
 *
 * @module
 */

import { createHttp2Transport } from "./http2_transport.ts";
import type { UpstreamTransport } from "./transport.ts";
import { createWorkerTransport } from "./worker_transport.ts";

/** How many workers `auto` means on this machine. */
export function autoWorkers(cores: number = navigator.hardwareConcurrency ?? 1): number {
  return Math.max(1, cores - 1);
}

/** The transport for a `limits.upstream_workers` value, and the worker count it runs. */
export function createUpstreamTransport(
  setting: "auto" | number,
): { transport: UpstreamTransport; workers: number } {
  const workers = setting === "auto" ? autoWorkers() : setting;
  if (workers === 0) return { transport: createHttp2Transport(), workers };
  return { transport: createWorkerTransport({ workers }), workers };
}
