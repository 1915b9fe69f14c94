/**
 * V8 garbage collections on demand, for the QUIC transport: a full one now,
 * or a regular one requested for soon.
 *
 * Each accepted QUIC connection is a small JavaScript object that owns the
 * runtime's native connection state (about 40 KB, measured on Deno 2.9.6),
 * and that state is freed only when V8 collects the object. V8 does not see
 * the native memory, so when connections come and go without JavaScript
 * garbage of their own (a flood of spoofed Initials: accepted, shed, never
 * served) no major collection comes, and the process grows by that much per
 * Initial: 1.4 GB after 30,000 spoofed Initials in 30 s, measured. The
 * transport therefore asks for a collection after many closed connections.
 *
 * `node:v8` `setFlagsFromString("--expose-gc")` makes V8 install `gc()` in
 * contexts created afterwards; `node:vm` creates one and hands the function
 * out. The flag changes nothing else. That `gc()` is V8's low-memory
 * collection (two compacting mark-compacts, measured on Deno 2.9.6: 150-215
 * ms of the main thread at a 60 MB heap, and the pages it gives back are
 * faulted in again by the next churn), so during a churn the transport asks
 * for a regular one instead ({@link requestMajorGc}: incremental, marked
 * mostly on V8's worker threads, 15-35 ms of the main thread measured).
 *
 * @module
 */

import v8 from "node:v8";
import vm from "node:vm";

let cached: (() => void) | null | undefined;

/**
 * A function that runs a full garbage collection, or `undefined` when the
 * runtime does not offer one.
 *
 * @example
 * ```ts
 * fullGc()?.();
 * ```
 */
export function fullGc(): (() => void) | undefined {
  if (cached === undefined) {
    try {
      v8.setFlagsFromString("--expose-gc");
      const gc: unknown = vm.runInNewContext("gc");
      cached = typeof gc === "function" ? () => (gc as () => void)() : null;
    } catch {
      cached = null;
    }
  }
  return cached ?? undefined;
}

/** The smallest and largest ArrayBuffer {@link requestMajorGc} allocates. */
const BALLAST_MIN = 256 * 2 ** 20;
const BALLAST_MAX = 2 * 2 ** 30;

/** Where the ballast is held for the moment of its allocation (never read). */
const sink: { ballast?: ArrayBuffer } = {};

/**
 * Asks V8 to start a regular major collection now; it runs incrementally
 * and concurrently, and completes shortly after this returns. V8 counts an
 * ArrayBuffer's memory as external memory in the size it compares with its
 * global allocation limit, so one larger than what is left under that limit
 * (eight times the heap, 256 MiB at least) makes it start marking at once.
 * The buffer's pages are never touched (a fresh mapping: it adds no resident
 * memory) and it is freed by the collection it asked for. Nothing happens
 * when the address space refuses the buffer: a caller that must be sure
 * checks that objects were collected (`ChurnCollector` does).
 *
 * @example
 * ```ts
 * requestMajorGc();
 * ```
 */
export function requestMajorGc(): void {
  const size = Math.min(BALLAST_MAX, Math.max(BALLAST_MIN, 8 * Deno.memoryUsage().heapTotal));
  try {
    sink.ballast = new ArrayBuffer(size);
  } catch {
    // no address space for it: no collection is requested
  }
  sink.ballast = undefined;
}
