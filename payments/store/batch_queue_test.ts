import assert from "node:assert/strict";
import { setImmediate } from "node:timers";
import { BatchQueue } from "./batch_queue.ts";

/** A queue whose batches take at most `size` requests and finish when told to. */
function harness(opts: { maxInFlight: number; fullAt?: number; size?: number }) {
  const batches: number[][] = [];
  const finish: Array<() => void> = [];
  const q = new BatchQueue<number, number[]>({
    maxInFlight: opts.maxInFlight,
    fullAt: opts.fullAt,
    take: (queue) => [queue.slice(0, opts.size ?? Infinity), queue.slice(opts.size ?? Infinity)],
    run: (batch) => {
      batches.push(batch);
      return new Promise<void>((r) => finish.push(r));
    },
  });
  return { q, batches, finish };
}

/**
 * One turn of the event loop, after the queue's own flush: the queue flushes
 * with `setImmediate`, and immediates run in the order they were set (a
 * `setTimeout(0)` may run before it under load).
 */
const turn = () => new Promise((r) => setImmediate(r));

Deno.test("BatchQueue: requests of one turn share a batch; a full queue goes at once", async () => {
  const h = harness({ maxInFlight: 1, fullAt: 3 });
  h.q.add(1);
  h.q.add(2);
  assert.deepEqual(h.batches, []);
  await turn();
  assert.deepEqual(h.batches, [[1, 2]]);
  for (const n of [3, 4, 5]) h.q.add(n); // full: sent although one batch is in flight
  assert.deepEqual(h.batches, [[1, 2], [3, 4, 5]]);
});

Deno.test("BatchQueue: at most maxInFlight batches; the rest waits, then goes in order", async () => {
  const h = harness({ maxInFlight: 1, size: 2 });
  for (const n of [1, 2, 3, 4, 5]) h.q.add(n);
  await turn();
  assert.deepEqual(h.batches, [[1, 2]]);
  h.finish[0]();
  await turn();
  assert.deepEqual(h.batches, [[1, 2], [3, 4]]);
  h.finish[1]();
  await turn();
  assert.deepEqual(h.batches, [[1, 2], [3, 4], [5]]);
});

Deno.test("BatchQueue: requeued requests go first in the next batch", async () => {
  const h = harness({ maxInFlight: 1 });
  h.q.add(1);
  await turn();
  h.q.add(2);
  h.q.requeue([1]);
  h.finish[0]();
  await turn();
  assert.deepEqual(h.batches, [[1], [1, 2]]);
});
