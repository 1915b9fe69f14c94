/**
 * Small helpers of the upstream transport tests: a request to the test
 * backend, reading an answer, expecting a failure, and a memory reading that
 * does not count garbage.
 *
 * @module
 */

import assert from "node:assert/strict";
import v8 from "node:v8";
import vm from "node:vm";
import { UpstreamError, type UpstreamRequest, type UpstreamResponse } from "./transport.ts";

/** One mebibyte. */
export const MiB = 1024 * 1024;
const dec = new TextDecoder();

/** A GET of `/` to the backend (anything with an `address`) with a 10 s timeout, with `over` applied. */
export function request(
  backend: { readonly address: string },
  over: Partial<UpstreamRequest> = {},
): UpstreamRequest {
  return {
    address: backend.address,
    method: "GET",
    path: "/",
    authority: "example.test",
    headers: [],
    body: null,
    timeoutMs: 10_000,
    ...over,
  };
}

/** The response body as text. */
export async function text(res: UpstreamResponse): Promise<string> {
  if (res.body === null) return "";
  if (res.body instanceof Uint8Array) return dec.decode(res.body);
  return await new Response(res.body).text();
}

/** The {@link UpstreamError} `p` rejects with (fails the test if it resolves). */
export async function failure(p: Promise<unknown>): Promise<UpstreamError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof UpstreamError, `not an UpstreamError: ${err}`);
    return err;
  }
  assert.fail("expected the exchange to fail");
}

/** This isolate's garbage collector (V8's `--expose-gc`, switched on at run time). */
const gc: () => void = (() => {
  v8.setFlagsFromString("--expose-gc");
  return vm.runInNewContext("gc");
})();

/** This thread's JS heap plus external buffers after a GC: what it still holds. */
export function jsMiB(): number {
  gc();
  const m = Deno.memoryUsage();
  return (m.heapUsed + m.external) / MiB;
}
