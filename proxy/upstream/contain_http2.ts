/**
 * Containment of `node:http2` errors that escape every listener. Deno 2.9.6's
 * `node:http2` destroys a session on a peer's protocol violation and emits
 * the error on each of the session's streams; a stream nobody listens to
 * (a pushed stream, for one) turns that into an uncaught exception, which
 * kills the isolate: the whole proxy with `limits.upstream_workers: 0`, the
 * upstream worker otherwise.
 *
 * The transport listens on every stream it knows, refuses pushes and
 * disables them (SETTINGS_ENABLE_PUSH 0), so the known path is closed. This
 * is the net under it: one global `error` and `unhandledrejection` listener
 * per isolate that recognises an error raised by `node:http2` (its `code` is
 * `ERR_HTTP2_*`, or its stack is inside Deno's `node:http2`), logs it and
 * keeps the isolate alive. Nothing else is lost: the session was already
 * destroyed with that error, so its streams fail on their own paths (as
 * `protocol`: 502, and counted against that backend in passive health).
 * Any other uncaught error is left alone (it is not ours to hide).
 *
 * @example
 * ```ts
 * containNodeHttp2Errors(); // once per isolate; createHttp2Transport() does it
 * ```
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";

const log = getLogger(["proxy", "upstream"]);

const HTTP2_FRAME = /ext:deno_node\/(?:internal\/)?http2/;

/** Whether `err` was raised by Deno's `node:http2` (and so belongs to one of its sessions). */
export function isNodeHttp2Error(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === "string" && code.startsWith("ERR_HTTP2")) return true;
  return typeof err.stack === "string" && HTTP2_FRAME.test(err.stack);
}

let installed = false;
let contained = 0;

/** How many `node:http2` errors the net caught in this isolate. */
export function containedHttp2Errors(): number {
  return contained;
}

/** Installs the listeners (once per isolate; later calls do nothing). */
export function containNodeHttp2Errors(): void {
  if (installed) return;
  installed = true;
  const catchIt = (err: unknown, event: Event) => {
    if (!isNodeHttp2Error(err)) return;
    event.preventDefault();
    contained++;
    log.warn(
      "node:http2 raised an error outside its session's listeners: {error}; contained (the session was destroyed and its requests fail on their own)",
      { error: (err as Error).message },
    );
  };
  globalThis.addEventListener("error", (e) => catchIt((e as ErrorEvent).error, e));
  globalThis.addEventListener(
    "unhandledrejection",
    (e) => catchIt((e as PromiseRejectionEvent).reason, e),
  );
}
