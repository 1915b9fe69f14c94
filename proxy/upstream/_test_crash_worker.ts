/**
 * The upstream worker, plus a way to kill it for tests: a request for
 * `/__crash` makes this worker throw an uncaught error shortly after the
 * request went out to the backend.
 *
 * @module
 */

/// <reference lib="deno.worker" />

import "./upstream_worker.ts";

self.addEventListener("message", (e: MessageEvent<Array<{ t: string; path?: string }>>) => {
  for (const m of e.data) {
    if (m.t === "req" && m.path === "/__crash") {
      setTimeout(() => {
        throw new Error("test crash");
      }, 50);
    }
  }
});
