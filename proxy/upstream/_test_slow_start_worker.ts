/**
 * The upstream worker behind 300 ms of top-level await: Deno dispatches
 * messages to a worker while its module graph still evaluates, so anything
 * sent before the worker proper listens would be dropped.
 *
 * @module
 */

/// <reference lib="deno.worker" />

await new Promise((resolve) => setTimeout(resolve, 300));
await import(new URL("./upstream_worker.ts", import.meta.url).href);
