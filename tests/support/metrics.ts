/**
 * Reading the proxy's Prometheus page in tests: {@link scrapeMetrics} fetches
 * `/metrics` from the admin listener, {@link metricValue} reads one series
 * out of it.
 *
 * @example
 * ```ts
 * import { metricValue, scrapeMetrics } from "./metrics.ts";
 *
 * declare const adminPort: number;
 * const text = await scrapeMetrics(adminPort);
 * const open = metricValue(text, 'spooky_tcp_connections_open{listener="admin"}');
 * ```
 *
 * @module
 */

/**
 * The `/metrics` page of the admin listener on `adminPort`, fetched on a
 * connection of its own (one the proxy shed is never reused); throws when it
 * does not answer 200 within 10 s.
 */
export async function scrapeMetrics(adminPort: number): Promise<string> {
  const client = Deno.createHttpClient({});
  try {
    const res = await fetch(`http://127.0.0.1:${adminPort}/metrics`, {
      client,
      signal: AbortSignal.timeout(10_000),
    });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`/metrics answered ${res.status}: ${text}`);
    return text;
  } finally {
    client.close();
  }
}

/**
 * The value of `series` (a metric's name with its labels as the page prints
 * them, e.g. `spooky_tcp_connections_open{listener="admin"}`) in a `/metrics`
 * page, or `undefined` when the page has no such line.
 */
export function metricValue(text: string, series: string): number | undefined {
  const prefix = `${series} `;
  const line = text.split("\n").find((l) => l.startsWith(prefix));
  return line === undefined ? undefined : Number(line.slice(prefix.length));
}
