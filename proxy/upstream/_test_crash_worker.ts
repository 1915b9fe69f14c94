/**
 * The upstream worker, plus ways to hurt it for tests: a request for
 * `/__crash` makes this worker throw an uncaught error shortly after the
 * request went out to the backend (the worker dies); `/__http2_error` throws
 * an uncaught error shaped like the ones Deno's `node:http2` raises outside
 * a session's listeners (`code: ERR_HTTP2_ERROR`), which the worker must
 * contain and survive when it runs `node:http2` (`?client=node`);
 * `/__close` ends the worker without an `error` event (`self.close()`) and
 * `/__wedge` blocks it for 6 s: both leave the main thread nothing
 * but silence.
 *
 * @module
 */

/// <reference lib="deno.worker" />

// Registered first: the worker proper may start listening (`ready`) before
// its import below resolves.
self.addEventListener("message", (e: MessageEvent<Array<{ t: string; path?: string }>>) => {
  for (const m of e.data) {
    if (m.t === "req" && m.path === "/__crash") {
      setTimeout(() => {
        throw new Error("test crash");
      }, 50);
    }
    if (m.t === "req" && m.path === "/__close") setTimeout(() => self.close(), 50);
    if (m.t === "req" && m.path === "/__wedge") {
      // Blocks the thread for 6 s without burning a core (a spinning loop
      // would do the same to the event loop, and Deno 2.9.6's terminate()
      // does not stop a thread spinning in JavaScript).
      setTimeout(() => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 6_000), 50);
    }
    if (m.t === "req" && m.path === "/__http2_error") {
      setTimeout(() => {
        throw Object.assign(new Error("Protocol error"), { code: "ERR_HTTP2_ERROR" });
      }, 50);
    }
  }
});

// The worker proper, with this module's own `?client=` (the worker reads its client from its URL).
await import(
  new URL(`./upstream_worker.ts${new URL(import.meta.url).search}`, import.meta.url).href
);
