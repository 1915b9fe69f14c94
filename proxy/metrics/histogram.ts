/**
 * A cumulative histogram with fixed upper bounds, as Prometheus expects.
 *
 * @module
 */

/** Default latency buckets in seconds (1 ms to 30 s). */
export const LATENCY_BUCKETS_S: readonly number[] = [
  0.001,
  0.0025,
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  5,
  10,
  30,
];

/** A point-in-time copy of a histogram. */
export interface HistogramSnapshot {
  /** Upper bounds and cumulative counts, `+Inf` last. */
  buckets: Array<[le: number, count: number]>;
  /** Sum of all observed values. */
  sum: number;
  /** Number of observations. */
  count: number;
}

/**
 * Counts observations into buckets.
 *
 * @example
 * ```ts
 * const h = new Histogram([0.1, 1]);
 * h.observe(0.05);
 * h.snapshot().buckets; // [[0.1, 1], [1, 1], [Infinity, 1]]
 * ```
 */
export class Histogram {
  readonly #bounds: readonly number[];
  readonly #counts: Float64Array;
  #sum = 0;
  #count = 0;

  /** Creates an empty histogram over `bounds`, the bucket upper bounds (any order; `+Inf` is implied). */
  constructor(bounds: readonly number[] = LATENCY_BUCKETS_S) {
    this.#bounds = [...bounds].sort((a, b) => a - b);
    this.#counts = new Float64Array(this.#bounds.length);
  }

  /** Records one value. */
  observe(value: number): void {
    this.#sum += value;
    this.#count++;
    const b = this.#bounds;
    for (let i = 0; i < b.length; i++) {
      if (value <= b[i]) {
        this.#counts[i]++;
        return;
      }
    }
  }

  /** Cumulative buckets, sum and count. */
  snapshot(): HistogramSnapshot {
    const buckets: Array<[number, number]> = [];
    let acc = 0;
    for (let i = 0; i < this.#bounds.length; i++) {
      acc += this.#counts[i];
      buckets.push([this.#bounds[i], acc]);
    }
    buckets.push([Infinity, this.#count]);
    return { buckets, sum: this.#sum, count: this.#count };
  }
}
