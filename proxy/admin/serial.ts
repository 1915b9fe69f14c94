/**
 * Runs of a task that must see the world as it was when it was asked for,
 * one at a time: a reload re-reads the configuration file, so a reload asked
 * for while one is running (which may have read the file before the latest
 * write) gets a run of its own that starts after the current one. Requests
 * made during the same run share that next run.
 *
 * @example
 * ```ts
 * declare function loadAndApply(): Promise<void>;
 * const reload = serialRuns(() => loadAndApply());
 * await Promise.all([reload(), reload(), reload()]); // two runs, not three
 * ```
 *
 * @module
 */

/** A function starting `task` now, or after the run in progress (sharing that next run). */
export function serialRuns<T>(task: () => Promise<T>): () => Promise<T> {
  let running: Promise<T> | null = null;
  let next: Promise<T> | null = null;
  const start = (): Promise<T> => {
    const run = task().finally(() => {
      if (running === run) running = null;
    });
    running = run;
    return run;
  };
  return () => {
    // A run already waiting starts after this request: share it.
    if (next) return next;
    if (!running) return start();
    const after = running.then(() => undefined, () => undefined);
    next = after.then(() => {
      next = null;
      return start();
    });
    return next;
  };
}
