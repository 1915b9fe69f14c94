/**
 * The Worker of `bench/floor.ts --worker`: the first message is the backend
 * URL; every later one is a request id, answered with `[id, body]` where the
 * body's buffer is transferred (or `[id, message]` when the fetch failed).
 * One pooled h2c client for all requests.
 *
 * @module
 */

/// <reference lib="deno.worker" />

const client = Deno.createHttpClient({ http1: false, http2: true });
let url = "";

self.onmessage = (e: MessageEvent<string | number>) => {
  if (typeof e.data === "string") {
    url = e.data;
    return;
  }
  const id = e.data;
  fetch(url, { client })
    .then((res) => res.arrayBuffer())
    .then(
      (body) => self.postMessage([id, body], [body]),
      (err) => self.postMessage([id, String(err)]),
    );
};
