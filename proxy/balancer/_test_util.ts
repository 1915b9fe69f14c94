/**
 * Helpers for the balancer tests (not part of the public surface).
 *
 * @module
 */

import type { BackendRef, BalanceRequest } from "./types.ts";

/** Deterministic PRNG (mulberry32) giving numbers in [0, 1): the codec tests' one. */
export { rng as seededRandom } from "../h3/_test_util.ts";

/** A request with the given path and headers (names matched case-insensitively). */
export function request(path: string, headers: Record<string, string> = {}): BalanceRequest {
  const map = new Map(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  return { path, header: (name) => map.get(name.toLowerCase()) ?? null };
}

/** Backends `ids[i]` with `weights[i]`. */
export function backends(ids: readonly string[], weights: readonly number[]): BackendRef[] {
  return ids.map((id, i) => ({ id, address: `127.0.0.${i + 1}:8080`, weight: weights[i] }));
}
