/**
 * Chooses the upstream transport from `limits.upstream_workers` and
 * `limits.upstream_client`: `auto` workers is none with the proxy's own
 * client and one per core but the one the QUIC thread runs on (at least one)
 * with `node:http2` (see {@link autoWorkers}); `0` keeps the HTTP/2 exchanges
 * on the QUIC thread. The client is the proxy's own HTTP/2 client (`spooky`,
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
import type { UpstreamTransport } from "./transport.ts";
import { createWorkerTransport } from "./worker_transport.ts";

/** Which HTTP/2 client carries the exchanges (`limits.upstream_client`). */
export type UpstreamClient = "spooky" | "node";

/**
 * How many workers `auto` means for a client on this machine: none for the
 * proxy's own client, one per core but the QUIC thread's (at least one) for
 * `node:http2`. Measured with `deno task bench` (2 cores, warm, same run):
 * the own client on the QUIC thread spent 110-145 µs of CPU per request at
 * 1, 4 and 16 connections against 140-203 µs with one worker, served as many
 * or more requests per second and had a lower p50 and p99; the worker hop
 * (a message each way per request, buffers transferred) costs more than the
 * exchange it moves. `node:http2` costs about twice as much per exchange, and
 * there a worker still buys throughput.
 */
export function autoWorkers(
  client: UpstreamClient = "spooky",
  cores: number = navigator.hardwareConcurrency ?? 1,
): number {
  return client === "spooky" ? 0 : Math.max(1, cores - 1);
}

/**
 * The in-process transport of a client. `node:http2` is imported only when
 * the `node` client is chosen, at its first use: loading it costs each
 * isolate (the QUIC thread and every upstream worker) about 30 ms of CPU at
 * startup, on the way to the first request, which the default client does
 * not need.
 */
export function createClientTransport(client: UpstreamClient): UpstreamTransport {
  if (client !== "node") return createH2Transport();
  return lazyTransport(() => import("./http2_transport.ts").then((m) => m.createHttp2Transport()));
}

/** A transport created on first use by `load` (calls made meanwhile wait for it). */
function lazyTransport(load: () => Promise<UpstreamTransport>): UpstreamTransport {
  let loaded: Promise<UpstreamTransport> | undefined;
  return {
    exchange: (req) => (loaded ??= load()).then((t) => t.exchange(req)),
    release: (address) => void loaded?.then((t) => t.release(address)),
    close: () => loaded?.then((t) => t.close()) ?? Promise.resolve(),
  };
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
  const workers = setting === "auto" ? autoWorkers(client) : setting;
  if (workers === 0) return { transport: createClientTransport(client), workers };
  return {
    transport: createWorkerTransport({ workers, workerUrl: upstreamWorkerUrl(client) }),
    workers,
  };
}
