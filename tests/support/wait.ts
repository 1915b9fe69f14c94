/**
 * Bounded waits for tests and benchmarks: {@link sleep} for a pause, and
 * {@link withTimeout} for a wait that fails, naming what it waited for,
 * instead of hanging the run.
 *
 * @example
 * ```ts
 * import { sleep, withTimeout } from "./wait.ts";
 *
 * await sleep(10);
 * const answer = await withTimeout(Promise.resolve(42), 1000, "the answer");
 * ```
 *
 * @module
 */

/** Resolves after `ms`. */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * Waits until `cond` holds, polling every 50 ms for up to 10 s; returns
 * either way (the caller's assertions say what was missing).
 */
export async function pollUntil(cond: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200 && !(await cond()); i++) await sleep(50);
}

/**
 * How many ms passed until `cond` held (polled every 25 ms), or -1 when it
 * did not within `ms`.
 */
export async function msUntil(
  cond: () => boolean | Promise<boolean>,
  ms: number,
): Promise<number> {
  const t0 = performance.now();
  while (performance.now() - t0 < ms) {
    if (await cond()) return performance.now() - t0;
    await sleep(25);
  }
  return -1;
}

/**
 * `p`, or an error naming `what` once `ms` have passed first. The timer
 * never outlives the race; `p` itself is not cancelled.
 */
export async function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what}: no result within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
