/**
 * The scheduling the store's batchers share ({@link CommitBatcher},
 * {@link ReadBatcher}, {@link ViewCache}): requests queue up and go out in
 * batches, once per turn of the event loop (so requests that arrived together
 * share a batch) or at once when the queue holds a full batch, with at most
 * `maxInFlight` batches outstanding; when one finishes, the next goes. What a
 * batch is and how it runs is the batcher's business.
 *
 * @example
 * ```ts
 * const q = new BatchQueue<number, number[]>({
 *   maxInFlight: 1,
 *   take: (queue) => [queue, []],
 *   run: async (batch) => console.log(batch),
 * });
 * q.add(1);
 * q.add(2); // both go out together
 * ```
 *
 * @module
 */
import { setImmediate } from "node:timers";

/** How a {@link BatchQueue} forms and runs batches. */
export interface BatchQueueOptions<P, B> {
  /** Batches outstanding at once before the queue waits. */
  maxInFlight: number;
  /** Queue length that sends a batch at once instead of at the end of the turn; default never. */
  fullAt?: number;
  /** Split the (non-empty) queue into the next batch and what stays queued, in order. */
  take: (queue: P[]) => [batch: B, rest: P[]];
  /** Run one batch; settles when its requests are settled. */
  run: (batch: B) => Promise<void>;
}

/** A queue of requests sent in batches (see the module documentation). */
export class BatchQueue<P, B> {
  readonly #opts: BatchQueueOptions<P, B>;
  readonly #maxInFlight: number;
  readonly #fullAt: number;
  #queue: P[] = [];
  #inFlight = 0;
  #scheduled = false;
  readonly #flush = () => {
    this.#scheduled = false;
    this.#pump();
  };

  /** A queue batching as `opts` says. */
  constructor(opts: BatchQueueOptions<P, B>) {
    this.#opts = opts;
    this.#maxInFlight = Math.max(1, opts.maxInFlight);
    this.#fullAt = opts.fullAt ?? Infinity;
  }

  /** Queue a request. */
  add(request: P): void {
    this.#queue.push(request);
    if (this.#queue.length >= this.#fullAt) this.#send();
    else if (this.#inFlight < this.#maxInFlight && !this.#scheduled) {
      // Go once the requests made in this turn of the event loop have joined.
      this.#scheduled = true;
      setImmediate(this.#flush);
    }
    // Busy: a batch in flight sends the next one when it finishes.
  }

  /** Put requests back at the head of the queue (sent when a batch in flight finishes). */
  requeue(requests: P[]): void {
    this.#queue = [...requests, ...this.#queue];
  }

  #pump(): void {
    while (this.#queue.length > 0 && this.#inFlight < this.#maxInFlight) this.#send();
  }

  #send(): void {
    if (this.#queue.length === 0) return;
    const [batch, rest] = this.#opts.take(this.#queue);
    this.#queue = rest;
    this.#inFlight++;
    this.#opts.run(batch).finally(() => {
      this.#inFlight--;
      this.#pump();
    });
  }
}
